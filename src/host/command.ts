// The CLI bodies of `patchgate hook install --host …` and `patchgate daemon --config FILE`
// (src/cli.ts only declares their options).

import { UsageError } from '../errors.js';
import { refuseSecretInArgv } from '../audit/sink.js';
import { loadDaemonConfig } from './config.js';
import { isHost } from './identity.js';
import { installHostHooks } from './install.js';

export async function runHookInstall(args: { host: string; config: string; dirs: string[] }): Promise<string[]> {
  if (!isHost(args.host)) throw new UsageError(`unknown --host ${args.host}: give gitlab, gitea, ghes, gitolite or generic`);
  return installHostHooks(args.host, loadDaemonConfig(args.config), args.dirs);
}

export async function runDaemon(args: { config: string; audit?: string }): Promise<void> {
  refuseSecretInArgv(args.audit, '--audit'); // argv is public (ps); the config file and the variable are not
  const cfg = loadDaemonConfig(args.config);
  const audit = args.audit ?? process.env.PATCHGATE_AUDIT_URL;
  delete process.env.PATCHGATE_AUDIT_URL; // read once: the daemon's children do not inherit it
  if (audit) {
    cfg.audit = audit.startsWith('sqlite:') || /^postgres(ql)?:\/\//.test(audit) ? audit : `sqlite:${audit}`;
    cfg.auditFrom = args.audit !== undefined ? '--audit' : 'PATCHGATE_AUDIT_URL';
  }
  const { startDaemon } = await import('./daemon.js');
  const d = await startDaemon(cfg);
  const say = (l: string) => process.stdout.write(l + '\n');
  // Never the URL's password: only the store's kind and, for SQLite, its file.
  say(`patchgate daemon: hooks of this node answered through ${cfg.data}/hook.endpoint; monitor ${d.monitorUrl} (/healthz, /metrics); audit ${d.auditLog}`);
  let closing = false;
  const stop = (sig: string) => {
    if (closing) return;
    closing = true;
    say(`patchgate daemon: ${sig}: stopping`);
    d.close().then(() => say('patchgate daemon: stopped'), (e) => process.stderr.write(`patchgate daemon: shutdown error: ${e}\n`));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
