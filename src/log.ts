// The server's structured log: one JSON line per HTTP request and per push decision (pino),
// pretty-printed when stderr is a terminal. It exists so operators can grep and ship the
// gate's logs like any other service's. Secrets never go in: callers pass named fields only,
// and the redact list below is a backstop for a header or token that slips into an object.

import { pino, type Logger, type DestinationStream } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

export interface LogOptions {
  /** `json` (default when stderr is not a terminal) or `pretty`; env PATCHGATE_LOG_FORMAT. */
  format?: 'json' | 'pretty';
  /** pino level (default `info`); env PATCHGATE_LOG_LEVEL. */
  level?: string;
  /** Where lines go (default: stderr, synchronously). Tests pass a stream they read. */
  destination?: DestinationStream | NodeJS.WritableStream;
}

const REDACT = ['authorization', 'headers.authorization', 'req.headers.authorization', 'token', 'secret', 'password', '*.token', '*.secret', '*.password'];

/** https://no-color.org: a NO_COLOR that is set and not empty turns colour off everywhere. */
export function noColor(env: NodeJS.ProcessEnv = process.env): boolean {
  return typeof env.NO_COLOR === 'string' && env.NO_COLOR !== '';
}

export function createLogger(opts: LogOptions = {}): Logger {
  const level = opts.level ?? process.env.PATCHGATE_LOG_LEVEL ?? 'info';
  const envFormat = process.env.PATCHGATE_LOG_FORMAT;
  const format = opts.format ?? (envFormat === 'json' || envFormat === 'pretty' ? envFormat : process.stderr.isTTY ? 'pretty' : 'json');
  const base = { level, base: { service: 'patchgate' }, redact: { paths: REDACT, censor: '[redacted]' }, timestamp: pino.stdTimeFunctions.isoTime };
  if (format === 'pretty') {
    const out = pretty({ destination: (opts.destination as NodeJS.WritableStream | undefined) ?? 2, sync: true, colorize: !opts.destination && !!process.stderr.isTTY && !noColor(), ignore: 'pid,hostname,service' });
    return pino(base, out);
  }
  return pino(base, (opts.destination as DestinationStream | undefined) ?? pino.destination({ dest: 2, sync: true }));
}

/** A logger that writes nothing (tests that do not look at logs, library use). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
