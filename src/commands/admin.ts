// The operator's commands on a data folder: `serve`, `repo create`, `token create|list|revoke`,
// `audit` (query), `audit show ID` (the trace of every rule checked) and `audit verify`.

import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { AuditStore, compactRow, type AuditRow, type QueryOptions } from '../audit/store.js';
import { TokenStore } from '../audit/tokens.js';
import { UsageError } from '../errors.js';
import { createRepo, ensureRepoConfig, normalizeRepoName, installHooks, markHoldout, resolveRepo } from '../server/repos.js';
import { adminTokenPath } from '../server/admin-token.js';
import type { Role } from '../policy/types.js';

export function dbPath(data: string): string {
  return join(resolve(data), 'patchgate.db');
}

function withStore<T>(data: string, fn: (s: AuditStore) => T): T {
  const s = AuditStore.open(dbPath(data));
  try {
    return fn(s);
  } finally {
    s.close();
  }
}

export async function runServe(args: { data: string; port: number; host: string; tlsCert?: string; tlsKey?: string; hookTimeout: number }): Promise<void> {
  const { startServer } = await import('../server/app.js');
  const srv = await startServer({ dataDir: args.data, port: args.port, host: args.host, tlsCert: args.tlsCert, tlsKey: args.tlsKey, hookTimeoutMs: args.hookTimeout * 1000 });
  const say = (l: string) => process.stdout.write(l + '\n');
  say(`patchgate: serving ${resolve(args.data, 'repos')} at ${srv.url} (audit log ${dbPath(args.data)})`);
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

export async function runRepoCreate(args: { data: string; name: string; trusted: string; holdoutOf?: string }): Promise<string[]> {
  if (args.holdoutOf !== undefined && !resolveRepo(resolve(args.data), normalizeRepoName(args.holdoutOf))) throw new UsageError(`--holdout-of: no repository ${args.holdoutOf}`);
  const dir = await createRepo(resolve(args.data), args.name, args.trusted);
  if (args.holdoutOf !== undefined) {
    markHoldout(dir, normalizeRepoName(args.holdoutOf));
    withStore(args.data, (s) => s.appendAdmin({ actor: 'cli', action: 'repo.holdout', subject: normalizeRepoName(args.name), detail: { of: normalizeRepoName(args.holdoutOf!) } }));
  }
  withStore(args.data, (s) => s.appendAdmin({ actor: 'cli', action: 'repo.create', subject: normalizeRepoName(args.name), detail: { dir, trusted: args.trusted } }));
  return [`created ${dir} (trusted branch ${args.trusted}, hooks installed, receive.fsckObjects on, packs over 1 GiB refused)`];
}

export async function runRepoHooks(args: { data: string; name: string }): Promise<string[]> {
  const name = normalizeRepoName(args.name);
  const dir = resolveRepo(resolve(args.data), name);
  if (!dir) throw new UsageError(`no repository ${name} under ${resolve(args.data, 'repos')}`);
  const config = await ensureRepoConfig(dir);
  installHooks(dir);
  withStore(args.data, (s) => s.appendAdmin({ actor: 'cli', action: 'repo.hooks', subject: name, detail: { dir, config } }));
  return [`reinstalled patchgate hooks in ${dir}${config.length ? ` and set ${config.join(', ')}` : ''}`];
}

export function runTokenCreate(args: { data: string; name: string; role: Role; repos?: string; expires?: number }): string[] {
  return withStore(args.data, (s) => {
    const secret = new TokenStore(s).create(args.name, args.role, { repos: args.repos, expiresDays: args.expires, actor: 'cli' });
    return [`token ${args.name} (${args.role}, repos ${args.repos ?? '*'}${args.expires ? `, expires in ${args.expires} day(s)` : ''}) created; the secret is shown once:`, secret];
  });
}

export function runTokenList(args: { data: string; json: boolean }): string[] {
  return withStore(args.data, (s) => new TokenStore(s).list().map((t) => (args.json ? JSON.stringify(t) : `${t.name}\t${t.role}\t${t.repos}\t${t.status}\tcreated ${t.created}${t.expires ? `\texpires ${t.expires}` : ''}`)));
}

export function runTokenRevoke(args: { data: string; name: string }): string[] {
  return withStore(args.data, (s) => {
    new TokenStore(s).revoke(args.name, { actor: 'cli' });
    return [`token ${args.name} revoked`];
  });
}

function textRow(r: AuditRow): string {
  const parts = [`#${r.id}`, r.time, r.kind];
  if (r.repo) parts.push(r.repo);
  if (r.actor) parts.push(r.actor + (r.role ? `(${r.role})` : ''));
  if (r.ref) parts.push(`${r.ref} ${r.old?.slice(0, 12)}..${r.new?.slice(0, 12)}`);
  if (r.verdict) parts.push(r.verdict.toUpperCase());
  if (r.decision) parts.push(`row=${r.decision}`);
  if (r.moved !== null && r.kind === 'ref') parts.push(r.moved ? 'moved' : 'not moved');
  if (r.reason) parts.push(r.reason);
  if (r.action) parts.push(`${r.action} ${r.subject ?? ''}`.trim());
  if (r.pushId) parts.push(`push=${r.pushId}`);
  return parts.join('  ');
}

export function runAudit(args: { data: string; json: boolean } & QueryOptions): string[] {
  const q: QueryOptions = {};
  for (const k of ['repo', 'actor', 'verdict', 'since', 'until', 'kind', 'limit'] as const) if (args[k] !== undefined) (q as Record<string, unknown>)[k] = args[k];
  return withStore(args.data, (s) => s.query(q).map((r) => (args.json ? JSON.stringify(compactRow(r)) : textRow(r))));
}

/** The trace of every rule checked for one push (by push id) or one row (by number). */
export function runAuditShow(args: { data: string; id: string; json: boolean }): string[] {
  return withStore(args.data, (s) => {
    let pushId = args.id;
    if (/^\d+$/.test(args.id)) {
      const row = s.get(Number(args.id));
      if (!row) throw new UsageError(`no audit row ${args.id}`);
      if (!row.pushId) return [args.json ? JSON.stringify(compactRow(row)) : textRow(row)];
      pushId = row.pushId;
    }
    const trace = s.getPush(pushId);
    if (!trace) throw new UsageError(`no push ${args.id} in the audit log`);
    if (args.json) return [JSON.stringify({ push: trace.push && compactRow(trace.push), refs: trace.refs.map(compactRow), confirms: trace.confirms.map(compactRow) })];
    const out: string[] = [];
    if (trace.push) out.push(textRow(trace.push));
    for (const ref of trace.refs) {
      out.push(`  ${textRow(ref)}`);
      const rules = (ref.rules ?? []) as Array<{ rule: string; status: string; ms: number; findings: Array<{ message: string }>; remediation?: string; details?: unknown }>;
      for (const r of rules) {
        out.push(`    ${r.rule.padEnd(12)} ${r.status.padEnd(8)} ${String(r.ms).padStart(5)} ms  ${r.findings.length} finding(s)${r.details ? `  ${JSON.stringify(r.details).slice(0, 200)}` : ''}`);
        for (const f of r.findings.slice(0, 20)) out.push(`      - ${f.message}`);
        if (r.remediation) out.push(`      fix: ${r.remediation}`);
      }
    }
    for (const c of trace.confirms) out.push(`  ${textRow(c)}`);
    return out;
  });
}

export function runAuditVerify(args: { data: string }): { lines: string[]; ok: boolean } {
  return withStore(args.data, (s) => {
    const v = s.verify();
    if (v.ok) return { ok: true, lines: [`ok: ${v.rows} row(s), hash chain intact`] };
    return { ok: false, lines: [`TAMPERED: first bad row ${v.firstBadId} of ${v.rows}: ${v.reason}`] };
  });
}
