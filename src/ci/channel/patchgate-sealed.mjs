// patchgate's runner for sealed expectations (issue 46) in node, run by `patchgate ci` in a
// fresh process inside the sandbox, with the node options of the project's own test command
// (a TypeScript loader such as `--import tsx`). It reads the calls on stdin (module path,
// function, arguments: never an expected value), imports each module from the sealed tree,
// makes the call (a returned promise is awaited), and writes one canonical JSON result per
// call on the gate's pipe (fd 3). The gate compares outside the sandbox. Values JSON cannot
// hold are {"$repr": "..."}: see docs/ci.md, "Sealed expectations".

import { readFileSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { inspect } from 'node:util';

const FD = 3;
// The calls are read before any tested code is imported.
const data = JSON.parse(readFileSync(0, 'utf8'));
const stringify = JSON.stringify;

function emit(rec) {
  const b = Buffer.from(stringify(rec) + '\n');
  let off = 0;
  while (off < b.length) off += writeSync(FD, b, off);
}

/** {"$eval": "expression"} in the arguments: a value JSON cannot write (undefined, NaN, 10n, new Map(...)). */
function lit(v) {
  if (Array.isArray(v)) return v.map(lit);
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === '$eval' && typeof v.$eval === 'string') return (0, eval)(`(${v.$eval})`);
    return Object.fromEntries(keys.map((k) => [k, lit(v[k])]));
  }
  return v;
}

function canon(x, depth = 0) {
  if (depth > 200) throw new RangeError('nested more than 200 deep (a cycle?)');
  if (x === null || typeof x === 'boolean' || typeof x === 'string') return x;
  if (typeof x === 'number') return Number.isFinite(x) ? (Object.is(x, -0) ? 0 : x) : { $repr: String(x) };
  if (typeof x === 'undefined') return { $repr: 'undefined' };
  if (typeof x === 'bigint') return { $repr: `${x}n` };
  if (Array.isArray(x) && Object.getPrototypeOf(x) === Array.prototype) return Array.from(x, (e) => canon(e, depth + 1));
  if (typeof x === 'object') {
    const p = Object.getPrototypeOf(x);
    if (p === Object.prototype || p === null) return Object.fromEntries(Object.keys(x).map((k) => [k, canon(x[k], depth + 1)]));
  }
  return { $repr: inspect(x, { depth: 10, breakLength: Infinity, compact: true }) };
}

function raised(e) {
  const names = [];
  if (e && typeof e === 'object') {
    if (typeof e.name === 'string') names.push(e.name);
    for (let p = Object.getPrototypeOf(e); p; p = Object.getPrototypeOf(p)) {
      const n = p.constructor && typeof p.constructor.name === 'string' ? p.constructor.name : '';
      if (n && n !== 'Object' && !names.includes(n)) names.push(n);
    }
  }
  let message = '';
  try {
    message = e instanceof Error ? String(e.message) : String(e);
  } catch {
    /* an object whose toString throws: no message */
  }
  return { type: names[0] ?? typeof e, mro: names.length ? names : [typeof e], message };
}

for (const c of data.cases) {
  let value;
  try {
    const mod = await import(pathToFileURL(resolve(process.cwd(), c.module)).href);
    let self;
    let fn = mod;
    for (const part of c.function.split('.')) {
      self = fn;
      fn = fn == null ? undefined : fn[part];
    }
    if (typeof fn !== 'function') throw new TypeError(`${c.function} is not a function of ${c.module}`);
    value = fn.apply(self === mod ? undefined : self, lit(c.args));
    if (value && typeof value.then === 'function') value = await value;
  } catch (e) {
    emit({ i: c.i, raised: raised(e) });
    continue;
  }
  try {
    emit({ i: c.i, value: canon(value) });
  } catch (e) {
    emit({ i: c.i, unencodable: `${e && e.name}: ${e && e.message}` });
  }
}
emit({ t: 'end' });
// Timers or handles the tested code left behind do not decide the exit status.
process.exit(0);
