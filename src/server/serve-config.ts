// Where `patchgate serve` gets its settings, in one place: a flag, else its environment
// variable (PATCHGATE_DATA, PATCHGATE_PORT, ...: what container users expect), else an
// optional JSON config file (--config FILE or PATCHGATE_CONFIG, keys as the flags), else the
// default. Every value is checked here and an error names where the bad value came from.

import { readFileSync } from 'node:fs';
import { ConfigError, errorMessage } from '../errors.js';
import { checkNotifyUrl } from './notify.js';
import { CHECKPOINT_SIGNERS, type CheckpointSigner } from '../audit/checkpoint-lease.js';

type Kind = 'string' | 'port' | 'seconds' | 'seconds0' | 'list';

interface Setting {
  flag: string;
  env: string;
  kind: Kind;
  default?: string | number;
  describe: string;
}

/** Every serve setting. Adding one here adds its flag, variable and config key. */
export const SERVE_SETTINGS = {
  data: { flag: 'data', env: 'PATCHGATE_DATA', kind: 'string', default: './data', describe: 'data folder (repos, audit log, hook endpoint)' },
  port: { flag: 'port', env: 'PATCHGATE_PORT', kind: 'port', default: 7005, describe: 'TCP port (0: any free port)' },
  host: { flag: 'host', env: 'PATCHGATE_HOST', kind: 'string', default: '127.0.0.1', describe: 'address to bind' },
  tlsCert: { flag: 'tls-cert', env: 'PATCHGATE_TLS_CERT', kind: 'string', describe: 'PEM certificate (with --tls-key) to serve HTTPS' },
  tlsKey: { flag: 'tls-key', env: 'PATCHGATE_TLS_KEY', kind: 'string', describe: 'PEM private key' },
  hookTimeout: { flag: 'hook-timeout', env: 'PATCHGATE_HOOK_TIMEOUT', kind: 'seconds', default: 30, describe: 'seconds the policy may take per push before it is refused' },
  metricsPort: { flag: 'metrics-port', env: 'PATCHGATE_METRICS_PORT', kind: 'port', describe: 'also serve GET /metrics without a token on this port (bound to --metrics-host)' },
  metricsHost: { flag: 'metrics-host', env: 'PATCHGATE_METRICS_HOST', kind: 'string', default: '127.0.0.1', describe: 'address of the --metrics-port listener' },
  audit: { flag: 'audit', env: 'PATCHGATE_AUDIT_URL', kind: 'string', describe: 'audit log: sqlite:PATH or postgres://… (default <data>/patchgate.db)' },
  checkpointEvery: { flag: 'checkpoint-every', env: 'PATCHGATE_CHECKPOINT_EVERY', kind: 'seconds0', default: 3600, describe: 'seconds between signed audit checkpoints (0: off)' },
  checkpointPublish: { flag: 'checkpoint-publish', env: 'PATCHGATE_CHECKPOINT_PUBLISH', kind: 'list', describe: 'git:REPO or file:PATH to publish checkpoints to (repeatable; comma-separated in the variable)' },
  checkpointSigner: { flag: 'checkpoint-signer', env: 'PATCHGATE_CHECKPOINT_SIGNER', kind: 'string', default: 'lease', describe: 'on a shared PostgreSQL log: lease (one node signs at a time, the one holding the log\'s signing lease) or every-node (each node signs with its own key; give each its own anchor)' },
  checkpointCredentialFile: { flag: 'checkpoint-credential-file', env: 'PATCHGATE_CHECKPOINT_CREDENTIAL_FILE', kind: 'string', describe: 'file whose first line is the token (or user:token) for the --checkpoint-publish git URLs (or set PATCHGATE_CHECKPOINT_CREDENTIAL)' },
  notifyUrl: { flag: 'notify-url', env: 'PATCHGATE_NOTIFY_URL', kind: 'string', describe: 'POST a JSON event here for each escalation (git push -o patchgate.escalate=…); 5 s time limit, 3 retries, never holds up a push' },
  publicUrl: { flag: 'public-url', env: 'PATCHGATE_PUBLIC_URL', kind: 'string', describe: 'base URL clients use, e.g. https://git.example.com behind a proxy (printed in refusals; default: the request\'s Host)' },
} as const satisfies Record<string, Setting>;

export type ServeKey = keyof typeof SERVE_SETTINGS;

export interface ServeConfig {
  data: string;
  port: number;
  host: string;
  tlsCert?: string;
  tlsKey?: string;
  hookTimeout: number;
  metricsPort?: number;
  metricsHost: string;
  audit?: string;
  checkpointEvery: number;
  checkpointPublish?: string[];
  checkpointSigner: CheckpointSigner;
  checkpointCredentialFile?: string;
  publicUrl?: string;
  notifyUrl?: string;
  /** Where each value came from: `--port`, `PATCHGATE_PORT`, `config FILE`, `default`. */
  sources: Partial<Record<ServeKey, string>>;
}

function convert(s: Setting, raw: unknown, from: string): string | number | string[] {
  if (s.kind === 'list') {
    const items = (Array.isArray(raw) ? raw : [raw]).flatMap((x) => (typeof x === 'string' ? x.split(',') : [x]));
    if (!items.every((x) => typeof x === 'string' && x.trim() !== '')) throw new ConfigError(from, `expected one or more non-empty strings, got ${JSON.stringify(raw)}`);
    return (items as string[]).map((x) => x.trim());
  }
  if (s.kind === 'string') {
    if (typeof raw !== 'string' || raw === '') throw new ConfigError(from, `expected a non-empty string, got ${JSON.stringify(raw)}`);
    return raw;
  }
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(raw) ? Number(raw) : NaN;
  if (s.kind === 'port' && !(Number.isInteger(n) && n >= 0 && n <= 65535)) throw new ConfigError(from, `not a port number (0-65535): ${JSON.stringify(raw)}`);
  if (s.kind === 'seconds0' && !(Number.isFinite(n) && n >= 0)) throw new ConfigError(from, `not a number of seconds (0 or more): ${JSON.stringify(raw)}`);
  if (s.kind === 'seconds' && !(Number.isFinite(n) && n > 0)) throw new ConfigError(from, `not a positive number of seconds: ${JSON.stringify(raw)}`);
  return n;
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`config ${path}`, `cannot read: ${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}`, { cause: err });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`config ${path}`, `not JSON: ${errorMessage(err)}`, { cause: err });
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`config ${path}`, 'expected a JSON object');
  const known = new Set<string>(Object.values(SERVE_SETTINGS).map((s) => s.flag));
  for (const k of Object.keys(parsed)) if (!known.has(k)) throw new ConfigError(`config ${path}`, `unknown key ${JSON.stringify(k)} (known: ${[...known].join(', ')})`);
  return parsed as Record<string, unknown>;
}

/** Resolve every serve setting: flags (undefined when not given) > environment > config file > default. */
export function resolveServeConfig(flags: Partial<Record<ServeKey, unknown>> & { config?: string }, env: NodeJS.ProcessEnv = process.env): ServeConfig {
  const configPath = flags.config ?? (env.PATCHGATE_CONFIG || undefined);
  const file = configPath ? readConfigFile(configPath) : {};
  const out: Record<string, unknown> = { sources: {} };
  for (const [key, s] of Object.entries(SERVE_SETTINGS) as Array<[ServeKey, Setting]>) {
    let raw: unknown;
    let from: string;
    if (flags[key] !== undefined) [raw, from] = [flags[key], `--${s.flag}`];
    else if (env[s.env] !== undefined && env[s.env] !== '') [raw, from] = [env[s.env], s.env];
    else if (file[s.flag] !== undefined) [raw, from] = [file[s.flag], `config ${configPath}: ${s.flag}`];
    else if (s.default !== undefined) [raw, from] = [s.default, 'default'];
    else continue;
    out[key] = convert(s, raw, from);
    (out.sources as Record<string, string>)[key] = from;
  }
  if (!CHECKPOINT_SIGNERS.includes(out.checkpointSigner as CheckpointSigner)) {
    throw new ConfigError((out.sources as Record<string, string>).checkpointSigner ?? '--checkpoint-signer', `must be ${CHECKPOINT_SIGNERS.join(' or ')}, got ${JSON.stringify(out.checkpointSigner)}`);
  }
  if (typeof out.notifyUrl === 'string') {
    try {
      checkNotifyUrl(out.notifyUrl);
    } catch (err) {
      throw new ConfigError((out.sources as Record<string, string>).notifyUrl ?? '--notify-url', errorMessage(err));
    }
  }
  return out as unknown as ServeConfig;
}
