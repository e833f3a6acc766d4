// The parsers' JIT warm-up at start (src/server/hook/parser-warm.ts): it parses patchgate's own
// sources only, gives way while a push is being judged, stops with the server, and a served
// gate runs it once. Its gain is measured by `npm run bench`, not asserted here.

import t from 'tap';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultWarmFiles, runWarm, warmSources } from '../../src/server/hook/parser-warm.js';
import { startGate } from '../helpers/gate.js';

const ROOT = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

t.test('the sources are our own src/: TypeScript and Python, nothing under test/', async (t) => {
  const files = warmSources(ROOT, 1000).map((f) => relative(ROOT, f));
  t.ok(files.length > 100, `${files.length} files`);
  t.ok(files.every((f) => f.startsWith('src/')), 'all under src/');
  t.ok(files.some((f) => f.endsWith('.py')), 'Python among them');
  t.ok(files.includes('src/server/hook/parser-warm.ts'));
  t.equal(warmSources(ROOT, 7).length, 7, 'bounded');
  t.same(warmSources(join(ROOT, 'no-such-folder')), [], 'a package without sources warms nothing');
});

t.test('PATCHGATE_PARSER_WARM_FILES', async (t) => {
  t.equal(defaultWarmFiles({}), 400);
  t.equal(defaultWarmFiles({ PATCHGATE_PARSER_WARM_FILES: '0' }), 0);
  t.equal(defaultWarmFiles({ PATCHGATE_PARSER_WARM_FILES: '25' }), 25);
  t.equal(defaultWarmFiles({ PATCHGATE_PARSER_WARM_FILES: 'many' }), 400, 'not a number: the default');
});

t.test('it waits while a push is judged, and stops when the server stops', async (t) => {
  let busy = true;
  const stop = new AbortController();
  let finished = false;
  const run = runWarm({ signal: stop.signal, busy: () => busy, maxFiles: 30, budgetMs: 120_000, root: ROOT, startDelayMs: 0 }).then((r) => ((finished = true), r));
  await new Promise((r) => setTimeout(r, 300));
  t.notOk(finished, 'nothing is parsed while busy');
  busy = false;
  const r = await run;
  t.equal(r.files, 30, 'then every file');
  t.ok(r.ms > 0);

  const stopped = runWarm({ signal: stop.signal, busy: () => false, maxFiles: 30, root: ROOT, startDelayMs: 0 });
  stop.abort();
  t.ok((await stopped).files <= 1, 'an aborted warm-up stops at once');
  t.equal((await runWarm({ signal: new AbortController().signal, busy: () => false, maxFiles: 0, root: ROOT })).files, 0, '0 files: none');
});

t.test('a served gate warms its parsers once, in the background', async (t) => {
  const gate = await startGate(t);
  t.ok(gate.srv.hooks.parserWarm, 'started with the server');
  const r = await gate.srv.hooks.parserWarm!;
  t.ok(r.files >= 10, `${r.files} files in ${r.ms} ms`);
  const sources = warmSources(ROOT, 400);
  const all = Math.min(400, sources.length + 15 * sources.filter((f) => f.endsWith('.py')).length);
  t.ok(r.files === all || r.ms >= 1500, `it ran until its last file (${all}) or its 1.5 s budget`);
  t.equal(await gate.srv.hooks.parserWarm, r, 'once');
});
