// The spawn helper's own process (started by ./spawner.ts, never by hand). A process start
// costs its parent in proportion to the parent's memory: from the daemon, which holds the
// parsers and the caches (some hundred MB), each `git-receive-pack` cost 7-30 ms of blocked
// event loop; from this small process it costs about 1.5 ms, and blocks nobody else. It only
// starts the programs the daemon that started it asks for over its IPC channel, with sockets
// the daemon passes along (file descriptors over the channel) as their stdio, so no byte of a
// push flows through it. It exits with the daemon.

import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';

interface SpawnRequest {
  op: 'spawn';
  id: number;
  cmd: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
}
interface StdioHandle {
  op: 'stdio';
  id: number;
  fd: 0 | 1;
}
interface KillRequest {
  op: 'kill';
  id: number;
  signal: NodeJS.Signals;
}

const children = new Map<number, ChildProcess>();
/** Each spawn's stdin and stdout sockets, sent just before its spawn request (which carries stderr's). */
const stdio = new Map<number, Array<Socket | undefined>>();
const send = (msg: unknown): void => {
  if (process.connected) process.send!(msg, undefined, {}, () => {});
};

process.on('message', (m: SpawnRequest | StdioHandle | KillRequest, handle?: Socket) => {
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
  if (!input || !output || !handle) {
    for (const s of all) s?.destroy();
    send({ op: 'error', id: m.id, message: 'the spawn helper got no pipes for it' });
    return;
  }
  // The sockets are the daemon's: git gets them as its stdin, stdout and stderr, and this
  // process closes its copies in the same tick, before it could read a byte of them.
  let child: ChildProcess;
  try {
    child = spawn(m.cmd, m.args, { cwd: m.cwd, env: m.env, stdio: [input, output, handle] });
  } catch (err) {
    send({ op: 'error', id: m.id, message: (err as Error).message });
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
  for (const c of children.values()) c.kill('SIGTERM');
  setTimeout(() => process.exit(0), 2000).unref();
  if (children.size === 0) process.exit(0);
});
