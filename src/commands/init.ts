// `patchgate init [--repo DIR]`: scaffold a project's gate files in its work tree, so a person
// starts from the defaults written out instead of guessing: ci/patchgate.json (every default;
// each key is explained in docs/policy.md), an empty ci/contract.allow, ci/fixtures.lock from
// any tests/fixtures, and an empty flake ledger. It never overwrites: any existing target
// refuses the whole run before anything is written. It prints the commit a person makes and
// the next three steps.

import { existsSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { defaultPolicy, POLICY_PATH } from '../policy/config.js';
import { fixtureDigest } from '../fixtures/lock.js';
import { buildLock, serializeLock } from '../fixtures/worktree.js';
import { TAMPER_CHECKS } from '../policy/tamper/checks.js';
import { REPO_NAME_RE } from '../server/repos.js';

export const FIXTURES_DIR = 'tests/fixtures';

/** The policy file's content: the defaults, in the schema's key order (no derived fields). */
export function defaultPolicyText(): string {
  const { oracleFiles: _o, source: _s, ...policy } = defaultPolicy();
  // Every tamper check by name with its default, so "every default written out" holds there too.
  const checks = Object.fromEntries(TAMPER_CHECKS.map((c) => [c, policy.tamperScan.checks[c] ?? 'refuse']));
  return JSON.stringify({ ...policy, tamperScan: { ...policy.tamperScan, checks } }, null, 2) + '\n';
}

/** The repository name the next steps use: the project folder's name, made a valid gate name. */
export function repoNameFor(root: string): string {
  const name = basename(resolve(root)).replace(/\.git$/, '').replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 100);
  return REPO_NAME_RE.test(name) ? name : 'app';
}

export async function runInit(args: { repo: string }): Promise<string[]> {
  const root = args.repo;
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new UsageError(`init: ${root} is not a folder (pass --repo DIR, the project's work tree)`);
  if (!existsSync(join(root, '.git'))) throw new UsageError(`init: ${root} is not a git work tree (run git init there first, or pass --repo DIR)`);
  const policy = defaultPolicy();
  const files: Array<{ path: string; text: string; note: string }> = [];
  files.push({ path: POLICY_PATH, text: defaultPolicyText(), note: 'the policy: every default written out (docs/policy.md explains each key)' });
  files.push({ path: policy.contract.allowFile, text: '', note: 'contract digests a person allowed (empty)' });
  const hasFixtures = existsSync(join(root, FIXTURES_DIR)) && statSync(join(root, FIXTURES_DIR)).isDirectory();
  let lockNote = `no ${FIXTURES_DIR}: an empty lock`;
  let lockText = '{}\n';
  if (hasFixtures) {
    const lock = await buildLock(root, [FIXTURES_DIR]);
    lockText = serializeLock(lock);
    lockNote = `${lock.size} fixture(s) under ${FIXTURES_DIR}, fixture digest ${fixtureDigest(lock)}`;
  }
  files.push({ path: policy.fixtures.lock, text: lockText, note: lockNote });
  files.push({ path: policy.ledger.path, text: '', note: 'the flake ledger (empty)' });
  const existing = files.filter((f) => existsSync(join(root, f.path))).map((f) => f.path);
  if (existing.length) throw new UsageError(`init: refusing to overwrite ${existing.join(', ')} in ${root}; nothing was written (move them away to start again)`);
  for (const f of files) {
    mkdirSync(dirname(join(root, f.path)), { recursive: true });
    writeFileSync(join(root, f.path), f.text, { flag: 'wx' });
  }
  const paths = files.map((f) => f.path);
  const name = repoNameFor(root);
  // The gate's data lives outside the work tree (a serve started here would put data/ in it).
  const data = '"$HOME/patchgate-data"';
  return [
    ...files.map((f) => `created ${f.path}: ${f.note}`),
    'commit them as a person (agents may never change these files):',
    `  git add ${paths.join(' ')} && git commit -m 'patchgate: policy, contract allow file, fixture lock, flake ledger'`,
    'next steps:',
    `  1. patchgate serve --data ${data} &   # the gate, its data outside this work tree (the first start writes admin-token there)`,
    `  2. patchgate repo create ${name} --data ${data} && patchgate token create alice --role human --data ${data} | tail -1`,
    `  3. git push http://alice:TOKEN@127.0.0.1:7005/${name}.git HEAD:main   # a person seeds the trusted branch (TOKEN: the last line of step 2)`,
  ];
}
