// The web login's failure limiter (issue 48, low item): guesses at the login form trip it even
// when a valid agent token's login is interleaved with them. The form claims no name, so a
// success must not forgive the address's count; the same holds for Basic on the page under a
// claimed name when the token is an agent's. A real gate on port 0, real tokens, real HTTP.

import t from 'tap';
import { startGate } from '../helpers/gate.js';

const LIMITER = { slowAfter: 100, blockAfter: 5, windowMs: 10 * 60_000, stepMs: 0, maxDelayMs: 0 };
const form = { 'Content-Type': 'application/x-www-form-urlencoded' };

t.test('login form: an agent token\'s successful logins between the guesses do not reset the count', async (t) => {
  const gate = await startGate(t, { limiter: LIMITER });
  const agent = gate.token('agent-1', 'agent');
  const human = gate.token('alice', 'human');
  const login = (secret: string) => fetch(`${gate.srv.url}/login`, { method: 'POST', headers: form, body: `token=${encodeURIComponent(secret)}`, redirect: 'manual' });
  const statuses: number[] = [];
  for (let i = 0; i < LIMITER.blockAfter; i++) {
    statuses.push((await login(`pg_guess-${i}`)).status);
    statuses.push((await login(agent)).status);
  }
  const pairs = Array.from({ length: LIMITER.blockAfter - 1 }, () => [401, 403]).flat();
  t.same(statuses, [...pairs, 401, 429], 'each guess fails, each agent login is told agents may not read the log, until the last guess trips the limiter');
  const next = await login('pg_guess-last');
  t.equal(next.status, 429, 'the guesses tripped the limiter all the same');
  t.equal(next.headers.get('retry-after'), '600');
  t.equal((await login(human)).status, 429, 'the address is held for the window, whatever it sends');
  const rows = await gate.srv.sink.query({ kind: 'auth' });
  t.equal(rows.length, LIMITER.blockAfter, 'every failed guess audited; the refused ones never reach the tokens');
});

t.test('Basic on the page: an agent token under the claimed name does not forgive that name\'s guesses', async (t) => {
  const gate = await startGate(t, { limiter: LIMITER });
  const agent = gate.token('agent-1', 'agent');
  const human = gate.token('alice', 'human');
  const basic = (u: string, s: string) => ({ Authorization: `Basic ${Buffer.from(`${u}:${s}`).toString('base64')}` });
  const get = (u: string, s: string) => fetch(`${gate.srv.url}/pushes`, { headers: basic(u, s) });
  const statuses: number[] = [];
  for (let i = 0; i < LIMITER.blockAfter; i++) {
    statuses.push((await get('mallory', `pg_guess-${i}`)).status);
    statuses.push((await get('mallory', agent)).status);
  }
  const pairs = Array.from({ length: LIMITER.blockAfter - 1 }, () => [401, 403]).flat();
  t.same(statuses, [...pairs, 401, 401], 'the agent token after the last guess is refused: the name is blocked');
  t.equal((await get('mallory', 'pg_guess-last')).status, 401, 'refused');
  t.equal((await get('mallory', human)).status, 401, 'the claimed name is blocked: even a good token under it is refused for the window');
  t.equal((await get('alice', human)).status, 200, 'another name at the address is not blocked (the address limit is higher)');
});
