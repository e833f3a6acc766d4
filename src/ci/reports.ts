// Test results for `patchgate ci`, read only from structured reports: JUnit XML files (pytest
// --junitxml, node --test-reporter=junit, jest-junit, vitest) and TAP 13/14 streams (node
// --test-reporter=tap, node-tap). Never scraped from free text. This module also defines the
// test id scheme that the baseline and the flake ledger key on (see docs/ci.md).

import { XMLParser, XMLValidator } from 'fast-xml-parser';

export type TestStatus = 'passed' | 'failed' | 'skipped';

export interface TestResult {
  id: string;
  status: TestStatus;
  /** First line of the failure or skip message, when the report has one. */
  message?: string;
  /** A TAP `# TODO` point: it does not count as a failure, nor as a test that ran. */
  todo?: boolean;
}

export interface ParsedReport {
  format: 'junit' | 'tap' | 'jest-json';
  tests: TestResult[];
  /** Reasons the report cannot be trusted as complete (truncated, bailed out, plan mismatch). */
  problems: string[];
  /** Ids that occurred more than once; later copies were renamed `id #2`, `id #3`, ... */
  duplicates: string[];
}

function firstLine(s: unknown): string | undefined {
  if (typeof s !== 'string') return undefined;
  const line = s.trim().split('\n')[0]?.trim();
  return line ? line.slice(0, 300) : undefined;
}

/** Give every repeated id a ` #n` suffix in report order, so no result hides another. */
export function uniqueIds(tests: TestResult[]): { tests: TestResult[]; duplicates: string[] } {
  const seen = new Map<string, number>();
  const dups = new Set<string>();
  const out = tests.map((t) => {
    const n = (seen.get(t.id) ?? 0) + 1;
    seen.set(t.id, n);
    if (n === 1) return t;
    dups.add(t.id);
    return { ...t, id: `${t.id} #${n}` };
  });
  return { tests: out, duplicates: [...dups] };
}

// ---------------------------------------------------------------------------------- JUnit

/** One `<testcase>` before its id is decided. */
export interface JUnitCase {
  classname: string;
  /** Names of enclosing `<testsuite>` elements that are test groups, outermost first. */
  groups: string[];
  name: string;
  status: TestStatus;
  message?: string;
}

type XNode = Record<string, unknown> & { ':@'?: Record<string, string> };

function tagOf(n: XNode): string | null {
  for (const k of Object.keys(n)) if (k !== ':@') return k;
  return null;
}

function childrenOf(n: XNode, tag: string): XNode[] {
  const c = n[tag];
  return Array.isArray(c) ? (c as XNode[]) : [];
}

function textOf(nodes: XNode[]): string {
  return nodes.map((n) => (typeof n['#text'] === 'string' ? n['#text'] : '')).join('');
}

/**
 * Parse a JUnit XML document into test cases. Throws an Error when the text is not
 * well-formed XML or has no `<testsuites>`/`<testsuite>` root.
 *
 * A `<testsuite>` is a *container* (left out of ids) when it carries a `timestamp`
 * attribute, as the per-run or per-file suites of pytest, jest-junit, vitest and mocha do,
 * or when it is the outermost group and its name equals the case's classname; node's built-in reporter writes a
 * timestamp-less `<testsuite>` for every test that has subtests, and those names are
 * part of the id.
 */
export function parseJUnit(xml: string): JUnitCase[] {
  // No runner writes a DTD; one in a report can only be there to expand entities.
  if (/<!DOCTYPE/i.test(xml)) throw new Error('a DOCTYPE is not allowed in a JUnit report');
  const valid = XMLValidator.validate(xml);
  if (valid !== true) throw new Error(`not well-formed XML (line ${valid.err.line}: ${valid.err.msg})`);
  const parser = new XMLParser({
    ignoreAttributes: false, attributeNamePrefix: '', preserveOrder: true,
    parseAttributeValue: false, parseTagValue: false, trimValues: false, ignoreDeclaration: true, ignorePiTags: true,
    // Numeric character references too: pytest writes a message's newlines as &#10;, and its first line is what is shown.
    htmlEntities: true,
  });
  const doc = parser.parse(xml) as XNode[];
  const roots = doc.filter((n) => {
    const t = tagOf(n);
    return t === 'testsuites' || t === 'testsuite';
  });
  if (roots.length !== 1) throw new Error(roots.length ? 'more than one root element' : 'no <testsuites> or <testsuite> root element');
  const cases: JUnitCase[] = [];
  const walkSuite = (suite: XNode, groups: string[]): void => {
    for (const child of childrenOf(suite, tagOf(suite)!)) {
      const tag = tagOf(child);
      if (tag === 'testcase') cases.push(readCase(child, groups));
      else if (tag === 'testsuite') {
        const a = child[':@'] ?? {};
        const isContainer = a.timestamp !== undefined || !a.name;
        walkSuite(child, isContainer ? groups : [...groups, a.name!]);
        // A failure or error on the suite itself (not on any case) is a failed test of its own.
        const own = childrenOf(child, 'testsuite').filter((n) => tagOf(n) === 'failure' || tagOf(n) === 'error');
        if (own.length) {
          const o = own[0]!;
          cases.push({ classname: '', groups, name: a.name ?? '(suite)', status: 'failed', message: firstLine(o[':@']?.message) ?? firstLine(textOf(childrenOf(o, tagOf(o)!))) });
        }
      }
    }
  };
  const root = roots[0]!;
  // A lone <testsuite> root is walked as the only child of a synthetic <testsuites>.
  walkSuite(tagOf(root) === 'testsuite' ? ({ testsuites: [root] } as XNode) : root, []);
  return cases.map((c) => (c.groups.length && c.groups[0] === c.classname ? { ...c, groups: c.groups.slice(1) } : c));
}

function readCase(n: XNode, groups: string[]): JUnitCase {
  const a = n[':@'] ?? {};
  const kids = childrenOf(n, 'testcase');
  const fail = kids.find((k) => tagOf(k) === 'failure' || tagOf(k) === 'error');
  const skip = kids.find((k) => tagOf(k) === 'skipped');
  const status: TestStatus = fail ? 'failed' : skip ? 'skipped' : 'passed';
  const m = fail ?? skip;
  const message = m ? firstLine(m[':@']?.message) ?? firstLine(textOf(childrenOf(m, tagOf(m)!))) : undefined;
  return { classname: a.classname ?? '', groups, name: a.name ?? '', status, ...(message ? { message } : {}) };
}

/**
 * Candidate pytest node-id prefixes for a dotted classname: `tests.test_x.TestA` may be the
 * file `tests/test_x.py` with class `TestA`, or `tests/test_x/TestA.py`, ... longest first.
 */
export function pytestCandidates(classname: string): Array<{ file: string; rest: string[] }> {
  if (!/^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$/.test(classname)) return [];
  const parts = classname.split('.');
  const out: Array<{ file: string; rest: string[] }> = [];
  for (let k = parts.length; k >= 1; k--) out.push({ file: `${parts.slice(0, k).join('/')}.py`, rest: parts.slice(k) });
  return out;
}

/**
 * Ids for JUnit cases: `classname::group > ... > name`. When the classname is a dotted
 * Python module path whose file exists in the repository (`tests.test_x` and
 * `tests/test_x.py`), it becomes the pytest node id `tests/test_x.py::Class::name`.
 */
export async function junitResults(cases: JUnitCase[], fileExists: (path: string) => Promise<boolean>): Promise<TestResult[]> {
  const known = new Map<string, string | null>();
  const prefixOf = async (classname: string): Promise<string> => {
    if (known.has(classname)) return known.get(classname) ?? classname;
    let found: string | null = null;
    for (const c of pytestCandidates(classname)) {
      if (await fileExists(c.file)) {
        found = [c.file, ...c.rest].join('::');
        break;
      }
    }
    known.set(classname, found);
    return found ?? classname;
  };
  const out: TestResult[] = [];
  for (const c of cases) {
    const path = [...c.groups, c.name].join(' > ');
    const id = c.classname ? `${await prefixOf(c.classname)}::${path}` : path;
    out.push({ id, status: c.status, ...(c.message ? { message: c.message } : {}) });
  }
  return out;
}

// ------------------------------------------------------------------------------------ TAP

interface TapPoint {
  ok: boolean;
  desc: string;
  directive?: 'skip' | 'todo';
  reason?: string;
  children: TapPoint[];
  /** The message of a failure, from its YAML block (`message:` or `error:`). */
  message?: string;
}

interface TapLevel {
  points: TapPoint[];
  plan: number | null;
  /** Name from the last `# Subtest: NAME` comment at this level. */
  subtestName: string | null;
}

function unescapeTap(s: string): string {
  return s.replace(/\\([\\#])/g, '$1');
}

/** Split `desc # SKIP why` at the first unescaped `#`; what follows is a directive or a comment. */
function splitDirective(rest: string): { desc: string; directive?: 'skip' | 'todo'; reason?: string } {
  let i = 0;
  for (; i < rest.length; i++) {
    if (rest[i] === '\\') {
      i++;
      continue;
    }
    if (rest[i] === '#') break;
  }
  const desc = unescapeTap(rest.slice(0, i).trim());
  if (i >= rest.length) return { desc };
  const tail = rest.slice(i + 1).trim();
  const m = /^(skip|todo)\S*(?:\s+(.*))?$/i.exec(tail);
  if (!m) return { desc };
  return { desc, directive: m[1]!.toLowerCase() as 'skip' | 'todo', ...(m[2] ? { reason: m[2].trim() } : {}) };
}

const POINT_RE = /^(not )?ok\b(?:\s+(\d+))?(?:\s*-(?=\s|$))?\s*(.*)$/;

/**
 * Parse a TAP 13/14 stream. The report starts at the first `TAP version 13|14` line (text
 * before it, such as npm's banner, is ignored); a stream without one has no tests. Subtests
 * are indented by four spaces and close with their parent's test point; YAML diagnostic
 * blocks are skipped except for a failure's message. A missing top-level plan, a plan that
 * does not match the points, `Bail out!` or an unclosed subtest makes the report incomplete.
 */
export function parseTapTree(text: string): { points: TapPoint[]; problems: string[]; found: boolean } {
  const lines = text.split('\n').map((l) => l.replace(/\r$/, ''));
  const start = lines.findIndex((l) => /^TAP version 1[34]\s*$/.test(l));
  if (start < 0) return { points: [], problems: [], found: false };
  const problems: string[] = [];
  const levels: TapLevel[] = [{ points: [], plan: null, subtestName: null }];
  let yaml: { indent: number; point: TapPoint } | null = null;
  let lastPoint: { indent: number; point: TapPoint } | null = null;
  let bailed = false;

  const closeTo = (depth: number): TapPoint[] => {
    // Pop levels deeper than `depth`; return the points of level depth+1 (the subtests of
    // the next point at `depth`). Deeper orphans fold into a synthetic parent.
    let carried: TapPoint[] = [];
    while (levels.length - 1 > depth) {
      const lvl = levels.pop()!;
      checkPlan(lvl, levels.length);
      const pts = [...lvl.points];
      if (carried.length) {
        problems.push(`a subtest at depth ${levels.length + 1} has no closing test point`);
        pts.push({ ok: carried.every((p) => p.ok || p.directive === 'todo'), desc: lvl.subtestName ?? '(subtest)', children: carried });
      }
      carried = pts;
    }
    return carried;
  };
  const checkPlan = (lvl: TapLevel, depth: number): void => {
    if (lvl.plan !== null && lvl.plan !== lvl.points.length) problems.push(`plan 1..${lvl.plan} at depth ${depth} but ${lvl.points.length} test point(s)`);
  };

  for (let n = start + 1; n < lines.length && !bailed; n++) {
    const line = lines[n]!;
    if (!line.trim()) continue;
    const indent = line.length - line.trimStart().length;
    const body = line.slice(indent);
    if (yaml) {
      if (indent === yaml.indent && /^\.\.\.\s*$/.test(body)) yaml = null;
      else if (!yaml.point.ok && !yaml.point.message && indent === yaml.indent) {
        const m = /^(message|error):\s*(.*)$/.exec(body);
        if (m) yaml.point.message = firstLine(m[2]!.replace(/^['"]|['"]$/g, ''));
      }
      continue;
    }
    if (lastPoint && indent === lastPoint.indent + 2 && /^---\s*$/.test(body)) {
      yaml = { indent, point: lastPoint.point };
      continue;
    }
    if (indent % 4 !== 0) continue; // not TAP at any level we know: ignore
    const depth = indent / 4;
    if (/^Bail out!/.test(body)) {
      problems.push(`Bail out!${body.slice(9) ? ` (${body.slice(9).trim()})` : ''}`);
      bailed = true;
      break;
    }
    const pm = POINT_RE.exec(body);
    const plan = /^1\.\.(\d+)(\s*#.*)?$/.exec(body);
    const subtest = /^#\s*Subtest:\s*(.*)$/.exec(body);
    if (!pm && !plan && !subtest) continue; // comments, pragmas, stray output
    if (depth > levels.length - 1) {
      // Lines of a deeper subtest: open the levels.
      while (levels.length - 1 < depth) levels.push({ points: [], plan: null, subtestName: null });
    }
    if (pm) {
      const children = closeTo(depth);
      const d = splitDirective(pm[3] ?? '');
      const point: TapPoint = { ok: !pm[1], desc: d.desc, children, ...(d.directive ? { directive: d.directive } : {}), ...(d.reason ? { reason: d.reason } : {}) };
      levels[depth]!.points.push(point);
      levels[depth]!.subtestName = null;
      lastPoint = { indent, point };
    } else if (plan) {
      const orphans = closeTo(depth);
      if (orphans.length) {
        problems.push(`a subtest at depth ${depth + 1} has no closing test point`);
        levels[depth]!.points.push({ ok: orphans.every((p) => p.ok), desc: levels[depth]!.subtestName ?? '(subtest)', children: orphans });
      }
      levels[depth]!.plan = Number(plan[1]);
      lastPoint = null;
    } else if (subtest) {
      // A subtest header at this level names the next point here; deeper lines follow.
      const orphans = closeTo(depth);
      if (orphans.length) {
        problems.push(`a subtest at depth ${depth + 1} has no closing test point`);
        levels[depth]!.points.push({ ok: orphans.every((p) => p.ok), desc: levels[depth]!.subtestName ?? '(subtest)', children: orphans });
      }
      levels[depth]!.subtestName = unescapeTap(subtest[1]!.trim());
      lastPoint = null;
    }
  }
  const orphans = closeTo(0);
  if (orphans.length) {
    problems.push('a subtest at depth 1 has no closing test point (the stream ended early)');
    levels[0]!.points.push({ ok: orphans.every((p) => p.ok), desc: levels[0]!.subtestName ?? '(subtest)', children: orphans });
  }
  if (!bailed) {
    if (levels[0]!.plan === null) problems.push('no top-level plan (1..N): the stream ended early');
    else checkPlan(levels[0]!, 0);
  }
  return { points: levels[0]!.points, problems, found: true };
}

/**
 * Flatten TAP points into results. A point with subtests is a group: its id is a prefix,
 * and it counts as a failed test of its own only when it failed and none of its subtests
 * did (an error after the subtests). Ids join descriptions with ` > `.
 */
export function tapResults(points: TapPoint[]): TestResult[] {
  const out: TestResult[] = [];
  const walk = (pts: TapPoint[], prefix: string[]): boolean => {
    let anyFailed = false;
    for (const p of pts) {
      const path = [...prefix, p.desc || '(unnamed)'];
      const id = path.join(' > ');
      if (p.children.length) {
        const childFailed = walk(p.children, path);
        anyFailed ||= childFailed;
        if (!p.ok && p.directive !== 'todo' && !childFailed) {
          out.push({ id, status: 'failed', ...(p.message ? { message: p.message } : {}) });
          anyFailed = true;
        }
        continue;
      }
      if (p.directive === 'skip') out.push({ id, status: 'skipped', ...(p.reason ? { message: p.reason } : {}) });
      else if (p.directive === 'todo') out.push({ id, status: 'skipped', todo: true, ...(p.reason ? { message: p.reason } : {}) });
      else if (p.ok) out.push({ id, status: 'passed' });
      else {
        out.push({ id, status: 'failed', ...(p.message ? { message: p.message } : {}) });
        anyFailed = true;
      }
    }
    return anyFailed;
  };
  walk(points, []);
  return out;
}

export function parseTap(text: string): ParsedReport {
  const tree = parseTapTree(text);
  const problems = tree.found ? tree.problems : ['no TAP stream on stdout (no "TAP version 13" or "TAP version 14" line)'];
  const { tests, duplicates } = uniqueIds(tapResults(tree.points));
  return { format: 'tap', tests, problems, duplicates };
}

export async function parseJUnitReport(xml: string, fileExists: (path: string) => Promise<boolean>): Promise<ParsedReport> {
  const cases = parseJUnit(xml);
  const { tests, duplicates } = uniqueIds(await junitResults(cases, fileExists));
  return { format: 'junit', tests, problems: [], duplicates };
}

// ------------------------------------------------------------------------ jest --json

/**
 * jest's own `--json --outputFile` report (the one patchgate asks jest for): each assertion
 * result as `file::ancestor > ... > title`, the file relative to `rootDir`. A file that failed
 * to run (no assertion results) is a failed test `file::(file)`. Throws on a malformed report.
 */
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;

export function parseJestJson(text: string, rootDir: string): ParsedReport {
  const raw = JSON.parse(text) as { testResults?: unknown };
  if (!raw || typeof raw !== 'object' || !Array.isArray(raw.testResults)) throw new Error('not a jest --json report (no testResults)');
  const rel = (p: string) => (p.startsWith(rootDir + '/') ? p.slice(rootDir.length + 1) : p);
  const out: TestResult[] = [];
  for (const f of raw.testResults as Array<Record<string, unknown>>) {
    const file = rel(String(f.name ?? ''));
    const asserts = Array.isArray(f.assertionResults) ? (f.assertionResults as Array<Record<string, unknown>>) : [];
    for (const a of asserts) {
      const names = [...(Array.isArray(a.ancestorTitles) ? a.ancestorTitles.map(String) : []), String(a.title ?? '')];
      const status: TestStatus = a.status === 'passed' ? 'passed' : a.status === 'failed' ? 'failed' : 'skipped';
      const msg = Array.isArray(a.failureMessages) ? firstLine(String(a.failureMessages[0] ?? '').replace(ANSI, '')) : undefined;
      out.push({ id: `${file}::${names.join(' > ')}`, status, ...(msg ? { message: msg } : {}) });
    }
    if (!asserts.length && f.status === 'failed') out.push({ id: `${file}::(file)`, status: 'failed', ...(firstLine(String(f.message ?? '').replace(ANSI, '')) ? { message: firstLine(String(f.message ?? '').replace(ANSI, ''))! } : {}) });
  }
  const { tests, duplicates } = uniqueIds(out);
  return { format: 'jest-json', tests, problems: [], duplicates };
}
