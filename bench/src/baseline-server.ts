// The benchmark's floor: plain node-git-server over the repositories in one folder, in a
// process of its own like patchgate's `serve`, so both servers start their git processes from
// a small process (a spawn costs more from a big one). Prints "port N" when it listens.
//
//   node bench/dist/baseline-server.js ROOT

import http from 'node:http';
import { join } from 'node:path';
import { Git as GitServer } from 'node-git-server';

const root = process.argv[2];
if (!root) {
  process.stderr.write('usage: baseline-server.js ROOT\n');
  process.exit(2);
}
const gs = new GitServer((d?: string) => join(root, d ?? ''), { autoCreate: false });
// Same as gs.listen(0), but bound to loopback only.
const server = http.createServer((req, res) => gs.handle(req, res));
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`port ${(server.address() as { port: number }).port}\n`);
});
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
