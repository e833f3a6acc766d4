// The audit page's HTML, rendered on the server so the table and the push page work with
// JavaScript off; the charts are drawn by /assets/app.js (chart.js from node_modules) from
// a JSON block, and are also listed as plain tables. Everything shown goes through html``
// (./html.ts), which escapes it: paths, refs and names are agent-written.

import { html, jsonBlock, type Html } from './html.js';
import { classInTrace, type Overview, type TableFilter, type TablePage } from '../audit/insights.js';
import type { AuditRow, PushTrace } from '../audit/store.js';
import { DECISION_TABLE, RULE_ROW } from '../policy/decision-table.js';
import type { Escalation } from '../audit/escalation.js';
import { commandBlock, openEscalationsBlock } from './escalations.js';
import type { EscalationWhere } from '../server/escalate.js';
import { layout } from './layout.js';

export interface ChainStatus {
  rows: number;
  head: string;
  /** The last row's hash agrees with chain_head. */
  headOk: boolean;
  lastCheckpoint: { time: string; rows: number; matches: boolean; by?: string } | null;
  /** Who signs checkpoints of this log (a shared log: its lease holder). */
  signer: { text: string; ok: boolean } | null;
  /** The verdict of walking the whole log (what `audit verify` says), when it was reached; null: not walked since the server started. */
  full: { ok: boolean; text: string; at: string } | null;
  /** A walk still running when the page was made: since when, rows checked so far (null: not said) of the head's. */
  running: { since: string; rows: number | null; of: number } | null;
}

export { layout } from './layout.js';

export function loginPage(message: string | null): string {
  return layout('Log in', html`<h1>Log in</h1>
${message ? html`<p class="error" role="alert">${message}</p>` : ''}
<form method="post" action="/login" class="login">
<label>Token (human or admin) <input type="password" name="token" autocomplete="current-password" required></label>
<button type="submit">Log in</button></form>
<p>Or send HTTP Basic credentials (any user name, the token as password), as git does.</p>`, null);
}

function counts(title: string, rows: Array<{ key: string; n: number }>, id: string, link?: (key: string) => string): Html {
  return html`<section class="chart"><h2>${title}</h2><canvas id="${id}" aria-label="${title}"></canvas>
<table class="counts" data-chart="${id}"><tbody>${rows.length ? rows.map((r) => html`<tr><td>${link ? html`<a href="${link(r.key)}">${r.key}</a>` : r.key}</td><td class="n">${r.n}</td></tr>`) : html`<tr><td colspan="2">none</td></tr>`}</tbody></table></section>`;
}

function seriesTable(title: string, id: string, s: Overview['days']): Html {
  const verdicts = Object.keys(s.counts);
  return html`<section class="chart wide"><h2>${title}</h2><canvas id="${id}" aria-label="${title}"></canvas>
<details><summary>as a table</summary><table class="series"><thead><tr><th>when</th>${verdicts.map((v) => html`<th>${v}</th>`)}</tr></thead>
<tbody>${s.buckets.map((b, i) => html`<tr><td>${b}</td>${verdicts.map((v) => html`<td class="n">${s.counts[v]![i]}</td>`)}</tr>`)}</tbody></table></details></section>`;
}

/** The verdict first: green only when the whole log was walked and every row and token agrees. */
function verdictLine(c: ChainStatus): Html {
  const r = c.running;
  const walk = r ? html`<p class="walking" id="chain-walk">A walk of the whole chain is running (started ${r.since}${r.rows === null ? '' : html`, ${r.rows} of ${r.of} rows checked`}): reload for its verdict.</p>` : '';
  if (!c.full) return html`<p class="verdict" id="chain-verdict">Not verified since the server started${r ? '' : html`: <a href="/chain">verify the whole chain now</a>`}.</p>${walk}`;
  return html`<p class="verdict ${c.full.ok ? 'ok' : 'bad'}" id="chain-verdict" data-ok="${c.full.ok ? 'true' : 'false'}">${c.full.ok ? 'Intact' : 'NOT intact'}: ${c.full.text} <small>(verified ${c.full.at}${r ? ', before the walk now running' : ''})</small></p>${walk}`;
}

export function chainBlock(c: ChainStatus): Html {
  const cp = c.lastCheckpoint;
  return html`<section class="chain"><h2>Chain status</h2>${verdictLine(c)}<dl>
<dt>rows</dt><dd>${c.rows}</dd><dt>head</dt><dd><code>${c.head}</code> ${c.headOk ? html`<span class="ok">matches the last row</span>` : html`<span class="bad">DOES NOT match the last row</span>`}</dd>
${c.signer ? html`<dt>checkpoint signer</dt><dd id="checkpoint-signer" class="${c.signer.ok ? '' : 'bad'}">${c.signer.text}</dd>` : ''}
<dt>last checkpoint</dt><dd>${cp ? html`${cp.time}, ${cp.rows} rows${cp.by ? html`, by node ${cp.by}` : ''}, ${cp.matches ? html`<span class="ok">still a prefix of the chain</span>` : html`<span class="bad">CONTRADICTED by the chain</span>`}` : html`<span class="bad">none written yet</span> (run <code>patchgate audit checkpoint</code>)`}</dd>
</dl><p>The whole chain, against every published head: <code>patchgate audit verify --checkpoints git:REPO</code></p></section>`;
}

export function overviewPage(o: Overview, chain: ChainStatus, user: string, openEscalations: readonly Escalation[] = [], where?: EscalationWhere): string {
  const chartData = { days: o.days, hours: o.hours, byRow: o.byRow, byRule: o.byRule, topPaths: o.topPaths, topActors: o.topActors };
  const sampledNote = o.sampled < o.refusals ? html` (rules and paths from the newest ${o.sampled} of ${o.refusals} refusals)` : '';
  return layout('Overview', html`<h1>Overview</h1>
${openEscalationsBlock(openEscalations, where)}
<p>Since ${o.since}: <strong id="refusal-count">${o.refusals}</strong> refused ref decisions${sampledNote}.</p>
${chainBlock(chain)}
<div class="charts">
${seriesTable('Decisions by day', 'chart-days', o.days)}
${seriesTable('Decisions by hour (last 48 hours)', 'chart-hours', o.hours)}
${counts('Refusals by rule', o.byRule, 'chart-rules', (k) => `/pushes?rule=${encodeURIComponent(k)}&verdict=reject`)}
${counts('Refusals by decision-table row', o.byRow, 'chart-rows', (k) => `/pushes?row=${encodeURIComponent(k)}&verdict=reject`)}
${counts('Top refused paths', o.topPaths, 'chart-paths')}
${counts('Top refused actors', o.topActors, 'chart-actors', (k) => `/pushes?actor=${encodeURIComponent(k)}&verdict=reject`)}
</div>
<script type="application/json" id="chart-data">${jsonBlock(chartData)}</script>`, user);
}

function query(f: TableFilter, extra: Record<string, string | null>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...f, ...extra })) if (v) p.set(k, v);
  const s = p.toString();
  return s ? `/pushes?${s}` : '/pushes';
}

export function pushesPage(f: TableFilter, page: TablePage, user: string, error: string | null): string {
  const sel = (name: string, options: string[], value: string | undefined) =>
    html`<select name="${name}"><option value="">any</option>${options.map((o) => html`<option value="${o}"${o === value ? html` selected` : ''}>${o}</option>`)}</select>`;
  return layout('Pushes', html`<h1>Pushes</h1>
<form method="get" action="/pushes" class="filters" id="filters">
<label>repo <input name="repo" value="${f.repo ?? ''}"></label>
<label>actor <input name="actor" value="${f.actor ?? ''}"></label>
<label>verdict ${sel('verdict', ['accept', 'reject', 'would-reject'], f.verdict)}</label>
<label>rule ${sel('rule', Object.keys(RULE_ROW), f.rule)}</label>
<label>row ${sel('row', DECISION_TABLE.map((r) => r.id), f.row)}</label>
<label>since <input name="since" value="${f.since ?? ''}" placeholder="2026-01-01"></label>
<label>until <input name="until" value="${f.until ?? ''}"></label>
<button type="submit">Filter</button> <a href="/pushes">clear</a></form>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<table class="pushes" id="pushes"><thead><tr><th>time</th><th>repo</th><th>actor</th><th>ref</th><th>verdict</th><th>rule</th><th>row</th><th>reason</th><th>push</th></tr></thead>
<tbody>${page.rows.map((r) => html`<tr class="v-${r.verdict ?? ''}"><td>${r.time}</td><td>${r.repo}</td><td>${r.actor}${r.role ? html` <small>(${r.role}${r.agentClass ? `, class ${r.agentClass}` : ''})</small>` : ''}</td><td>${r.ref}</td><td class="verdict">${r.verdict}</td><td>${r.rule ?? ''}</td><td>${r.decision ?? ''}</td><td class="reason">${r.reason ?? ''}</td><td>${r.pushId ? html`<a href="/push/${encodeURIComponent(r.pushId)}">${r.pushId}</a>` : ''}</td></tr>`)}</tbody></table>
${page.rows.length === 0 ? html`<p>No decisions match.</p>` : ''}
<p class="pager">${page.next ? html`<a rel="next" href="${query(f, { before: page.next })}">older →</a>` : 'end of the log'}${f.before ? html` · <a href="${query(f, { before: null })}">newest</a>` : ''}</p>`, user);
}

/** A remediation: its explanation lines as text, each `$ ` command as its own code block with a copy button. */
export function fixBlock(remediation: string): Html {
  const lines = remediation.split('\n');
  return html`<div class="fix"><p>next step: ${lines[0]}</p>${lines.slice(1).map((l) => (l.startsWith('$ ') ? commandBlock(l.slice(2)) : html`<p>${l}</p>`))}</div>`;
}

interface TraceRule {
  rule?: string;
  status?: string;
  ms?: number;
  findings?: Array<{ message?: string; path?: string; commit?: string; messageId?: string }>;
  remediation?: string;
  details?: Record<string, unknown>;
}

function refBlock(r: AuditRow, refusals: readonly AuditRow[] = []): Html {
  const rules = (Array.isArray(r.rules) ? r.rules : []) as TraceRule[];
  // Accepted here, then refused by upstream (issue 48): the ref's outcome is that refusal.
  const up = refusals.find((u) => u.ref === r.ref);
  const verdict = r.outcome ?? r.verdict;
  return html`<section class="ref v-${verdict ?? ''}"><h2><code>${r.ref}</code> ${verdict?.toUpperCase()}</h2>
${up ? html`<p class="upstream-refusal">Accepted by the gate, then <strong>refused by upstream</strong> at ${up.time} (row #${up.id}, decision-table row <strong>upstream-refused</strong>): ${up.reason ?? ''}</p>` : ''}
<p><code>${r.old?.slice(0, 12)}..${r.new?.slice(0, 12)}</code> · decision-table row <strong>${r.decision ?? '—'}</strong>${r.moved === null ? '' : r.moved ? ' · the ref moved' : ' · the ref did not move'}
${r.contractBase || r.contractHead ? html` · contract <code>${r.contractBase ?? '—'}</code> → <code>${r.contractHead ?? '—'}</code>` : ''}</p>
<table class="rules"><thead><tr><th>rule</th><th>status</th><th>ms</th><th>findings</th></tr></thead><tbody>
${rules.map((o) => html`<tr class="s-${o.status ?? ''}"><td>${o.rule}</td><td>${o.status}</td><td class="n">${o.ms}</td><td>
${(o.findings ?? []).length ? html`<ul>${(o.findings ?? []).slice(0, 200).map((f) => html`<li>${f.message ?? f.messageId}${f.path !== undefined ? html` <span class="path">${f.path}</span>` : ''}${f.commit ? html` <code>${f.commit.slice(0, 12)}</code>` : ''}</li>`)}</ul>` : 'none'}
${o.remediation ? fixBlock(o.remediation) : ''}
${Array.isArray(o.details?.diff) || typeof o.details?.diff === 'string' ? html`<pre class="diff">${Array.isArray(o.details!.diff) ? (o.details!.diff as unknown[]).map(String).join('\n') : String(o.details!.diff)}</pre>` : ''}
${o.details && !('diff' in o.details) ? html`<details><summary>details</summary><pre>${JSON.stringify(o.details, null, 2).slice(0, 20_000)}</pre></details>` : ''}
</td></tr>`)}
</tbody></table></section>`;
}

/** The agent class a push was judged under (its first ref row's trace), if any. */
function pushClass(trace: PushTrace): string | null {
  for (const r of trace.refs) {
    const c = classInTrace(Array.isArray(r.rules) ? r.rules : null);
    if (c) return c;
  }
  return null;
}

export function pushPage(trace: PushTrace, user: string): string {
  const p = trace.push ?? trace.refs[0] ?? null;
  return layout(`Push ${p?.pushId ?? ''}`, html`<h1>Push <code>${p?.pushId}</code></h1>
${p ? html`<dl class="push"><dt>time</dt><dd>${p.time}</dd><dt>repo</dt><dd>${p.repo}</dd><dt>actor</dt><dd>${p.actor} (${p.role}${pushClass(trace) ? `, class ${pushClass(trace)}` : ''})</dd>
<dt>verdict</dt><dd class="verdict">${trace.push?.outcome ?? trace.push?.verdict ?? ''}${trace.push?.outcome ? ' (refused by upstream after the gate accepted it)' : ''}</dd><dt>from</dt><dd>${p.remoteAddr ?? ''} ${p.userAgent ?? ''}</dd><dt>row</dt><dd>#${p.id}, hash <code>${p.hash}</code></dd></dl>` : ''}
${trace.refs.map((r) => refBlock(r, trace.upstreamRefusals))}
${trace.confirms.length ? html`<h2>Confirmations</h2><ul>${trace.confirms.map((c) => html`<li>${c.time} <code>${c.ref}</code> → <code>${c.new?.slice(0, 12)}</code> ${c.moved ? 'moved' : 'did not move'}</li>`)}</ul>` : ''}
<p><a href="/pushes">← all pushes</a> · CLI: <code>patchgate audit show ${p?.pushId ?? ''}</code></p>`, user);
}

export function messagePage(title: string, message: string, user: string | null): string {
  return layout(title, html`<h1>${title}</h1><p>${message}</p>`, user);
}
