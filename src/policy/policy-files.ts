// The policy's files checked as the gate will read them (issue 48): the policy itself, then the
// allow file, the fixture lock and the flake ledger it names. Each problem names the file and
// the line, so a typo is refused where it is made (rule `policy`, src/policy/rules/policy.ts)
// or found before anyone pushes it (`patchgate policy check`, src/commands/policy.ts), instead
// of surfacing as every later push failing. The ledger is checked here as far as it parses;
// its expiries and revivals are the ledger rule's (and `patchgate ledger check`'s).

import { ConfigError, PolicyFileError, errorMessage } from '../errors.js';
import { parseLock } from '../fixtures/lock.js';
import { parseLedger } from '../ledger/ledger.js';
import { defaultPolicy, policyFromText, POLICY_PATH, type Policy } from './config.js';
import { keyLine, parseErrorLine } from './json-lines.js';
import { separationProblems } from './classes.js';

export type PolicyFileKind = 'policy' | 'allow' | 'lock' | 'ledger';

export interface PolicyFileProblem {
  path: string;
  /** 1-based; null when the problem is the file as a whole (not a file, unreadable). */
  line: number | null;
  message: string;
}

/** One file to check: its kind and path. */
export interface PolicyFile {
  kind: PolicyFileKind;
  path: string;
}

/** The files a policy names, itself first (an agent class's own allow file and lock too, once each). */
export function filesOf(policy: Policy): PolicyFile[] {
  const out: PolicyFile[] = [
    { kind: 'policy', path: POLICY_PATH },
    { kind: 'allow', path: policy.contract.allowFile },
    { kind: 'lock', path: policy.fixtures.lock },
    { kind: 'ledger', path: policy.ledger.path },
  ];
  for (const c of Object.values(policy.classes)) {
    if (c.contract?.allowFile) out.push({ kind: 'allow', path: c.contract.allowFile });
    if (c.fixtures?.lock) out.push({ kind: 'lock', path: c.fixtures.lock });
  }
  return out.filter((f, i) => out.findIndex((g) => g.path === f.path) === i);
}

const HEX64 = /^[0-9a-f]{64}$/i;

/** The problems of one file's text (empty: it parses and validates). */
export function problemsOf(file: PolicyFile, text: string, source = file.path): PolicyFileProblem[] {
  const { kind, path } = file;
  if (kind === 'policy') {
    try {
      const policy = policyFromText(text, source, path);
      // Separation of duties (issue 50): no class may write both a contract root and a test or oracle path.
      return separationProblems(policy).map((p) => ({ path, line: keyLine(text, p.keyPath) ?? keyLine(text, []), message: `${p.keyPath.join('.')}: ${p.message}` }));
    } catch (e) {
      if (e instanceof PolicyFileError) return [{ path, line: e.line, message: e.detail }];
      throw e;
    }
  }
  if (kind === 'allow') {
    // The contract rule ignores a line that is not a digest: a typo in one would never match.
    const out: PolicyFileProblem[] = [];
    text.split(/\r?\n/).forEach((raw, i) => {
      const word = raw.replace(/#.*/, '').trim();
      if (word && !HEX64.test(word)) out.push({ path, line: i + 1, message: `not a sha256 digest: ${JSON.stringify(word.slice(0, 80))} (one digest per line; # starts a comment)` });
    });
    return out;
  }
  if (kind === 'lock') {
    try {
      parseLock(text, source);
      return [];
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      const detail = e.message.slice(`CONFIG: ${source}: `.length);
      if (e.key === source) {
        const line = e.cause !== undefined ? parseErrorLine(text, e.cause) : keyLine(text, []);
        return [{ path, line, message: detail }];
      }
      // The message names the entry already (`a.json: value must be …`).
      return [{ path, line: keyLine(text, [e.key.slice(`${source}: `.length)]), message: detail }];
    }
  }
  return parseLedger(text).problems.map((p) => ({ path, line: p.line, message: `${p.messageId}: ${p.detail}` }));
}

/** How the files are read: a revision's tree or a work tree. Null: the file is absent; a string: its text. */
export type PolicyFileReader = (path: string) => Promise<{ text: string } | { notFile: string } | null>;

export interface PolicyFilesReport {
  /** The policy read, or null when it is broken (the other files were then checked where the defaults put them). */
  policy: Policy | null;
  /** The files that exist and were checked. */
  checked: string[];
  problems: PolicyFileProblem[];
}

/** Every problem of the policy file and the files it names (where the defaults put them, when the policy itself is broken). */
export async function checkPolicyFiles(read: PolicyFileReader, source: (path: string) => string = (p) => p): Promise<PolicyFilesReport> {
  const problems: PolicyFileProblem[] = [];
  const checked: string[] = [];
  const one = async (file: PolicyFile): Promise<string | null> => {
    let got: Awaited<ReturnType<PolicyFileReader>>;
    try {
      got = await read(file.path);
    } catch (err) {
      problems.push({ path: file.path, line: null, message: `could not be read: ${errorMessage(err)}` });
      checked.push(file.path);
      return null;
    }
    if (!got) return null;
    checked.push(file.path);
    if ('notFile' in got) {
      problems.push({ path: file.path, line: null, message: `a ${got.notFile}, not a file` });
      return null;
    }
    problems.push(...problemsOf(file, got.text, source(file.path)));
    return got.text;
  };
  const text = await one({ kind: 'policy', path: POLICY_PATH });
  let policy: Policy | null = defaultPolicy();
  if (text !== null && problems.length) policy = null;
  else if (text !== null) policy = policyFromText(text, source(POLICY_PATH));
  for (const file of filesOf(policy ?? defaultPolicy()).slice(1)) await one(file);
  return { policy, checked, problems };
}

/** A problem as one line: `path:line: message`. */
export function problemLine(p: PolicyFileProblem): string {
  return `${p.path}${p.line !== null ? `:${p.line}` : ''}: ${p.message}`;
}
