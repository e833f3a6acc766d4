// The start of a smart-HTTP request body, read and checked by us before node-git-server sees
// it. node-git-server looks for a ref command in the FIRST chunk only and waits forever when
// it finds none (a slow body, a split chunk, a ref outside refs/heads|tags, a truncated
// pkt-line), and it buffers the whole body in memory while it waits. So the front reads the
// command section itself (every pkt-line up to the first flush-pkt), refuses what git would
// never send, and hands node-git-server that section as one chunk.
//
// Formats (git's Documentation/gitprotocol-pack.txt, protocol v0/v1 over stateless RPC):
//   receive-pack: *PKT("shallow" SP oid) PKT(old SP new SP ref NUL caps) *PKT(old SP new SP ref) FLUSH
//                 (then push options and the pack, which go to git unread)
//   upload-pack:  PKT("want" SP oid [SP caps]) *PKT(want|shallow|deepen...|filter ...) FLUSH
//                 (then have lines and "done")
//   the probe:    FLUSH and nothing else. git's remote-curl (probe_rpc) sends it before a request
//                 body larger than http.postBuffer (1 MiB by default), which it then streams with
//                 Transfer-Encoding: chunked; it only checks that the answer is HTTP 200.

export type GitService = 'receive-pack' | 'upload-pack';

/** A request body that git would never send; the message says what was wrong. */
export class PktLineError extends Error {
  /** The section grew past the size limit (as opposed to being malformed). */
  readonly tooLarge: boolean;
  constructor(message: string, tooLarge = false) {
    super(message);
    this.name = 'PktLineError';
    this.tooLarge = tooLarge;
  }
}

export interface RefCommand {
  oldId: string;
  newId: string;
  ref: string;
}

export interface CommandSection {
  /** The bytes of the section, flush-pkt included, exactly as received. */
  bytes: Buffer;
  /** receive-pack: the ref commands, in order. */
  commands: RefCommand[];
  /** Capabilities of the first command / first want. */
  caps: string[];
  /** The section is a lone flush-pkt: git's probe request, if nothing follows it. */
  probe?: true;
}

const OID = '(?:[0-9a-f]{40}|[0-9a-f]{64})';
const COMMAND = new RegExp(`^(${OID}) (${OID}) (refs/[^\\x00-\\x20\\x7f~^:?*\\[\\\\]+)$`);
const WANT = new RegExp(`^want ${OID}(?: |$)`);
const UPLOAD_LINE = new RegExp(`^(?:want ${OID}|shallow ${OID}|deepen [0-9]+|deepen-since [0-9]+|deepen-not \\S.*|deepen-relative|filter \\S.*)(?: .*)?$`);
const SHALLOW = new RegExp(`^shallow ${OID}$`);

/** Longest pkt-line git writes (LARGE_PACKET_MAX). */
const MAX_PKT = 65520;

/**
 * Feed bytes as they arrive; `push` returns the finished section once its flush-pkt is in,
 * or null while more is needed. Throws PktLineError at the first byte that cannot be a
 * well-formed request, and when the section grows past `maxBytes`.
 */
export class CommandSectionReader {
  private buf: Buffer = Buffer.alloc(0);
  private pos = 0;
  private readonly lines: string[] = [];

  constructor(private readonly service: GitService, private readonly maxBytes: number) {}

  /** Bytes received so far that belong to the section (or are pending). */
  get received(): number {
    return this.buf.length;
  }

  push(chunk: Buffer): { section: CommandSection; rest: Buffer } | null {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    for (;;) {
      if (this.buf.length - this.pos < 4) break;
      const hex = this.buf.toString('latin1', this.pos, this.pos + 4);
      if (!/^[0-9a-f]{4}$/.test(hex)) throw new PktLineError(`malformed pkt-line length ${JSON.stringify(hex)} at byte ${this.pos}`);
      const len = parseInt(hex, 16);
      if (len === 0) {
        const end = this.pos + 4;
        if (this.lines.length === 0) return { section: { bytes: this.buf.subarray(0, end), commands: [], caps: [], probe: true }, rest: this.buf.subarray(end) };
        const section = this.finish(this.buf.subarray(0, end));
        return { section, rest: this.buf.subarray(end) };
      }
      if (len < 4) throw new PktLineError(`pkt-line ${hex} (delimiter or response-end) is protocol v2, which this server does not speak`);
      if (len > MAX_PKT) throw new PktLineError(`pkt-line of ${len} bytes is longer than git writes (${MAX_PKT})`);
      if (this.buf.length - this.pos < len) break;
      const payload = this.buf.toString('latin1', this.pos + 4, this.pos + len);
      this.pos += len;
      this.check(payload, this.lines.length);
      this.lines.push(payload);
    }
    if (this.buf.length > this.maxBytes) throw new PktLineError(`the command section (ref commands or want lines) is longer than ${this.maxBytes} bytes`, true);
    return null;
  }

  /** Checks each line as it completes, so a bad first line fails before the section ends. */
  private check(payload: string, index: number): void {
    const line = payload.endsWith('\n') ? payload.slice(0, -1) : payload;
    if (index === 0 && line.startsWith('command=')) {
      throw new PktLineError(`protocol v2 request (${JSON.stringify(line.slice(0, 40))}); this server speaks protocol v0 only: retry with git -c protocol.version=0`);
    }
    if (this.service === 'upload-pack') {
      if (index === 0 && !WANT.test(line)) throw new PktLineError(`upload-pack request must start with "want <object id>", got ${JSON.stringify(line.slice(0, 60))}`);
      if (!UPLOAD_LINE.test(line)) throw new PktLineError(`unexpected upload-pack line ${JSON.stringify(line.slice(0, 60))}`);
      return;
    }
    if (line.startsWith('push-cert')) throw new PktLineError('signed pushes (push-cert) are not accepted here; push without --signed');
    if (SHALLOW.test(line)) {
      if (this.lines.some((l) => !l.startsWith('shallow '))) throw new PktLineError('a shallow line after a ref command');
      return;
    }
    const [cmd] = line.split('\0', 1);
    if (!COMMAND.test(cmd!)) throw new PktLineError(`malformed ref command ${JSON.stringify(cmd!.slice(0, 200))}`);
  }

  private finish(bytes: Buffer): CommandSection {
    if (this.service === 'upload-pack') {
      const first = this.lines[0]!.replace(/\n$/, '');
      return { bytes, commands: [], caps: first.split(' ').slice(2) };
    }
    const commandLines = this.lines.map((l) => l.replace(/\n$/, '')).filter((l) => !l.startsWith('shallow '));
    if (commandLines.length === 0) throw new PktLineError('receive-pack request without a ref command');
    const caps = (commandLines[0]!.split('\0')[1] ?? '').split(' ').filter(Boolean);
    const commands = commandLines.map((l) => {
      const m = COMMAND.exec(l.split('\0', 1)[0]!)!;
      return { oldId: m[1]!, newId: m[2]!, ref: m[3]! };
    });
    return { bytes, commands, caps };
  }
}

/** One pkt-line around `payload`. */
export function pkt(payload: string | Buffer): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, '0'), 'latin1'), body]);
}

const FLUSH = Buffer.from('0000', 'latin1');

/**
 * A receive-pack result that refuses every command with `reason`, in the form the client
 * asked for (report-status, optionally inside side-band-64k), so `git push` prints
 * `! [remote rejected] REF (reason)` and the `remote:` lines instead of an HTTP error.
 */
export function receivePackRefusal(section: CommandSection, reason: string, remoteLines: string[]): Buffer {
  const report = Buffer.concat([
    pkt('unpack ok\n'),
    // Ref names were read as latin1 (one char per byte); write them back the same way.
    ...section.commands.map((c) => pkt(Buffer.from(`ng ${c.ref} ${reason.replace(/[^\x20-\x7e]/g, ' ')}\n`, 'latin1'))),
    FLUSH,
  ]);
  const sideband = section.caps.includes('side-band-64k') || section.caps.includes('side-band');
  if (!sideband) return report;
  const max = section.caps.includes('side-band-64k') ? MAX_PKT - 5 : 995;
  const parts: Buffer[] = remoteLines.map((l) => pkt(Buffer.concat([Buffer.from([2]), Buffer.from(`${l}\n`, 'utf8')])));
  for (let i = 0; i < report.length; i += max) parts.push(pkt(Buffer.concat([Buffer.from([1]), report.subarray(i, i + max)])));
  parts.push(FLUSH);
  return Buffer.concat(parts);
}
