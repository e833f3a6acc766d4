// The entry of node's held-out run (issue 46): registers patchgate's module hooks
// (patchgate-holdout-hooks.mjs), which read the held-out sources from stdin in their own
// thread, then imports each held-out test module by its URL under `.patchgate-holdout/`; node's
// test runner runs the tests they register, and patchgate's reporter streams them as for any
// `node FILE` run. The argv names the modules (their paths are printed ids anyway, never their source).
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';

const prefix = pathToFileURL(`${process.cwd()}/.patchgate-holdout/`).href;
register(new URL('./patchgate-holdout-hooks.mjs', import.meta.url), { data: { prefix } });
for (const rel of process.argv.slice(2)) await import(prefix + rel);
