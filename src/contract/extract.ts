// One file's contract rows by format and language: the single place that picks the extractor,
// used both on the daemon's main thread and inside the parse workers (parse-pool.ts).

import { extractTypeScript } from './typescript.js';
import { extractPythonSeed, extractPythonV1 } from './python.js';

export type RowsFormat = 'v1' | 'seed';

/** Rows of one decoded source file. Python extractors need initPython() first. */
export function extractRows(format: RowsFormat, path: string, source: string): string[] {
  if (format === 'seed') return extractPythonSeed(source, path);
  if (path.endsWith('.py')) return extractPythonV1(source, path);
  return extractTypeScript(source, path);
}
