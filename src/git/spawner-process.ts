// The spawn helper's own process (started by ./spawner.ts, never by hand). A process start
// costs its parent in proportion to the parent's memory: from the daemon, which holds the
// parsers and the caches (some hundred MB), each `git-receive-pack` cost 7-30 ms of blocked
// event loop; from this small process it costs about 1.5 ms, and blocks nobody else. It only
// starts the programs it is asked to over its IPC channel and hands their stdio pipes back
// (file descriptors passed over the channel), so no byte of a push flows through it. It runs
// nothing it was not told to run by the daemon that started it, and exits with it.

import { spawn, type ChildProcess } from 'node:child_process';

interface SpawnRequest {
  op: 'spawn';
  id: number;
  cmd: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
}
interface KillRequest {
  op: 'kill';
  id: number;
  signal: NodeJS.Signals;
}

const children = new Map<number, ChildProcess>();
const send = (msg: unknown, handle?: unknown): void => {
  if (!process.connected) return;
  // A handle sent is closed here once it is on its way (keepOpen false): the daemon owns it.
  process.send!(msg, handle as never, { keepOpen: false }, () => {});
};

process.on('message', (m: SpawnRequest | KillRequest) => {
  if (m.op === 'kill') {
    children.get(m.id)?.kill(m.signal);
    return;
  }
  if (m.op !== 'spawn') return;
  let child: ChildProcess;
  try {
    child = spawn(m.cmd, m.args, { cwd: m.cwd, env: m.env, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (err) {
    send({ op: 'error', id: m.id, message: (err as Error).message });
    return;
  }
  child.once('error', (err) => send({ op: 'error', id: m.id, message: err.message }));
  if (child.pid === undefined) return; // the 'error' event follows
  children.set(m.id, child);
  send({ op: 'stdio', id: m.id, fd: 0, pid: child.pid }, child.stdin);
  send({ op: 'stdio', id: m.id, fd: 1 }, child.stdout);
  send({ op: 'stdio', id: m.id, fd: 2 }, child.stderr);
  child.once('exit', (code, signal) => {
    children.delete(m.id);
    send({ op: 'exit', id: m.id, code, signal });
  });
});

// The daemon went away (its channel closed): end what is still running, then stop.
process.on('disconnect', () => {
  for (const c of children.values()) c.kill('SIGTERM');
  setTimeout(() => process.exit(0), 2000).unref();
  if (children.size === 0) process.exit(0);
});
