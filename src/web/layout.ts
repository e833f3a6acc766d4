// The frame every audit page is drawn in (head, navigation, log-out form), on its own floor
// (issue 22) so that ./pages.ts and ./escalations.ts both use it without importing each other.

import { html, type Html } from './html.js';

export function layout(title: string, body: Html, user: string | null): string {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · patchgate audit</title><link rel="icon" href="/assets/favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="/assets/app.css"></head>
<body><header><strong>patchgate audit</strong>
<nav><a href="/">Overview</a> <a href="/escalations">Escalations</a> <a href="/pushes">Pushes</a> <a href="/chain">Chain</a></nav>
${user ? html`<form method="post" action="/logout" class="logout"><span>${user}</span> <button type="submit">Log out</button></form>` : ''}
</header><main>${body}</main>
<script src="/assets/chart.umd.min.js"></script><script src="/assets/app.js"></script>
</body></html>
`.text;
}
