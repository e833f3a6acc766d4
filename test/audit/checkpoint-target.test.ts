// How a checkpoint target is read from its spec: where an anchor credential may come from
// (never the command line, where `ps` shows it), what is taken out of a URL before git sees
// it, and which refs may be named. Pure parsing; the git side is in checkpoint-line.test.ts.

import t from 'tap';
import { loadCredential, parseTarget } from '../../src/audit/checkpoint-publish.js';

t.test('a credential in a URL is refused from the command line and taken out of the URL elsewhere', async (t) => {
  for (const url of ['https://user:tok3n@github.com/org/a.git', 'https://tok3n@github.com/org/a.git', 'ssh://git:tok3n@host/a.git']) {
    t.throws(() => parseTarget(`git:${url}`, { from: '--checkpoint-publish' }), /--checkpoint-publish: .*a credential in a URL on the command line shows in `ps`/, url);
    try {
      parseTarget(`git:${url}`, { from: '--publish' });
    } catch (err) {
      t.notMatch((err as Error).message, /tok3n/, 'the refusal does not echo it');
    }
  }
  t.same(parseTarget('git:https://user:tok%3An@github.com/org/a.git', { from: 'PATCHGATE_CHECKPOINT_PUBLISH' }),
    { kind: 'git', repo: 'https://github.com/org/a.git', ref: 'refs/patchgate/audit', cred: { user: 'user', secret: 'tok:n' } });
  t.same(parseTarget('https://tok3n@github.com/org/a.git', { from: 'config c.json: checkpoint-publish' }),
    { kind: 'git', repo: 'https://github.com/org/a.git', ref: 'refs/patchgate/audit', cred: { user: null, secret: 'tok3n' } });
  t.same(parseTarget('ssh://git@host/a.git', { from: '--publish' }), { kind: 'git', repo: 'ssh://git@host/a.git', ref: 'refs/patchgate/audit', cred: null }, 'an ssh user name is no secret');
  const cred = { user: 'bot', secret: 's' };
  t.same(parseTarget('git:https://github.com/org/a.git#refs/heads/patchgate-audit', { cred }),
    { kind: 'git', repo: 'https://github.com/org/a.git', ref: 'refs/heads/patchgate-audit', cred });
  for (const bad of ['refs/heads/a..b', 'heads/x', 'refs/heads/x.lock', 'refs/heads/ x', 'refs/heads/x/']) {
    t.throws(() => parseTarget(`git:/srv/a.git#${bad}`), /is not a ref name/, bad);
  }
  t.same(parseTarget('file:/tmp/cp.jsonl'), { kind: 'file', path: '/tmp/cp.jsonl' });
});

t.test('the credential comes from the file named, else the variable', async (t) => {
  t.same(loadCredential(undefined, { PATCHGATE_CHECKPOINT_CREDENTIAL: 'bot:abc' }), { user: 'bot', secret: 'abc' });
  t.same(loadCredential(undefined, { PATCHGATE_CHECKPOINT_CREDENTIAL: 'abc' }), { user: null, secret: 'abc' });
  t.equal(loadCredential(undefined, {}), null);
  t.throws(() => loadCredential('/nonexistent/cred', {}), /cannot read \/nonexistent\/cred: ENOENT/);
});
