// A parse worker thread (see parse-pool.ts): receives decoded source files, answers with their
// contract rows (or, for `kind: tamper`, the tamper scan's hits on the given lines) or the
// parse error. It reads nothing itself and runs nothing it is given.

import { parentPort } from 'node:worker_threads';
import { ContractParseError } from '../errors.js';
import { extractRows, type RowsFormat } from './extract.js';
import { initPython } from './python.js';
import { scanPython } from '../policy/tamper/scan-python.js';
import { scanTypeScript } from '../policy/tamper/scan-typescript.js';

interface Request { id: number; kind?: 'rows' | 'tamper'; lines?: number[]; format: RowsFormat; path: string; source: string }

async function answer(m: Request): Promise<string[]> {
  if (m.kind !== 'tamper') return extractRows(m.format, m.path, m.source);
  const lines = new Set(m.lines ?? []);
  const hits = m.path.endsWith('.py') ? await scanPython(m.source, m.path, lines) : scanTypeScript(m.source, m.path, lines);
  return hits.map((h) => JSON.stringify(h));
}

await initPython();
parentPort!.on('message', async (m: Request) => {
  try {
    parentPort!.postMessage({ id: m.id, rows: await answer(m) });
  } catch (err) {
    // typescript-estree's syntax error: a parse error like the contract's (that rule refuses the file).
    const ts = err as { name?: string; message?: string; location?: { start?: { line?: number; column?: number } } };
    if (ts?.name === 'TSError') {
      parentPort!.postMessage({ id: m.id, parseError: { path: m.path, line: ts.location?.start?.line ?? 1, column: (ts.location?.start?.column ?? 0) + 1, detail: ts.message ?? 'syntax error' } });
      return;
    }
    if (err instanceof ContractParseError) {
      const prefix = `${err.path}:${err.line}:${err.column}: does not parse: `;
      const detail = err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
      parentPort!.postMessage({ id: m.id, parseError: { path: err.path, line: err.line, column: err.column, detail } });
    } else {
      parentPort!.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) });
    }
  }
});
