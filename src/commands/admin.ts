// The operator's commands on a data folder: `serve`, `repo create`, `token create|list|revoke`,
// `audit` (query), `audit show ID` (the trace of every rule checked), `audit verify` and
// `audit export`. Each opens the data folder's one audit log (./folder-log.ts: `--audit`, else
// PATCHGATE_AUDIT_URL, which must agree with the log the folder records; else the recorded log,
// else `<data>/patchgate.db`), and the tokens in it; a password in `--audit` is refused.

import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { compactRow, type AuditRow, type QueryOptions } from '../audit/store.js';
import { AUDIT_URL_ENV, describeAudit, refuseSecretInArgv, tokensFor, type AuditSink } from '../audit/sink.js';
import type { FolderAudit } from '../audit/location.js';
import type { TokenSource } from '../audit/tokens.js';
import { exportRows } from '../audit/export.js';
import { verifyLog } from '../audit/verify-log.js';
import { describeCut, type Cut } from '../audit/bound.js';
import { UsageError } from '../errors.js';
import { createRepo, ensureRepoConfig, normalizeRepoName, installHooks, markHoldout, resolveRepo } from '../server/repos.js';
import { adminTokenPath } from '../server/admin-token.js';
import type { Role } from '../policy/types.js';
import { withFolderLog } from './folder-log.js';
import type { ServeConfig } from '../server/serve-config.js';
import { stderrProgress, type SlowPhaseOptions } from '../progress.js';
import { verifyWithProgress } from '../audit/verify-progress.js';

/** A person's own token, read from the environment (never argv): who closes an escalation. */
export const PERSON_TOKEN_ENV = 'PATCHGATE_TOKEN';

/** The folder's log (./folder-log.ts), open for `fn`. */
const withSink = <T>(args: { data: string; audit?: string }, fn: (s: AuditSink, where: FolderAudit) => Promise<T> | T, existing = false): Promise<T> => withFolderLog(args, fn, existing);

/** The tokens of the folder's log, open for `fn`. */
async function withTokens<T>(args: { data: string; audit?: string }, fn: (tokens: TokenSource, s: AuditSink) => Promise<T> | T, existing = false): Promise<T> {
  return withSink(args, async (s) => fn(await tokensFor(s), s), existing);
}

export async function runServe(args: ServeConfig): Promise<void> {
  // Only a value from the command line is public; the variable and the config file are not.
  if (args.sources.audit === '--audit') refuseSecretInArgv(args.audit, '--audit');
  const auditUrl = args.audit;
  const auditFrom = args.sources.audit;
  // Read once; git and every other child the gate starts must not inherit the URL (and its password).
  delete process.env[AUDIT_URL_ENV];
  // A cold start (audit log, repositories, the hook daemon, recovery) takes seconds before
  // "serving": one line at once, so a person knows it is under way (issue 49). On stdout with
  // the "serving" line: stderr is the structured log, one JSON object a line when not a terminal.
  process.stdout.write(`patchgate: starting in ${resolve(args.data)}: opening the audit log, checking the repositories and starting the hook daemon ("serving" follows)\n`);
  const { startServer } = await import('../server/app.js');
  const { createLogger } = await import('../log.js');
  const logger = createLogger();
  const srv = await startServer({
    dataDir: args.data, port: args.port, host: args.host, tlsCert: args.tlsCert, tlsKey: args.tlsKey, hookTimeoutMs: args.hookTimeout * 1000,
    logger, metricsPort: args.metricsPort, metricsHost: args.metricsHost,
    checkpointEverySeconds: args.checkpointEvery, checkpointPublish: args.checkpointPublish, checkpointPublishFrom: args.sources.checkpointPublish, checkpointCredentialFile: args.checkpointCredentialFile, checkpointSigner: args.checkpointSigner, auditUrl, ...(auditFrom ? { auditFrom } : {}),
    ...(args.publicUrl ? { publicUrl: args.publicUrl } : {}),
    ...(args.notifyUrl ? { notifyUrl: args.notifyUrl } : {}),
  });
  const say = (l: string) => process.stdout.write(l + '\n');
  say(`patchgate: serving ${resolve(args.data, 'repos')} at ${srv.url} (audit log ${srv.auditLog})`);
  logger.info({ event: 'start', url: srv.url, data: resolve(args.data), metricsPort: srv.metricsPort, sources: args.sources }, 'serving');
  if (srv.metricsPort !== null) say(`patchgate: metrics (no token) at http://${args.metricsHost}:${srv.metricsPort}/metrics`);
  if (srv.adminTokenFile) {
    // The secret itself never goes to the output: logs are kept and read more widely than the data folder.
    say(`patchgate: first start: an admin token was created and written to ${srv.adminTokenFile} (mode 0600).`);
    say('  Read it once, store it somewhere safe, then delete the file.');
    say('  next steps:');
    say(`    patchgate repo create app --data ${args.data}`);
    say(`    patchgate token create agent-1 --role agent --data ${args.data}`);
    say(`    git remote add gate http://agent-1:TOKEN@${srv.url.replace(/^https?:\/\//, '')}/app.git`);
  } else if (existsSync(adminTokenPath(resolve(args.data)))) {
    say(`patchgate: ${adminTokenPath(resolve(args.data))} still holds the first admin token; delete it once the token is stored elsewhere`);
  }
  let closing = false;
  const stop = (sig: string) => {
    if (closing) return;
    closing = true;
    say(`patchgate: ${sig}: finishing in-flight pushes, refusing new ones`);
    srv.close().then(() => say('patchgate: stopped'), (e) => process.stderr.write(`patchgate: shutdown error: ${e}\n`));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

export async function runRepoCreate(args: { data: string; name: string; trusted: string; holdoutOf?: string; audit?: string }): Promise<string[]> {
  if (args.holdoutOf !== undefined && !resolveRepo(resolve(args.data), normalizeRepoName(args.holdoutOf))) throw new UsageError(`--holdout-of: no repository ${args.holdoutOf}`);
  // The log is opened first: a refused --audit, or a log that cannot be reached, refuses before the repository is made.
  return withSink(args, async (s) => {
    const dir = await createRepo(resolve(args.data), args.name, args.trusted);
    if (args.holdoutOf !== undefined) {
      markHoldout(dir, normalizeRepoName(args.holdoutOf));
      await s.appendAdmin({ actor: 'cli', action: 'repo.holdout', subject: normalizeRepoName(args.name), detail: { of: normalizeRepoName(args.holdoutOf!) } });
    }
    await s.appendAdmin({ actor: 'cli', action: 'repo.create', subject: normalizeRepoName(args.name), detail: { dir, trusted: args.trusted } });
    return [`created ${dir} (trusted branch ${args.trusted}, hooks installed, receive.fsckObjects on, packs over 1 GiB refused)`];
  });
}

export async function runRepoHooks(args: { data: string; name: string; audit?: string }): Promise<string[]> {
  const name = normalizeRepoName(args.name);
  const dir = resolveRepo(resolve(args.data), name);
  if (!dir) throw new UsageError(`no repository ${name} under ${resolve(args.data, 'repos')}`);
  return withSink(args, async (s) => {
    const config = await ensureRepoConfig(dir);
    installHooks(dir);
    await s.appendAdmin({ actor: 'cli', action: 'repo.hooks', subject: name, detail: { dir, config } });
    return [`reinstalled patchgate hooks in ${dir}${config.length ? ` and set ${config.join(', ')}` : ''}`];
  });
}

export async function runTokenCreate(args: { data: string; name: string; role: Role; repos?: string; expires?: number; audit?: string; agentClass?: string }): Promise<string[]> {
  return withTokens(args, async (tokens) => {
    const secret = await tokens.create(args.name, args.role, { repos: args.repos, expiresDays: args.expires, actor: 'cli', ...(args.agentClass !== undefined ? { agentClass: args.agentClass } : {}) });
    const cls = args.role === 'agent' && args.agentClass ? `, class ${args.agentClass}` : '';
    return [`token ${args.name} (${args.role}${cls}, repos ${args.repos ?? '*'}${args.expires ? `, expires in ${args.expires} day(s)` : ''}) created; the secret is shown once:`, secret];
  });
}

export async function runTokenList(args: { data: string; json: boolean; audit?: string }): Promise<string[]> {
  return withTokens(args, async (tokens) => (await tokens.list()).map((t) => (args.json ? JSON.stringify(t) : `${t.name}\t${t.role}\t${t.repos}\t${t.status}\tcreated ${t.created}${t.expires ? `\texpires ${t.expires}` : ''}${t.role === 'agent' ? `\tclass ${t.class ?? 'default'}` : ''}`)), true);
}

export async function runTokenRevoke(args: { data: string; name: string; audit?: string }): Promise<string[]> {
  return withTokens(args, async (tokens) => {
    await tokens.revoke(args.name, { actor: 'cli' });
    return [`token ${args.name} revoked`];
  }, true);
}

/** A short object id, or `none` for an absent or all-zero id (a created or deleted ref). */
function idOrNone(id: string | null | undefined, none: string): string {
  return !id || /^0+$/.test(id) ? none : id.slice(0, 12);
}

/** A rule's details as `key=value` pairs, each value cut on its own (never JSON cut mid-string). */
function detailsText(details: unknown): string {
  if (!details || typeof details !== 'object') return '';
  const parts = Object.entries(details as Record<string, unknown>).map(([k, v]) => {
    const text = typeof v === 'string' ? v : JSON.stringify(v) ?? String(v);
    return `${k}=${text.length > 60 ? `${text.slice(0, 57)}...` : text}`;
  });
  return parts.length ? `  ${parts.join(' ')}` : '';
}

/**
 * A remediation inside the trace: `fix:` and its first line, then every further line indented
 * below it, each `$ ` command on its own line (so it reads, and copies, as printed to the agent).
 */
function fixLines(remediation: string, indent: string): string[] {
  const [first, ...rest] = remediation.split('\n');
  return [`${indent}fix: ${first}`, ...rest.map((l) => `${indent}  ${l.startsWith('$ ') ? '  ' : ''}${l}`)];
}

function textRow(r: AuditRow): string {
  const parts = [`#${r.id}`, r.time, r.kind];
  if (r.repo) parts.push(r.repo);
  if (r.actor) parts.push(r.actor + (r.role ? `(${r.role})` : ''));
  if (r.ref) parts.push(`${r.ref} ${idOrNone(r.old, '(new)')}..${idOrNone(r.new, '(delete)')}`);
  if (r.verdict) parts.push(r.outcome ? `${r.verdict.toUpperCase()}, then REJECT by upstream` : r.verdict.toUpperCase());
  if (r.decision) parts.push(`row=${r.decision}`);
  if (r.moved !== null && r.kind === 'ref') parts.push(r.moved ? 'moved' : 'not moved');
  if (r.reason) parts.push(r.reason);
  if (r.action) parts.push(`${r.action} ${r.subject ?? ''}`.trim());
  if (r.pushId) parts.push(`push=${r.pushId}`);
  return parts.join('  ');
}

export async function runAudit(args: { data: string; json: boolean; audit?: string } & QueryOptions): Promise<string[]> {
  const q: QueryOptions = {};
  for (const k of ['repo', 'actor', 'verdict', 'since', 'until', 'kind', 'limit'] as const) if (args[k] !== undefined) (q as Record<string, unknown>)[k] = args[k];
  return withSink(args, async (s) => {
    const rows = (await s.query(q)).map((r) => (args.json ? JSON.stringify(compactRow(r)) : textRow(r)));
    // Said where a person reads it; --json stays one object per line.
    if (!args.json) rows.push(`(${rows.length} row(s)${args.kind === undefined ? '; confirm rows are hidden, --kind confirm shows them' : ''}; audit show ID for a push's trace)`);
    return rows;
  }, true);
}

/** The trace of every rule checked for one push (by push id) or one row (by number). */
export async function runAuditShow(args: { data: string; id: string; json: boolean; audit?: string }): Promise<string[]> {
  return withSink(args, async (s) => {
    let pushId = args.id;
    if (/^\d+$/.test(args.id)) {
      const row = await s.get(Number(args.id));
      if (!row) throw new UsageError(`no audit row ${args.id}`);
      if (!row.pushId) return [args.json ? JSON.stringify(compactRow(row)) : textRow(row)];
      pushId = row.pushId;
    }
    const trace = await s.getPush(pushId);
    if (!trace) throw new UsageError(`no push ${args.id} in the audit log`);
    if (args.json) return [JSON.stringify({ push: trace.push && compactRow(trace.push), refs: trace.refs.map(compactRow), confirms: trace.confirms.map(compactRow), outcomes: (trace.outcomes ?? []).map(compactRow), upstreamRefusals: (trace.upstreamRefusals ?? []).map(compactRow), escalations: (trace.escalations ?? []).map(compactRow) })];
    const out: string[] = [];
    if (trace.push) out.push(textRow(trace.push));
    for (const ref of trace.refs) {
      out.push(`  ${textRow(ref)}`);
      const rules = (ref.rules ?? []) as unknown as Array<{ rule: string; status: string; ms: number; findings: Array<{ message: string }>; remediation?: string; details?: unknown; cut?: Cut }>;
      for (const r of rules) {
        out.push(`    ${r.rule.padEnd(12)} ${r.status.padEnd(8)} ${String(r.ms ?? 0).padStart(5)} ms  ${r.cut?.findings ?? (r.findings ?? []).length} finding(s)${detailsText(r.details)}`);
        for (const f of (r.findings ?? []).slice(0, 20)) out.push(`      - ${f.message}`);
        if (r.cut) out.push(`      ${describeCut(r.cut)}`);
        if (r.remediation) out.push(...fixLines(r.remediation, '      '));
      }
    }
    for (const c of trace.confirms) out.push(`  ${textRow(c)}`);
    // The forward's outcome and any recovery, recorded under the push's id.
    for (const o of trace.outcomes ?? []) out.push(`  ${textRow(o)}`);
    for (const u of trace.upstreamRefusals ?? []) out.push(`  ${textRow(u)}`);
    for (const e of trace.escalations ?? []) out.push(`  ${textRow(e)}`);
    return out;
  }, true);
}

export interface AuditVerifyReport {
  ok: boolean;
  lines: string[];
  /** Rows found intact (before the first problem). */
  rows?: number;
  tokens?: number;
  firstBadId?: number;
  reason?: string;
}

export async function runAuditVerify(args: { data: string; audit?: string }, progress: SlowPhaseOptions = stderrProgress()): Promise<AuditVerifyReport> {
  // Progress on stderr (stdout is the report): on a large log the walk takes many seconds. The
  // page's /chain says the same verdict (src/audit/verify-log.ts).
  return withSink(args, (s) => verifyLog(s, (x) => verifyWithProgress(x, progress)), true);
}

/** `escalation list [--open]`: open first, each group newest first (src/audit/escalation.ts). */
export async function runEscalationList(args: { data: string; audit?: string; open: boolean; json: boolean; repo?: string }): Promise<string[]> {
  const { listEscalations, escalationLine } = await import('../audit/escalation.js');
  return withSink(args, async (s) => {
    const list = await listEscalations(s, { open: args.open, ...(args.repo ? { repos: [normalizeRepoName(args.repo)] } : {}) });
    if (args.json) return list.map((e) => JSON.stringify(e));
    const open = list.filter((e) => e.open).length;
    return [...list.map(escalationLine), `(${list.length} escalation(s), ${open} open; close one with: patchgate escalation close ID --note "…")`];
  }, true);
}

/** Who closes an escalation: PATCHGATE_TOKEN's person (an agent's token is refused), else `--as NAME`; never a default. */
async function closerOf(tokens: TokenSource, as: string | undefined): Promise<string> {
  const { sanitizeText } = await import('../audit/escalation.js');
  const secret = process.env[PERSON_TOKEN_ENV];
  if (secret) {
    const token = await tokens.authenticate(secret);
    if (!token) throw new UsageError(`escalation close: ${PERSON_TOKEN_ENV} is not a valid token of this log (revoked, expired or another gate's)`);
    if (token.role === 'agent') throw new UsageError(`escalation close: ${PERSON_TOKEN_ENV} is agent ${token.name}'s token; a person closes escalations, with their own token or --as NAME`);
    if (as !== undefined && as.trim() && as.trim() !== token.name) throw new UsageError(`escalation close: --as ${JSON.stringify(as.slice(0, 60))} is not the person of ${PERSON_TOKEN_ENV} (${token.name}); give one of them`);
    return token.name;
  }
  if (!as?.trim()) throw new UsageError(`escalation close: say who closes it: --as NAME, or your token in ${PERSON_TOKEN_ENV}`);
  const name = sanitizeText(as.trim(), 256);
  if (!name) throw new UsageError(`escalation close: say who closes it: --as NAME, or your token in ${PERSON_TOKEN_ENV}`);
  return name;
}

/** `escalation close ID --note TEXT --as NAME`: an audited closing row by the person; the commits kept for review are let go. */
export async function runEscalationClose(args: { data: string; audit?: string; id: string; note: string; by?: string; json: boolean }): Promise<string[]> {
  const { sanitizeText, listEscalations } = await import('../audit/escalation.js');
  const { dropEscalation } = await import('../server/escalation-ref.js');
  if (!/^\d{1,15}$/.test(args.id)) throw new UsageError(`escalation close: ID must be a number (the # of patchgate escalation list), got ${JSON.stringify(args.id.slice(0, 40))}`);
  const note = sanitizeText(args.note);
  if (!args.note.trim()) throw new UsageError('escalation close: --note must say what was decided');
  return withTokens(args, async (tokens, s) => {
    const by = await closerOf(tokens, args.by);
    const id = Number(args.id);
    const row = await s.closeEscalation({ id, actor: by, note });
    // Its kept commits: the ref goes now, the objects at the repository's next gc.
    const e = (await listEscalations(s)).find((x) => x.id === id);
    const dir = e?.repo ? resolveRepo(args.data, e.repo) : null;
    let dropped = '';
    if (dir) {
      try {
        if (await dropEscalation(dir, id)) dropped = `; its kept commits (refs/patchgate/escalations/${id}) let go`;
      } catch (err) {
        dropped = `; refs/patchgate/escalations/${id} could not be deleted (${String((err as Error).message).split('\n')[0]}): git -C ${dir} update-ref -d refs/patchgate/escalations/${id}`;
      }
    }
    return [args.json ? JSON.stringify({ ok: true, id, row, actor: by, note }) : `escalation ${args.id} closed (audit row ${row}, by ${by}): ${note}${dropped}`];
  }, true);
}

/** `escalation show ID`: the escalation, then the diff of the commits it kept (what a person reviews). */
export async function runEscalationShow(args: { data: string; audit?: string; id: string; json: boolean }): Promise<string[]> {
  const { listEscalations, escalationLine } = await import('../audit/escalation.js');
  const { escalationDiff } = await import('./escalation-show.js');
  if (!/^\d{1,15}$/.test(args.id)) throw new UsageError(`escalation show: ID must be a number (the # of patchgate escalation list), got ${JSON.stringify(args.id.slice(0, 40))}`);
  return withSink(args, async (s, where) => {
    const e = (await listEscalations(s)).find((x) => x.id === Number(args.id));
    if (!e) throw new UsageError(`escalation show: no escalation ${args.id} in ${describeAudit(where.location)} (patchgate escalation list shows them)`);
    const dir = e.repo ? resolveRepo(args.data, e.repo) : null;
    const diff = await escalationDiff(dir, e);
    if (args.json) return [JSON.stringify({ ...e, kept: diff.kept, base: diff.base, commits: diff.commits, diff: diff.text })];
    return [escalationLine(e), ...diff.lines];
  }, true);
}

/** `audit export`: the configured log's rows, oldest first, exactly as stored. */
export async function runAuditExport(args: { data: string; since: string; until?: string; format: string; audit?: string }, write: (line: string) => void): Promise<void> {
  await withSink(args, async (s) => {
    for await (const line of exportRows(s, { since: args.since, until: args.until, format: args.format })) write(line);
  }, true);
}
