// Why this exists (issue 24): tamper-scan scans only the lines a push added or changed in a
// file, and used to ask `git diff -U0 OLD NEW` for them: one process per changed file on the
// hot path. Both blobs are already in memory (read through the cat-file reader), so the lines
// are found here, in process: a Myers line diff (linear space, common prefix and suffix
// trimmed first), then git's own placement of each group of changed lines
// (xdiff's xdl_change_compact with the indent heuristic, git's default), so the line numbers
// are the ones `git diff` reports for ordinary edits. Lines are compared byte for byte with
// their line break, as git does ("x" at the end of a file without a newline differs from "x\n").
// Nothing here can throw on content: any text gives a set (at worst, more lines than git's).
// The work is bounded (WORK_BUDGET steps of the search): a part of the files past it counts
// as changed on every line, so a huge rewrite costs a bounded time and is scanned whole.

/** Lines of `text`, each with its "\n" (the last one without, when the text does not end in one). */
function splitLines(text: string): string[] {
  const out: string[] = [];
  let from = 0;
  for (;;) {
    const nl = text.indexOf('\n', from);
    if (nl < 0) break;
    out.push(text.slice(from, nl + 1));
    from = nl + 1;
  }
  if (from < text.length) out.push(text.slice(from));
  return out;
}

/** One file of the diff: its lines, their ids, and `chg[i + 1]` set when line i changed (0 sentinels at both ends). */
interface Side {
  recs: string[];
  ids: Int32Array;
  chg: Uint8Array;
  n: number;
}

function side(recs: string[], intern: Map<string, number>): Side {
  const ids = new Int32Array(recs.length);
  for (let i = 0; i < recs.length; i++) {
    let id = intern.get(recs[i]!);
    if (id === undefined) intern.set(recs[i]!, (id = intern.size));
    ids[i] = id;
  }
  return { recs, ids, chg: new Uint8Array(recs.length + 2), n: recs.length };
}

/** Steps of the snake search one diff may take (a few tens of ms); past it, see above. */
export const WORK_BUDGET = 5_000_000;

/** Myers' O((N+M)D) diff in linear space: marks changed lines of a[aLo,aHi) and b[bLo,bHi). */
function compare(a: Side, b: Side, aLo: number, aHi: number, bLo: number, bHi: number, vf: Int32Array, vb: Int32Array, budget: { left: number }): void {
  // An explicit stack instead of recursion: a long file cannot overflow the call stack.
  const stack: number[] = [aLo, aHi, bLo, bHi];
  while (stack.length) {
    let bh = stack.pop()!, bl = stack.pop()!, ah = stack.pop()!, al = stack.pop()!;
    const A = a.ids, B = b.ids;
    while (al < ah && bl < bh && A[al] === B[bl]) al++, bl++;
    while (al < ah && bl < bh && A[ah - 1] === B[bh - 1]) ah--, bh--;
    if (al === ah) {
      for (let j = bl; j < bh; j++) b.chg[j + 1] = 1;
      continue;
    }
    if (bl === bh) {
      for (let i = al; i < ah; i++) a.chg[i + 1] = 1;
      continue;
    }
    const snake = middleSnake(A, B, al, ah, bl, bh, vf, vb, budget);
    if (!snake) {
      for (let j = bl; j < bh; j++) b.chg[j + 1] = 1;
      for (let i = al; i < ah; i++) a.chg[i + 1] = 1;
      continue;
    }
    const [xs, ys, xe, ye] = snake;
    // The snake (xs,ys)-(xe,ye) matches; both sides of it are smaller problems.
    stack.push(xe, ah, ye, bh, al, xs, bl, ys);
  }
}

/**
 * The middle snake of a[al,ah) x b[bl,bh) (both non-empty, first and last lines differing),
 * as absolute [xStart, yStart, xEnd, yEnd].
 */
function middleSnake(A: Int32Array, B: Int32Array, al: number, ah: number, bl: number, bh: number, vf: Int32Array, vb: Int32Array, budget: { left: number }): [number, number, number, number] | null {
  const N = ah - al, M = bh - bl;
  const delta = N - M;
  const odd = (delta & 1) !== 0;
  const max = Math.ceil((N + M) / 2);
  const off = max + 1;
  // vf[k]: furthest x on diagonal k (x - y = k) going forward; vb[k]: furthest x' going
  // backward on the reversed sequences, whose diagonal k' = delta - k.
  vf[off + 1] = 0;
  vb[off + 1] = 0;
  for (let d = 0; d <= max; d++) {
    budget.left -= 2 * d + 2;
    if (budget.left < 0) return null;
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && vf[off + k - 1]! < vf[off + k + 1]!) ? vf[off + k + 1]! : vf[off + k - 1]! + 1;
      let y = x - k;
      const x0 = x, y0 = y;
      while (x < N && y < M && A[al + x] === B[bl + y]) x++, y++;
      vf[off + k] = x;
      const kr = delta - k;
      if (odd && kr >= -(d - 1) && kr <= d - 1 && x + vb[off + kr]! >= N) return [al + x0, bl + y0, al + x, bl + y];
    }
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && vb[off + k - 1]! < vb[off + k + 1]!) ? vb[off + k + 1]! : vb[off + k - 1]! + 1;
      let y = x - k;
      const x0 = x, y0 = y;
      while (x < N && y < M && A[ah - 1 - x] === B[bh - 1 - y]) x++, y++;
      vb[off + k] = x;
      const kf = delta - k;
      if (!odd && kf >= -d && kf <= d && x + vf[off + kf]! >= N) return [ah - x, bh - y, ah - x0, bh - y0];
    }
  }
  // Not reached for non-empty inputs (D <= N + M); a whole replacement is still a correct answer.
  return [ah, bh, ah, bh];
}

// ---- git's placement of changed groups (xdiff/xdiffi.c: xdl_change_compact, indent heuristic)

interface Group {
  start: number;
  end: number;
}

const ch = (s: Side, i: number) => s.chg[i + 1]!;
const set = (s: Side, i: number, v: 0 | 1) => void (s.chg[i + 1] = v);

function groupInit(s: Side): Group {
  const g = { start: 0, end: 0 };
  while (ch(s, g.end)) g.end++;
  return g;
}
function groupNext(s: Side, g: Group): boolean {
  if (g.end === s.n) return false;
  g.start = g.end + 1;
  for (g.end = g.start; ch(s, g.end); g.end++);
  return true;
}
function groupPrevious(s: Side, g: Group): boolean {
  if (g.start === 0) return false;
  g.end = g.start - 1;
  for (g.start = g.end; ch(s, g.start - 1); g.start--);
  return true;
}
function slideDown(s: Side, g: Group): boolean {
  if (g.end < s.n && s.ids[g.start] === s.ids[g.end]) {
    set(s, g.start++, 0);
    set(s, g.end++, 1);
    while (ch(s, g.end)) g.end++;
    return true;
  }
  return false;
}
function slideUp(s: Side, g: Group): boolean {
  if (g.start > 0 && s.ids[g.start - 1] === s.ids[g.end - 1]) {
    set(s, --g.start, 1);
    set(s, --g.end, 0);
    while (ch(s, g.start - 1)) g.start--;
    return true;
  }
  return false;
}

const MAX_INDENT = 200;
const MAX_BLANKS = 20;
const INDENT_HEURISTIC_MAX_SLIDING = 100;

/** Indent width of a line (tabs to multiples of 8), -1 for a line of whitespace only. */
function indentOf(line: string): number {
  let ret = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === 32) ret += 1;
    else if (c === 9) ret += 8 - (ret % 8);
    else if (c !== 10 && c !== 11 && c !== 12 && c !== 13) return ret;
    if (ret >= MAX_INDENT) return MAX_INDENT;
  }
  return -1;
}

interface Score {
  effectiveIndent: number;
  penalty: number;
}

function addSplit(s: Side, split: number, score: Score, indents: Int32Array): void {
  const eof = split >= s.n;
  const indent = eof ? -1 : indents[split]!;
  let preBlank = 0, preIndent = -1;
  for (let i = split - 1; i >= 0; i--) {
    preIndent = indents[i]!;
    if (preIndent !== -1) break;
    preBlank++;
    if (preBlank === MAX_BLANKS) {
      preIndent = 0;
      break;
    }
  }
  let postBlankRun = 0, postIndent = -1;
  for (let i = split + 1; i < s.n; i++) {
    postIndent = indents[i]!;
    if (postIndent !== -1) break;
    postBlankRun++;
    if (postBlankRun === MAX_BLANKS) {
      postIndent = 0;
      break;
    }
  }
  if (preIndent === -1 && preBlank === 0) score.penalty += 1; // start of file
  if (eof) score.penalty += 21;
  const postBlank = indent === -1 ? 1 + postBlankRun : 0;
  const totalBlank = preBlank + postBlank;
  score.penalty += -30 * totalBlank + 6 * postBlank;
  const ind = indent !== -1 ? indent : postIndent;
  const anyBlanks = totalBlank !== 0;
  score.effectiveIndent += ind;
  if (ind === -1 || preIndent === -1 || ind === preIndent) return;
  if (ind > preIndent) score.penalty += anyBlanks ? 10 : -4;
  else if (postIndent !== -1 && postIndent > ind) score.penalty += anyBlanks ? 17 : 24;
  else score.penalty += anyBlanks ? 17 : 23;
}

const scoreCmp = (a: Score, b: Score) => 60 * (Math.sign(a.effectiveIndent - b.effectiveIndent)) + (a.penalty - b.penalty);

function compact(s: Side, o: Side): void {
  let indents: Int32Array | null = null;
  const g = groupInit(s);
  const go = groupInit(o);
  for (;;) {
    if (g.end !== g.start) {
      let groupsize: number;
      let earliestEnd: number;
      let endMatchingOther: number;
      do {
        groupsize = g.end - g.start;
        endMatchingOther = -1;
        while (slideUp(s, g)) groupPrevious(o, go);
        earliestEnd = g.end;
        if (go.end > go.start) endMatchingOther = g.end;
        while (slideDown(s, g)) {
          groupNext(o, go);
          if (go.end > go.start) endMatchingOther = g.end;
        }
      } while (groupsize !== g.end - g.start);
      if (g.end === earliestEnd) {
        // no shifting was possible
      } else if (endMatchingOther !== -1) {
        while (go.end === go.start) {
          slideUp(s, g);
          groupPrevious(o, go);
        }
      } else {
        if (!indents) {
          indents = new Int32Array(s.n);
          for (let i = 0; i < s.n; i++) indents[i] = indentOf(s.recs[i]!);
        }
        let shift = Math.max(earliestEnd, g.end - groupsize - 1, g.end - INDENT_HEURISTIC_MAX_SLIDING);
        let best = -1;
        let bestScore: Score = { effectiveIndent: 0, penalty: 0 };
        for (; shift <= g.end; shift++) {
          const score = { effectiveIndent: 0, penalty: 0 };
          addSplit(s, shift, score, indents);
          addSplit(s, shift - groupsize, score, indents);
          if (best === -1 || scoreCmp(score, bestScore) <= 0) {
            bestScore = score;
            best = shift;
          }
        }
        while (g.end > best) {
          slideUp(s, g);
          groupPrevious(o, go);
        }
      }
    }
    if (!groupNext(s, g)) break;
    groupNext(o, go);
  }
}

/**
 * The 1-based numbers of the lines of `newText` that are new relative to `oldText` (added or
 * changed), as `git diff -U0` reports them.
 */
export function addedLines(oldText: string, newText: string, budget = WORK_BUDGET): Set<number> {
  const out = new Set<number>();
  if (oldText === newText) return out;
  const intern = new Map<string, number>();
  const a = side(splitLines(oldText), intern);
  const b = side(splitLines(newText), intern);
  const size = 2 * (Math.ceil((a.n + b.n) / 2) + 2);
  compare(a, b, 0, a.n, 0, b.n, new Int32Array(size), new Int32Array(size), { left: budget });
  compact(a, b);
  compact(b, a);
  for (let j = 0; j < b.n; j++) if (ch(b, j)) out.add(j + 1);
  return out;
}
