// patchgate's node tripwire. patchgate ci loads it with --import (node:test, whose test
// processes inherit it) or through NODE_OPTIONS (vitest, jest) before the first line of tested
// code. It makes node:assert, node:assert/strict and node:test's exports unpatchable
// (non-configurable accessors whose setters record and refuse), makes Error.prepareStackTrace
// and Error.captureStackTrace non-configurable and recorded, and records reads of process.argv
// and opens of test sources by the project's own modules. A record is one line on stderr,
// `patchgate-tripwire {json}`, written with the fd functions captured here; patchgate's
// reporters and the gate read those lines, and any one of them makes the run red.
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const fs = require('node:fs');
const writeSync = fs.writeSync;
const realpath = fs.realpathSync;
const root = (() => {
  try {
    return realpath(process.cwd());
  } catch {
    return process.cwd();
  }
})();
const self = fileURLToPath(import.meta.url);
const seen = new Set();
let inside = false;
let userPrepare;

function rel(file) {
  return file.startsWith(root + '/') ? file.slice(root.length + 1) : file;
}

function isTestSource(file) {
  const r = rel(file);
  if (r.startsWith('/')) return false;
  return r.startsWith('.patchgate-holdout/') || /(^|\/)__tests__\//.test(r) || /\.(test|spec)\.[cm]?[jt]sx?$/.test(r);
}

function isProject(file) {
  if (!file || file === self) return false;
  const r = rel(file);
  return !r.startsWith('/') && !isTestSource(file) && !/(^|\/)node_modules\//.test(r);
}

/** The nearest frame that is not node's own nor this file: { file, line } or null. */
function caller() {
  const holder = {};
  inside = true;
  try {
    Error.captureStackTrace(holder, caller);
    const sites = holder.stack;
    if (!Array.isArray(sites)) return null;
    for (const s of sites) {
      let f = s.getFileName?.() ?? null;
      if (!f || f.startsWith('node:')) continue;
      if (f.startsWith('file://')) f = fileURLToPath(f);
      if (f === self) continue;
      return { file: f, line: s.getLineNumber?.() ?? 0 };
    }
    return null;
  } finally {
    inside = false;
  }
}

function fire(event, detail, always = false) {
  const c = caller();
  if (!always && !(c && isProject(c.file))) return;
  const rec = { event, file: c ? rel(c.file) : '', line: c ? c.line : 0, detail };
  const key = `${rec.event}\0${rec.file}\0${rec.line}`;
  if (seen.has(key)) return;
  seen.add(key);
  try {
    writeSync(2, `\npatchgate-tripwire ${JSON.stringify(rec)}\n`);
  } catch {
    /* stderr closed: the run's own end record is then missing too */
  }
}

/** Every own property of `obj` becomes a non-configurable accessor whose setter records and refuses. */
function lock(obj, name) {
  if (!obj || (typeof obj !== 'object' && typeof obj !== 'function')) return;
  for (const key of Reflect.ownKeys(obj)) {
    const d = Object.getOwnPropertyDescriptor(obj, key);
    if (!d || !d.configurable) continue;
    const value = 'value' in d ? d.value : undefined;
    if (!('value' in d)) continue;
    Object.defineProperty(obj, key, {
      configurable: false,
      enumerable: d.enumerable,
      get: () => value,
      set: () => fire('patched', `${name}.${String(key)} was assigned`, true),
    });
  }
  Object.preventExtensions(obj);
}

const assert = require('node:assert');
lock(assert.strict, 'node:assert/strict');
lock(assert, 'node:assert');
try {
  lock(require('node:test'), 'node:test');
} catch {
  /* no node:test here */
}

userPrepare = Error.prepareStackTrace;
Object.defineProperty(Error, 'prepareStackTrace', {
  configurable: false,
  enumerable: false,
  get: () => (inside ? (_e, sites) => sites : userPrepare),
  set: (f) => {
    fire('Error.prepareStackTrace', 'set Error.prepareStackTrace');
    userPrepare = f;
  },
});
const capture = Error.captureStackTrace;
Object.defineProperty(Error, 'captureStackTrace', {
  configurable: false,
  enumerable: false,
  writable: false,
  value: function captureStackTrace(target, ctor) {
    if (!inside) fire('Error.captureStackTrace', 'called Error.captureStackTrace');
    return capture(target, ctor ?? captureStackTrace);
  },
});

const argv = process.argv;
Object.defineProperty(process, 'argv', {
  configurable: false,
  enumerable: true,
  get: () => {
    fire('process.argv', 'read process.argv');
    return argv;
  },
  set: () => fire('patched', 'process.argv was assigned', true),
});

// Opens of test sources by the project's modules: what a test expects is written there.
function watchOpens(obj, names) {
  for (const name of names) {
    const orig = obj[name];
    if (typeof orig !== 'function') continue;
    obj[name] = function (path, ...rest) {
      try {
        const p = typeof path === 'string' ? path : path instanceof URL ? fileURLToPath(path) : null;
        if (p && isTestSource(realpath(p))) fire('open', `opened the test source ${rel(realpath(p))}`);
      } catch {
        /* not a file: the call says so itself */
      }
      return orig.call(this, path, ...rest);
    };
  }
}
watchOpens(fs, ['readFileSync', 'readFile', 'openSync', 'open', 'createReadStream']);
watchOpens(fs.promises, ['readFile', 'open']);
syncBuiltinESMExports();
