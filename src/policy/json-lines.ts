// Where in a JSON file a problem is, as a line number, so a refusal of a policy file can say
// `ci/patchgate.json:7` (issue 48). JSON.parse names a character position (Node 20: "at position
// N"; later versions: "(line L column C)"; nothing at an early end of input), and a schema error
// names a key path in text that did parse: both become a 1-based line here.

/** The 1-based line of character offset `pos` in `text`. */
export function lineAt(text: string, pos: number): number {
  let line = 1;
  const end = Math.min(Math.max(pos, 0), text.length);
  for (let i = 0; i < end; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** The line a JSON.parse error of `text` points at; an early end of input is the last line that is not blank. */
export function parseErrorLine(text: string, err: unknown): number {
  const msg = err instanceof Error ? err.message : String(err);
  const lc = /\(line (\d+) column \d+\)/.exec(msg);
  if (lc) return Number(lc[1]);
  const pos = /at position (\d+)/.exec(msg);
  // A position past the last character that is not blank (an early end) is that character's line.
  const end = Math.max(text.replace(/\s+$/, '').length - 1, 0);
  return lineAt(text, pos ? Math.min(Number(pos[1]), end) : end);
}

const WS = new Set([' ', '\t', '\n', '\r']);

/**
 * The line of the key (or array element) at `path` in `text`, which must be valid JSON; the
 * line of the whole value for an empty path; null when the path is not there. A key given
 * twice is found where JSON.parse takes it from: its last occurrence.
 */
export function keyLine(text: string, path: ReadonlyArray<string | number>): number | null {
  let i = 0;
  const ws = (): void => {
    while (i < text.length && WS.has(text[i]!)) i++;
  };
  const str = (): string => {
    const start = i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const skip = (): void => {
    ws();
    const c = text[i];
    if (c === '"') {
      str();
      return;
    }
    if (c === '{' || c === '[') {
      let depth = 0;
      while (i < text.length) {
        const d = text[i];
        if (d === '"') {
          str();
          continue;
        }
        if (d === '{' || d === '[') depth++;
        else if (d === '}' || d === ']') depth--;
        i++;
        if (depth === 0) return;
      }
      return;
    }
    while (i < text.length && !WS.has(text[i]!) && text[i] !== ',' && text[i] !== '}' && text[i] !== ']') i++;
  };
  const walk = (depth: number): number | null => {
    ws();
    if (depth === path.length) return lineAt(text, i);
    const want = path[depth]!;
    if (text[i] === '{') {
      i++;
      let found: { key: number; value: number } | null = null;
      for (;;) {
        ws();
        if (text[i] !== '"') break;
        const key = i;
        const k = str();
        ws();
        i++; // ':'
        ws();
        if (k === String(want)) found = { key, value: i };
        skip();
        ws();
        if (text[i] !== ',') break;
        i++;
      }
      if (!found) return null;
      if (depth + 1 === path.length) return lineAt(text, found.key);
      i = found.value;
      return walk(depth + 1);
    }
    if (text[i] === '[' && typeof want === 'number') {
      i++;
      for (let n = 0; ; n++) {
        ws();
        if (text[i] === ']') return null;
        if (n === want) return walk(depth + 1);
        skip();
        ws();
        if (text[i] !== ',') return null;
        i++;
      }
    }
    return null;
  };
  try {
    return walk(0);
  } catch {
    return null;
  }
}
