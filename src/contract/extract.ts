// One file's contract rows by format and language: the single place that picks the extractor,
// used both on the daemon's main thread and inside the parse workers (parse-pool.ts).

import { extractTypeScriptKeyed } from './typescript/parse.js';
import { analysePythonV1, extractPythonSeed, type PyLinks } from './python.js';

export type RowsFormat = 'v1' | 'seed';

/**
 * A v1 .py file's re-export links (python.ts PyLinks) travel with its rows, one parse for
 * both, as a last element starting with this mark. No row can: every row starts with its path.
 */
export const LINKS_MARK = '\u0000pylinks\u0000';
/** A TS/JS file's signature key (typescript/parse.ts signatureKey) travels the same way. */
export const SIG_MARK = '\u0000tssig\u0000';

/**
 * Rows of one decoded source file. Python extractors need initPython() first. `known` answers
 * a TS/JS signature key seen before with its rows (on the thread that has the cache).
 */
export function extractRows(format: RowsFormat, path: string, source: string, known?: (sig: string) => string[] | undefined): string[] {
  if (format === 'seed') return extractPythonSeed(source, path);
  if (path.endsWith('.py')) {
    const { rows, links } = analysePythonV1(source, path);
    return [...rows, LINKS_MARK + JSON.stringify(links)];
  }
  const { rows, sig } = extractTypeScriptKeyed(source, path, known);
  return sig === null ? rows : [...rows, SIG_MARK + sig];
}

/** Splits extractRows' answer into the rows, the links (v1 .py only) and the signature key (TS/JS only). */
export function splitLinks(out: string[]): { rows: string[]; links: PyLinks | null; sig: string | null } {
  const last = out[out.length - 1];
  if (last !== undefined && last.startsWith(LINKS_MARK)) return { rows: out.slice(0, -1), links: JSON.parse(last.slice(LINKS_MARK.length)) as PyLinks, sig: null };
  if (last !== undefined && last.startsWith(SIG_MARK)) return { rows: out.slice(0, -1), links: null, sig: last.slice(SIG_MARK.length) };
  return { rows: out, links: null, sig: null };
}
