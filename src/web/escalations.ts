// The audit page's escalations (issue 21): what agents flagged for a person with `git push -o
// patchgate.escalate="…"`, open ones first, each with the command that closes it. The text is
// the agent's (sanitised when stored), so it goes through html`` like everything else.

import { html, type Html } from './html.js';
import { layout } from './layout.js';
import type { Escalation } from '../audit/escalation.js';
import { closeCommand, showCommand, type EscalationWhere } from '../server/escalate.js';

/**
 * A command shown as a code block, `$ ` before it as the agent saw it (not selected, not
 * copied), with a copy button that copies the command alone (wired by /assets/app.js: no
 * inline script).
 */
export function commandBlock(cmd: string): Html {
  return html`<div class="cmd"><pre><span class="prompt">$ </span><code>${cmd}</code></pre><button type="button" class="copy" hidden>Copy</button></div>`;
}

const item = (where: EscalationWhere | undefined) => (e: Escalation): Html => {
  return html`<li class="${e.open ? 'esc-open' : 'esc-closed'}" data-escalation="${e.id}"><strong>#${e.id}</strong> ${e.open ? html`<span class="bad">OPEN</span>` : html`<span class="ok">closed</span>`}
${e.time} · ${e.repo ?? ''} · <code>${e.ref ?? ''}</code> <code>${(e.new ?? '').slice(0, 12)}</code> · ${e.actor ?? ''}${e.role ? html` <small>(${e.role})</small>` : ''} · verdict ${e.verdict ?? ''}
${e.pushId ? html` · <a href="/push/${encodeURIComponent(e.pushId)}">push ${e.pushId}</a>` : ''}
<blockquote class="esc-text">${e.text}</blockquote>
${e.open ? html`${commandBlock(showCommand(e.id, where))}${commandBlock(closeCommand(e.id, where))}` : html`<p>closed ${e.closed!.time} by ${e.closed!.actor ?? ''}: ${e.closed!.note}</p>`}</li>`;
};

/** The block at the top of the overview: open escalations, newest first. */
export function openEscalationsBlock(open: readonly Escalation[], where?: EscalationWhere): Html {
  return html`<section class="escalations" id="open-escalations"><h2>Open escalations (${open.length})</h2>
${open.length ? html`<ol class="esc">${open.map(item(where))}</ol>` : html`<p>None: no agent is waiting for a person.</p>`}
<p><a href="/escalations">all escalations</a> · CLI: <code>patchgate escalation list --open</code></p></section>`;
}

export function escalationsPage(list: readonly Escalation[], user: string, where?: EscalationWhere): string {
  const open = list.filter((e) => e.open);
  const closed = list.filter((e) => !e.open);
  return layout('Escalations', html`<h1>Escalations</h1>
<p>An agent that believes a test, the contract or a fixture is wrong pushes with <code>git push -o patchgate.escalate="…"</code> instead of editing it. Its push is judged as usual; the note waits here for a person.</p>
<h2>Open (${open.length})</h2>${open.length ? html`<ol class="esc" id="escalations-open">${open.map(item(where))}</ol>` : html`<p>None.</p>`}
<h2>Closed (${closed.length})</h2>${closed.length ? html`<ol class="esc" id="escalations-closed">${closed.map(item(where))}</ol>` : html`<p>None.</p>`}`, user);
}
