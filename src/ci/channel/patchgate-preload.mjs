// patchgate's node tripwire. patchgate ci loads it with --import (node:test, whose test
// processes inherit it) or through NODE_OPTIONS (vitest, jest) before the first line of tested
// code. It makes node:assert, node:assert/strict and node:test's exports unpatchable
// (non-configurable accessors whose setters record and refuse), makes Error.prepareStackTrace
// and Error.captureStackTrace non-configurable and recorded, and records reads of process.argv
// and opens of test sources by the project's own modules. A record is one line on stderr,
// `patchgate-tripwire {json}`, written with the fd functions captured here; patchgate's
// reporters and the gate read those lines, and any one of them makes the run red.
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve as resolvePath } from 'node:path';

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
// Worker threads and child processes of a test run get this preload too (issue 46). node 20
// runs no --import preload in a Worker, and a child started with its own environment drops
// NODE_OPTIONS: a Worker's code is started behind an import of this file, and every child's
// environment gets NODE_OPTIONS with it.
const PRELOAD_OPTION = `--import=${JSON.stringify(import.meta.url)}`;

function withPreload(env) {
  const e = { ...(env ?? process.env) };
  if (!String(e.NODE_OPTIONS ?? '').includes(import.meta.url)) e.NODE_OPTIONS = `${e.NODE_OPTIONS ?? ''} ${PRELOAD_OPTION}`.trim();
  return e;
}

function guardChildren() {
  const cp = require('node:child_process');
  const proto = cp.ChildProcess.prototype;
  const spawn = proto.spawn;
  // Every asynchronous child (spawn, fork, exec, execFile) goes through here with its environment as KEY=VALUE pairs.
  proto.spawn = function (options) {
    if (options && Array.isArray(options.envPairs)) {
      const i = options.envPairs.findIndex((p) => typeof p === 'string' && p.startsWith('NODE_OPTIONS='));
      const cur = i >= 0 ? options.envPairs[i].slice('NODE_OPTIONS='.length) : '';
      if (!cur.includes(import.meta.url)) {
        const pair = `NODE_OPTIONS=${`${cur} ${PRELOAD_OPTION}`.trim()}`;
        options.envPairs = i >= 0 ? options.envPairs.map((p, n) => (n === i ? pair : p)) : [...options.envPairs, pair];
      }
    }
    return spawn.call(this, options);
  };
  Object.defineProperty(proto, 'spawn', { configurable: false, writable: false });
  for (const name of ['spawnSync', 'execSync', 'execFileSync']) {
    const orig = cp[name];
    const wrapped = function (...args) {
      const last = args[args.length - 1];
      if (last && typeof last === 'object' && !Array.isArray(last)) args[args.length - 1] = { ...last, env: withPreload(last.env) };
      else args.push({ env: withPreload() });
      return orig.apply(this, args);
    };
    Object.defineProperty(cp, name, { configurable: false, enumerable: true, writable: false, value: wrapped });
  }
}

function guardWorkers() {
  const wt = require('node:worker_threads');
  const Original = wt.Worker;
  const pre = JSON.stringify(import.meta.url);
  class Worker extends Original {
    constructor(what, options = {}) {
      let code;
      if (options.eval) {
        code = `import(${pre}).then(() => { new Function('require', 'module', 'exports', ${JSON.stringify(String(what))})(require, module, exports); })`;
      } else {
        const href = what instanceof URL ? what.href : pathToFileURL(resolvePath(String(what))).href;
        code = `import(${pre}).then(() => import(${JSON.stringify(href)}))`;
      }
      super(code, { ...options, eval: true, env: options.env && typeof options.env === 'object' ? withPreload(options.env) : options.env });
    }
  }
  Object.defineProperty(wt, 'Worker', { configurable: false, enumerable: true, writable: false, value: Worker });
}

// Once per thread: NODE_OPTIONS and --import may both name this file.
const ONCE = Symbol.for('patchgate.preload');
if (!globalThis[ONCE]) {
  Object.defineProperty(globalThis, ONCE, { value: true, configurable: false, enumerable: false });
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
      // The custom-error idiom, `Error.captureStackTrace(this, Ctor)` in an Error subclass, stays
      // green: its stack is a string (prepareStackTrace is guarded). Any other target is a probe.
      if (!inside && !(target instanceof Error)) fire('Error.captureStackTrace', 'called Error.captureStackTrace on an object that is not an Error');
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

  watchOpens(fs, ['readFileSync', 'readFile', 'openSync', 'open', 'createReadStream']);
  watchOpens(fs.promises, ['readFile', 'open']);
  guardChildren();
  guardWorkers();
  syncBuiltinESMExports();
}
