// The spawn helper's own process (started by ./spawner.ts, never by hand). A process start
// costs its parent in proportion to the parent's memory: from the daemon, which holds the
// parsers and the caches (some hundred MB), each `git-receive-pack` cost 7-30 ms of blocked
// event loop; from this small process it costs about 1.5 ms, and blocks nobody else. It only
// starts the programs the daemon that started it asks for over its IPC channel, with sockets
// the daemon passes along (file descriptors over the channel) as their stdio, so no byte of a
// push flows through it. It exits with the daemon.
//
// Plain JavaScript (checked by tsc through JSDoc, `npm run build`), not TypeScript: it must
// start in some 70 ms wherever the daemon runs. From TypeScript source, under the tests'
// loaders, a .ts helper took 2.6 s and 3.4 s of CPU at each gate start, the suite starts well
// over a hundred, and most of them never became ready before their test ended.
// @ts-check

import { spawn } from 'node:child_process';

/**
 * @typedef {{ op: 'spawn', id: number, cmd: string, args: string[], cwd: string, env: Record<string, string> }} SpawnRequest
 * @typedef {{ op: 'stdio', id: number, fd: 0 | 1 }} StdioHandle
 * @typedef {{ op: 'kill', id: number, signal: NodeJS.Signals }} KillRequest
 * @typedef {import('node:net').Socket} Socket
 */

/** @type {Map<number, import('node:child_process').ChildProcess>} */
const children = new Map();
/** The daemon's channel closed: spawn requests still queued are refused. */
let stopping = false;
/** Each spawn's stdin and stdout sockets, sent just before its spawn request (which carries stderr's). @type {Map<number, Array<Socket | undefined>>} */
const stdio = new Map();
/** @param {unknown} msg */
const send = (msg) => {
  if (process.connected && process.send) process.send(msg, undefined, {}, () => {});
};

process.on('message', (/** @type {SpawnRequest | StdioHandle | KillRequest} */ m, /** @type {Socket | undefined} */ handle) => {
  if (m.op === 'kill') {
    children.get(m.id)?.kill(m.signal);
    return;
  }
  if (m.op === 'stdio') {
    if (!handle) return;
    const got = stdio.get(m.id) ?? [];
    got[m.fd] = handle;
    stdio.set(m.id, got);
    return;
  }
  if (m.op !== 'spawn') return;
  const [input, output] = stdio.get(m.id) ?? [];
  stdio.delete(m.id);
  const all = [input, output, handle];
  // After the daemon went away nothing is started: no one would stop it.
  if (stopping || !input || !output || !handle) {
    for (const s of all) s?.destroy();
    send({ op: 'error', id: m.id, message: 'the spawn helper got no pipes for it' });
    return;
  }
  // The sockets are the daemon's: git gets them as its stdin, stdout and stderr, and this
  // process closes its copies in the same tick, before it could read a byte of them.
  /** @type {import('node:child_process').ChildProcess} */
  let child;
  try {
    child = spawn(m.cmd, m.args, { cwd: m.cwd, env: m.env, stdio: [input, output, handle] });
  } catch (err) {
    send({ op: 'error', id: m.id, message: /** @type {Error} */ (err).message });
    return;
  } finally {
    for (const s of all) s?.destroy();
  }
  child.once('error', (err) => send({ op: 'error', id: m.id, message: err.message }));
  if (child.pid === undefined) return; // the 'error' event follows
  children.set(m.id, child);
  send({ op: 'spawned', id: m.id, pid: child.pid });
  child.once('exit', (code, signal) => {
    children.delete(m.id);
    send({ op: 'exit', id: m.id, code, signal });
  });
});

// Messages that come before a listener is attached are lost: the daemon sends nothing until this.
send({ op: 'ready' });

// The daemon went away (its channel closed): end what is still running, then stop.
process.on('disconnect', () => {
  stopping = true;
  for (const c of children.values()) c.kill('SIGTERM');
  setTimeout(() => process.exit(0), 2000).unref();
  if (children.size === 0) process.exit(0);
});
