// A parse worker thread (see parse-pool.ts): receives decoded source files, answers with their
// contract rows or the parse error. It reads nothing itself and runs nothing it is given.

import { parentPort } from 'node:worker_threads';
import { ContractParseError } from '../errors.js';
import { extractRows, type RowsFormat } from './extract.js';
import { initPython } from './python.js';

interface Request { id: number; format: RowsFormat; path: string; source: string }

await initPython();
parentPort!.on('message', (m: Request) => {
  try {
    parentPort!.postMessage({ id: m.id, rows: extractRows(m.format, m.path, m.source) });
  } catch (err) {
    if (err instanceof ContractParseError) {
      const prefix = `${err.path}:${err.line}:${err.column}: does not parse: `;
      const detail = err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
      parentPort!.postMessage({ id: m.id, parseError: { path: err.path, line: err.line, column: err.column, detail } });
    } else {
      parentPort!.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) });
    }
  }
});
