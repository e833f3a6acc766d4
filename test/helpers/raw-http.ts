// A raw HTTP client on a TCP socket, for requests no well-behaved client sends: bodies that
// stop, stall or lie about their length, broken pkt-lines, aborted connections. It reports
// what came back (status line and body) and whether the server closed the connection, and
// gives up after a generous deadline so that a hung server fails the test instead of the run.

import net from 'node:net';

export type Step = Buffer | string | { wait: number } | 'abort' | 'end';

export interface RawResult {
  /** HTTP status, or 0 when no status line came back. */
  status: number;
  /** Everything after the header block (raw, chunked framing included). */
  body: string;
  /** How the exchange ended. */
  ended: 'server-closed' | 'client-aborted' | 'deadline';
}

export function rawRequest(port: number, steps: Step[], deadlineMs = 20_000): Promise<RawResult> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let finished = false;
    const finish = (ended: RawResult['ended']): void => {
      if (finished) return;
      finished = true;
      clearTimeout(deadline);
      sock.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      const split = text.indexOf('\r\n\r\n');
      resolve({ status: m ? Number(m[1]) : 0, body: split >= 0 ? text.slice(split + 4) : '', ended });
    };
    const deadline = setTimeout(() => finish('deadline'), deadlineMs);
    sock.on('data', (c) => chunks.push(c));
    sock.on('error', () => finish('server-closed'));
    sock.on('close', () => finish('server-closed'));
    sock.once('connect', async () => {
      for (const s of steps) {
        if (finished || sock.destroyed) return;
        if (s === 'abort') return finish('client-aborted');
        if (s === 'end') {
          sock.end();
          continue;
        }
        if (typeof s === 'object' && !Buffer.isBuffer(s)) {
          await new Promise((r) => setTimeout(r, s.wait));
          continue;
        }
        sock.write(s);
      }
    });
  });
}

/** Request head for a git POST (or any method), with Basic credentials. */
export function head(method: string, path: string, headers: Record<string, string | number>, secret?: string): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1'];
  if (secret) lines.push(`Authorization: Basic ${Buffer.from(`fuzz:${secret}`).toString('base64')}`);
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return lines.join('\r\n') + '\r\n\r\n';
}

/** One pkt-line. */
export function pkt(payload: string): string {
  return (Buffer.byteLength(payload, 'latin1') + 4).toString(16).padStart(4, '0') + payload;
}

/** A body sent with Transfer-Encoding: chunked, decoded (as latin1 text); a body that is not chunked comes back as it is. */
export function dechunk(body: string): string {
  let out = '';
  let i = 0;
  for (;;) {
    const nl = body.indexOf('\r\n', i);
    if (nl < 0) return out || body;
    const size = parseInt(body.slice(i, nl), 16);
    if (!Number.isFinite(size)) return out || body;
    if (size === 0) return out;
    out += body.slice(nl + 2, nl + 2 + size);
    i = nl + 2 + size + 2;
  }
}

/** The side-band channels of a git result (pkt-lines of 1 = data, 2 = progress and `remote:` text, 3 = error). */
export function sideband(body: string): { data: string; progress: string } {
  let data = '';
  let progress = '';
  for (let i = 0; i + 4 <= body.length;) {
    const len = parseInt(body.slice(i, i + 4), 16);
    if (!Number.isFinite(len)) break;
    if (len === 0) {
      i += 4;
      continue;
    }
    const payload = body.slice(i + 5, i + len);
    if (body[i + 4] === '\x01') data += payload;
    else progress += payload;
    i += len;
  }
  return { data, progress };
}
