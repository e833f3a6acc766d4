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
`;

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

/** The asset of that exact name, or null: only these three exist. */
export function asset(name: string): Asset | null {
  cache ??= new Map([
    ['chart.umd.min.js', { type: 'text/javascript; charset=utf-8', body: chartJs() }],
    ['app.js', { type: 'text/javascript; charset=utf-8', body: Buffer.from(APP_JS) }],
    ['app.css', { type: 'text/css; charset=utf-8', body: Buffer.from(APP_CSS) }],
  ]);
  return cache.get(name) ?? null;
}
