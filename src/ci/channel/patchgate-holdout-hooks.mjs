// patchgate's module hooks for node's held-out tests (issue 46): the held-out sources are never
// files in the sandbox. They arrive on stdin, read here, in node's module-hooks thread (its own
// isolate: nothing in the test process's heap can reach this copy), and are served as the
// modules `file://<sealed tree>/.patchgate-holdout/<path>`, a folder that does not exist on disk.
// Relative imports from them (`../src/calc.mjs`) resolve into the sealed tree as usual.
import { readSync } from 'node:fs';

let files = new Map();

export function initialize(data) {
  const chunks = [];
  for (;;) {
    const b = Buffer.alloc(1 << 16);
    let n;
    try {
      n = readSync(0, b, 0, b.length, null);
    } catch (e) {
      if (e.code === 'EAGAIN') continue;
      if (e.code === 'EOF') break;
      throw e;
    }
    if (!n) break;
    chunks.push(b.subarray(0, n));
  }
  const got = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  files = new Map(Object.entries(got.files ?? {}).map(([rel, src]) => [data.prefix + rel, src]));
}

export async function resolve(specifier, context, next) {
  if (files.size) {
    let url = null;
    try {
      url = new URL(specifier, context.parentURL).href;
    } catch {
      /* a bare specifier */
    }
    if (url && files.has(url)) return { url, format: 'module', shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  const src = files.get(url);
  if (src !== undefined) {
    // Served once: a second import of the same URL is node's cached module, so drop the copy.
    files.delete(url);
    return { format: 'module', source: src, shortCircuit: true };
  }
  return next(url, context);
}
