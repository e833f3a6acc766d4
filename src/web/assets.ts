// The audit page's static files, served by name only (no path from the request ever
// reaches the file system): chart.js's UMD build from node_modules, and our own script and
// stylesheet kept here as text so there is no asset build step.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const APP_JS = `// Draws the audit page's charts from the JSON block (no inline script: the CSP forbids it).
(function () {
  var el = document.getElementById('chart-data');
  if (!el || typeof Chart === 'undefined') return;
  var d = JSON.parse(el.textContent);
  var colors = { accept: '#2e7d32', reject: '#c62828', 'would-reject': '#ef6c00', none: '#777' };
  Chart.defaults.animation = false;
  function series(id, s) {
    var c = document.getElementById(id);
    if (!c) return;
    var sets = Object.keys(s.counts).map(function (v) {
      return { label: v, data: s.counts[v], backgroundColor: colors[v] || '#555', stack: 'v' };
    });
    new Chart(c, { type: 'bar', data: { labels: s.buckets, datasets: sets },
      options: { responsive: true, scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } } });
    c.setAttribute('data-rendered', 'true');
  }
  function bars(id, rows) {
    var c = document.getElementById(id);
    if (!c) return;
    new Chart(c, { type: 'bar', data: { labels: rows.map(function (r) { return r.key; }),
      datasets: [{ label: 'refusals', data: rows.map(function (r) { return r.n; }), backgroundColor: '#c62828' }] },
      options: { indexAxis: 'y', responsive: true, plugins: { legend: { display: false } } } });
    c.setAttribute('data-rendered', 'true');
  }
  series('chart-days', d.days);
  series('chart-hours', d.hours);
  bars('chart-rules', d.byRule);
  bars('chart-rows', d.byRow);
  bars('chart-paths', d.topPaths);
  bars('chart-actors', d.topActors);
})();
// Copy buttons beside the fix commands: shown only when this script runs (no inline script).
(function () {
  var buttons = document.querySelectorAll('button.copy');
  for (var i = 0; i < buttons.length; i++) {
    var b = buttons[i];
    var code = b.parentNode && b.parentNode.querySelector('code');
    if (!code || !navigator.clipboard) continue;
    b.hidden = false;
    b.addEventListener('click', (function (btn, c) {
      return function () {
        navigator.clipboard.writeText(c.textContent).then(function () { btn.textContent = 'Copied'; }, function () { btn.textContent = 'Copy failed'; });
      };
    })(b, code));
  }
})();
`;

const APP_CSS = `body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{display:flex;gap:1em;align-items:center;padding:.5em 1em;background:#263238;color:#fff}
header a{color:#cfd8dc;margin-right:.8em}header .logout{margin-left:auto}
main{padding:1em;max-width:1400px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:1em}
.chart{border:1px solid #ddd;padding:.5em;border-radius:4px}.chart.wide{grid-column:1/-1}
table{border-collapse:collapse}td,th{border-bottom:1px solid #eee;padding:.2em .5em;text-align:left;vertical-align:top}
td.n{text-align:right}.v-reject .verdict,.bad{color:#c62828;font-weight:bold}.ok,.v-accept .verdict{color:#2e7d32}
.filters label{margin-right:.6em}.error{color:#c62828}pre{background:#f5f5f5;padding:.5em;overflow:auto;max-height:30em}
.path{font-family:monospace;background:#fff3e0}.s-fail td:first-child{color:#c62828;font-weight:bold}
.cmd{display:flex;gap:.4em;align-items:flex-start;margin:.2em 0}.cmd pre{margin:0;flex:1;white-space:pre-wrap;word-break:break-all}
.cmd button{flex:none}.cmd .prompt{color:#888;user-select:none}.fix p{margin:.3em 0}td.reason{max-width:28em;font-size:90%;overflow-wrap:anywhere;word-break:break-word}
.escalations{border:2px solid #ef6c00;border-radius:4px;padding:.5em 1em;margin-bottom:1em}
.esc li{margin-bottom:.8em}.esc-text{margin:.3em 0;padding:.3em .6em;border-left:3px solid #ef6c00;background:#fff8e1;white-space:pre-wrap}
`;

const FAVICON_SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#263238"/><path d="M4 8l3 3 5-6" stroke="#66bb6a" stroke-width="2" fill="none"/></svg>';

const require = createRequire(import.meta.url);

function chartJs(): Buffer {
  // chart.js does not export its UMD file; find it beside the package's CommonJS entry.
  return readFileSync(join(dirname(require.resolve('chart.js')), 'chart.umd.min.js'));
}

export interface Asset {
  type: string;
  body: Buffer;
}

let cache: Map<string, Asset> | null = null;

/** The asset of that exact name, or null: only these four exist. */
export function asset(name: string): Asset | null {
  cache ??= new Map([
    ['chart.umd.min.js', { type: 'text/javascript; charset=utf-8', body: chartJs() }],
    ['app.js', { type: 'text/javascript; charset=utf-8', body: Buffer.from(APP_JS) }],
    ['app.css', { type: 'text/css; charset=utf-8', body: Buffer.from(APP_CSS) }],
    ['favicon.svg', { type: 'image/svg+xml', body: Buffer.from(FAVICON_SVG) }],
  ]);
  return cache.get(name) ?? null;
}
