// One file's contract rows by format and language: the single place that picks the extractor,
// used both on the daemon's main thread and inside the parse workers (parse-pool.ts).

import { extractTypeScript } from './typescript.js';
import { analysePythonV1, extractPythonSeed, type PyLinks } from './python.js';

export type RowsFormat = 'v1' | 'seed';

/**
 * A v1 .py file's re-export links (python.ts PyLinks) travel with its rows, one parse for
 * both, as a last element starting with this mark. No row can: every row starts with its path.
 */
export const LINKS_MARK = '\u0000pylinks\u0000';

/** Rows of one decoded source file. Python extractors need initPython() first. */
export function extractRows(format: RowsFormat, path: string, source: string): string[] {
  if (format === 'seed') return extractPythonSeed(source, path);
  if (path.endsWith('.py')) {
    const { rows, links } = analysePythonV1(source, path);
    return [...rows, LINKS_MARK + JSON.stringify(links)];
  }
  return extractTypeScript(source, path);
}

/** Splits extractRows' answer into the rows and (v1 .py only) the links. */
export function splitLinks(out: string[]): { rows: string[]; links: PyLinks | null } {
  const last = out[out.length - 1];
  if (last === undefined || !last.startsWith(LINKS_MARK)) return { rows: out, links: null };
  return { rows: out.slice(0, -1), links: JSON.parse(last.slice(LINKS_MARK.length)) as PyLinks };
}
