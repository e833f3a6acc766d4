// Agent classes (issue 50): separation of duties between agents. A policy's `classes` give each
// kind of agent credential its own writable and protected paths and its own contract roots,
// allow file and fixture lock; the top level is the default class, so a policy without
// `classes` means what it always meant. A push is judged under its pusher's class
// (policyForClass): every rule then reads that class's view of the policy, and the carried-
// commits cache keys on its digest, so a commit accepted for one class is judged again for
// another. The invariant the whole gate stands on, whoever changes the code must not be able to
// change what judges it, is checked here (separationProblems): no class may write both a
// contract root and a test or oracle path. Where a policy is pushed (rule `policy`) and in
// `patchgate policy check` a breach is a problem naming the class, the two paths and the
// patterns; a trusted policy with one (moved by hand, or older than this check) refuses a named
// class's pushes (src/policy/engine.ts).

import { DEFAULT_CLASS, DEFAULT_PROTECTED, type Policy } from './config.js';
import { firstMatch, protectedMatcher, writableMatcher } from './match.js';

export { DEFAULT_CLASS };

/** The class names a policy defines, the default class first. */
export function classNames(policy: Policy): string[] {
  return [DEFAULT_CLASS, ...Object.keys(policy.classes)];
}

/** Whether `name` is a class of this policy (the default class always is). */
export function hasClass(policy: Policy, name: string | null | undefined): boolean {
  return !name || name === DEFAULT_CLASS || Object.hasOwn(policy.classes, name);
}

/**
 * The policy as one class sees it: the class's writable and protected paths, contract roots,
 * allow file and fixture lock in place of the top level's, `agentClass` set (so its digest,
 * and the carried-commits cache's key, differ by class). The default class (or none): the
 * policy itself. Throws when the class is not defined: check hasClass first.
 */
export function policyForClass(policy: Policy, name: string | null | undefined): Policy {
  if (!name || name === DEFAULT_CLASS) return policy;
  const c = Object.hasOwn(policy.classes, name) ? policy.classes[name] : undefined;
  if (!c) throw new Error(`agent class ${JSON.stringify(name)} is not defined in ${policy.source}`);
  return {
    ...policy,
    agentClass: name,
    writable: c.writable,
    protected: c.protected ?? policy.protected,
    contract: { ...policy.contract, ...(c.contract?.roots ? { roots: c.contract.roots } : {}), ...(c.contract?.allowFile ? { allowFile: c.contract.allowFile } : {}) },
    fixtures: { ...policy.fixtures, ...(c.fixtures?.lock ? { lock: c.fixtures.lock } : {}) },
  };
}

/** One class that may write both sides: where in the policy, and why, with an example path of each. */
export interface SeparationProblem {
  className: string;
  keyPath: Array<string | number>;
  message: string;
}

/**
 * Paths a test, fixture or runner configuration lives at, relative to a folder: probed under
 * every folder a class may write, so `src/**` meets `src/x.test.ts` and `src/__tests__/x.js`.
 */
const ORACLE_LEAVES = [
  'tests/x.py', 'test/x.js', 'x.test.ts', 'x.spec.js', 'test_x.py', 'x_test.py', 'conftest.py', '__tests__/x.js', '__mocks__/x.js',
  'setupTests.js', 'sitecustomize.py', 'usercustomize.py', 'x.pth', '.gitattributes', 'pytest.ini', 'package.json', 'pyproject.toml',
  'jest.config.js', 'vitest.config.ts', '.mocharc.json', '.taprc', 'Makefile', 'tox.ini', 'setup.cfg', 'ci/x', '.github/x',
];
/** Source files, probed under every contract root and every writable folder. */
const SOURCE_LEAVES = ['x.ts', 'x.js', 'x.py', 'a/x.ts', 'a/x.py'];

/** A concrete path a glob matches (its wildcards filled with plain names), or null when the glob has classes or braces. */
function instantiate(glob: string): string[] {
  if (/[[\]{}()!+@]/.test(glob)) return [];
  const fill = (g: string, deep: string): string => g.replace(/\*\*\//g, deep).replace(/\/\*\*$/, '/x').replace(/\*\*/g, 'x').replace(/\*/g, 'x').replace(/\?/g, 'x');
  return [...new Set([fill(glob, ''), fill(glob, 'a/')])].filter((p) => p && !p.endsWith('/'));
}

/** The literal folder a glob starts with (`src/` for `src/**`, `` for `**\/x`). */
function literalDir(glob: string): string {
  const wild = glob.search(/[*?[{(!]/);
  const head = wild < 0 ? glob : glob.slice(0, wild);
  return head.slice(0, head.lastIndexOf('/') + 1);
}

/** Whether `path` is under a contract root (`src/` or `src`: a folder prefix; a glob root: matched). */
function rootMatcher(roots: readonly string[]): (path: string) => string | undefined {
  return (path) => roots.find((r) => (/[*?[{]/.test(r) ? writableMatcher([r.endsWith('/') ? `${r}**` : r])(path) : path.startsWith(r.endsWith('/') ? r : `${r}/`)));
}

/**
 * Every class (the default first) that may write both a contract root and a test or oracle
 * path: the protected defaults (DEFAULT_PROTECTED: tests, CI, runner configuration) and the
 * gate's own files (the policy, every allow file, lock and ledger). "May write" is probed with
 * concrete paths made from the class's writable patterns, the contract roots and the usual test
 * and runner file names under each folder it may write; a probe is writable when it matches
 * `writable` and not `protected` (nor the gate's files), exactly as the write-block reads them.
 * The default policy has no problem by construction: everything DEFAULT_PROTECTED names is
 * protected in it.
 */
export function separationProblems(policy: Policy): SeparationProblem[] {
  // A trusted policy object lives as long as its tip is the trusted tip (src/server/hook/judge.ts): checked once.
  let out = checked.get(policy);
  if (!out) checked.set(policy, (out = findProblems(policy)));
  return out;
}

const checked = new WeakMap<Policy, SeparationProblem[]>();

function findProblems(policy: Policy): SeparationProblem[] {
  const out: SeparationProblem[] = [];
  const oraclePatterns = [...DEFAULT_PROTECTED, ...policy.oracleFiles];
  const isOracle = protectedMatcher(oraclePatterns);
  for (const name of classNames(policy)) {
    const p = policyForClass(policy, name);
    const blocked = [...p.protected, ...p.oracleFiles];
    const isBlocked = protectedMatcher(blocked);
    const isWritable = writableMatcher(p.writable);
    const canWrite = (path: string): boolean => isWritable(path) && !isBlocked(path);
    const underRoot = rootMatcher(p.contract.roots);
    const dirs = new Set<string>(['', ...p.writable.map(literalDir), ...p.contract.roots.map((r) => (r.endsWith('/') ? r : `${r}/`)).filter((r) => !/[*?[{]/.test(r))]);
    const probes = new Set<string>();
    for (const w of p.writable) for (const x of instantiate(w)) probes.add(x);
    for (const pat of oraclePatterns) for (const x of instantiate(pat)) probes.add(x);
    for (const d of dirs) for (const leaf of [...ORACLE_LEAVES, ...SOURCE_LEAVES]) probes.add(d + leaf);
    const code = [...probes].find((x) => canWrite(x) && !isOracle(x) && underRoot(x));
    const oracle = [...probes].find((x) => canWrite(x) && isOracle(x));
    if (!code || !oracle) continue;
    const keyPath = name === DEFAULT_CLASS ? ['writable'] : ['classes', name, 'writable'];
    const who = name === DEFAULT_CLASS ? 'the default class (the top-level writable and protected)' : `class ${name}`;
    out.push({
      className: name,
      keyPath,
      message: `${who} may write both the contract root ${underRoot(code)} (e.g. ${code}, matches ${firstMatch(p.writable, code, false) ?? '?'}) and the test or oracle path ${oracle} (matches ${firstMatch(oraclePatterns, oracle, true) ?? '?'}); no credential may change both the code and what judges it: give the tests to another class, or protect them in this one`,
    });
  }
  return out;
}
