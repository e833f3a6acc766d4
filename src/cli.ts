#!/usr/bin/env node
// patchgate's command line: the pinned interface of DESIGN.md (check, serve, repo, token,
// audit, escalation, contract, fixtures, ledger, ci). Each command's work lives in src/commands/; this
// file only declares options and maps results to output and exit codes.

import yargs, { type Argv } from 'yargs';
import { hideBin } from 'yargs/helpers';
import { resolve } from 'node:path';
import { errorMessage, PatchgateError } from './errors.js';
import { tuneHeap } from './heap.js';

// Command modules load on first use: `token list` should not pay for loading TypeScript.
const check = () => import('./commands/check.js');
const contract = () => import('./commands/contract.js');
const fixtures = () => import('./commands/fixtures.js');
const ledger = () => import('./commands/ledger.js');
const policy = () => import('./commands/policy.js');
const admin = () => import('./commands/admin.js');
const ciCommand = () => import('./ci/command.js');
const hostCommand = () => import('./host/command.js');
const auditCp = () => import('./commands/audit-checkpoint.js');
const upstream = () => import('./commands/upstream.js');
const init = () => import('./commands/init.js');
import { defaultData, packageVersion, parseDays, parsePositiveInt } from './commands/args.js';
import { SERVE_SETTINGS, resolveServeConfig } from './server/serve-config.js';
import { usageErrorLines } from './commands/usage-error.js';

// A reader that stops early (`patchgate audit export | head -1`) closes the pipe: that ends the
// command quietly, with the status it had so far, instead of an EPIPE stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    throw err;
  });
}

const io = { out: (l: string) => void process.stdout.write(l + '\n'), err: (l: string) => void process.stderr.write(l + '\n') };
/** Arguments after `--`, as strings (yargs must not turn `1e3` into 1000). */
const afterDashes = (a: Record<string, unknown>): string[] => ((a['--'] as unknown[] | undefined) ?? []).map(String);

function out(lines: string[]): void {
  if (lines.length) process.stdout.write(lines.join('\n') + '\n');
}

/** Run a command body; an error prints one line and sets exit code 2. */
async function guarded(fn: () => Promise<number | void>): Promise<void> {
  try {
    const code = await fn();
    process.exitCode = code ?? 0;
  } catch (err) {
    const msg = err instanceof PatchgateError ? err.message : `unexpected error: ${errorMessage(err)}`;
    process.stderr.write(`patchgate: ${msg.split('\n')[0]}\n`);
    if (process.env.PATCHGATE_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    process.exitCode = 2;
  }
}

/**
 * `--json` on a command that prints lines (the `repo` commands): one JSON document on stdout,
 * `{"ok": true, "command", ...fields, "lines"}`, or on an error `{"ok": false, "command",
 * "error"}` (exit 2), so a script reads one object either way.
 */
async function jsonDoc(json: boolean, command: string, fn: () => Promise<string[]>, fields: () => Record<string, unknown> = () => ({})): Promise<void> {
  if (!json) return guarded(async () => out(await fn()));
  try {
    const lines = await fn();
    out([JSON.stringify({ ok: true, command, ...fields(), lines })]);
    process.exitCode = 0;
  } catch (err) {
    const msg = err instanceof PatchgateError ? err.message : `unexpected error: ${errorMessage(err)}`;
    out([JSON.stringify({ ok: false, command, error: msg.split('\n')[0] })]);
    process.exitCode = 2;
  }
}
const jsonOpt = { type: 'boolean', default: false, describe: 'print one JSON document: {"ok", "command", …, "lines"} (on an error {"ok": false, "error"})' } as const;

const repoOpt = { type: 'string', default: '.', describe: 'repository directory' } as const;
const dataOpt = { type: 'string', default: defaultData(), describe: 'data folder (repos, audit log, hook socket); env PATCHGATE_DATA' } as const;
const cpCredOpt = { type: 'string', describe: 'file whose first line is the checkpoint anchor\'s token (or user:token); else PATCHGATE_CHECKPOINT_CREDENTIAL' } as const;
const auditOpt = { type: 'string', describe: 'audit log: sqlite:PATH or postgres://… without a password (default: PATCHGATE_AUDIT_URL, else the log the data folder records in audit-location.json, else <data>/patchgate.db; either must be the recorded one; the password goes in that variable, PGPASSFILE or PGPASSWORD)' } as const;

export function buildCli(argv: string[]): Argv {
  const top: Argv = yargs(argv);
  return top
    .scriptName('patchgate')
    .usage('$0 <command> [options]\n\nA merge gate for patches written by AI coding agents.')
    .command('check', 'run the whole policy on a local repository (CI mode); exit 0 accept, 1 reject, 2 error', (y) => y
      .option('repo', repoOpt)
      .option('base', { type: 'string', demandOption: true, describe: 'trusted revision (policy, allow file and baseline are read from it)' })
      .option('head', { type: 'string', demandOption: true, describe: 'the revision to judge' })
      .option('role', { choices: ['agent', 'human'] as const, default: 'agent' as const })
      .option('ref', { type: 'string', describe: 'also apply the ref rules as if REF moved from base to head' })
      .option('json', { type: 'boolean', default: false }),
    (a) => guarded(async () => {
      const { runCheck, checkJson, checkExitCode, renderDecision } = await check();
      const d = await runCheck({ repo: resolve(a.repo), base: a.base, head: a.head, role: a.role, ref: a.ref });
      if (a.json) out([JSON.stringify(checkJson(d))]);
      else if (d.row === 'gate-error' && /^0+$/.test(d.newId) && d.reasons[0]) out([`patchgate: ${d.reasons[0].message}`, `  next step: ${d.remediation}`]);
      else out(renderDecision(d));
      return checkExitCode(d);
    }))
    .command('contract', 'print the public-API contract digest of a revision (last line)', (y) => y
      .option('repo', repoOpt)
      .option('rev', { type: 'string', default: 'HEAD' })
      .option('format', { choices: ['v1', 'seed'] as const, describe: 'digest format (default: the policy\'s, v1)' })
      .option('json', { type: 'boolean', default: false, describe: 'also print the rows as JSON' }),
    (a) => guarded(async () => out(await (await contract()).runContract({ repo: resolve(a.repo), rev: a.rev, format: a.format, json: a.json }))))
    .command('fixtures', 'the fixture lock: `fixtures lock DIR...` (a person\'s step) and `fixtures verify`', (y) => y
      .command('lock <dirs..>', 'write the lock from every file under DIR...', (y2) => y2
        .positional('dirs', { type: 'string', array: true, demandOption: true })
        .option('repo', repoOpt)
        .option('lock', { type: 'string', default: 'ci/fixtures.lock' }),
      (a) => guarded(async () => out(await (await fixtures()).runFixturesLock({ repo: resolve(a.repo), dirs: a.dirs as string[], lock: a.lock }))))
      .command('verify', 'check the work tree (or --rev) against the lock; exit 1 on drift', (y2) => y2
        .option('repo', repoOpt)
        .option('lock', { type: 'string', default: 'ci/fixtures.lock' })
        .option('rev', { type: 'string', describe: 'verify a commit instead of the work tree' })
        .option('json', { type: 'boolean', default: false, describe: 'one JSON object: {"ok", "drift": [{"kind", "path", "expected"?, "actual"?}], "lines"}' }),
      (a) => guarded(async () => {
        const r = await (await fixtures()).runFixturesVerify({ repo: resolve(a.repo), lock: a.lock, rev: a.rev });
        out(a.json ? [JSON.stringify({ ok: r.drift.length === 0, drift: r.drift, lines: r.lines })] : r.lines);
        return r.drift.length ? 1 : 0;
      }))
      .demandCommand(1, 'name a fixtures command: lock or verify'))
    .command('init', 'scaffold ci/patchgate.json, ci/contract.allow, ci/fixtures.lock and the flake ledger in a work tree (never overwrites)', (y) => y
      .option('repo', repoOpt),
    (a) => guarded(async () => out(await (await init()).runInit({ repo: resolve(a.repo) }))))
    .command('ci', 'check, then run the tests with a recorded seed, apply the ledger, print the decision table; exit 0 green, 1 red, 2 error', (y) => y
      .option('repo', repoOpt)
      .option('base', { type: 'string', demandOption: true, describe: 'trusted revision' })
      .option('head', { type: 'string', demandOption: true, describe: 'the revision under test (read from git objects into a sealed copy; only with ci.integrity "off" must --repo be checked out at it)' })
      .option('seed', { type: 'string', describe: 'run seed (default: random): replaces {seed} in CMD, is passed to pytest (patchgate_seed fixture, shuffles), vitest (--sequence.seed) and jest (--seed); exported as PATCHGATE_SEED only with ci.integrity "off"' })
      .option('junit', { type: 'string', describe: 'JUnit XML report CMD writes (default: TAP on CMD\'s stdout)' })
      .option('report', { type: 'string', describe: 'write a JSON report here' })
      .option('baseline', { type: 'string', describe: 'test ids of the last green run of the base (JSON)' })
      .option('write-baseline', { type: 'string', describe: 'after a green run, write the executed test ids here' })
      .option('holdout', { type: 'string', describe: 'held-out tests, run against the judged src/ after the visible suite: a git URL (the NAME-holdout repository, with a person\'s or CI token), a bare repository, or a folder' })
      .option('runs', { type: 'number', describe: 'runs of the suite, later ones shuffled (default: policy ci.runs, 2)' })
      .option('data', { type: 'string', describe: 'also record the run in that data folder\'s audit log (the one it records, else <data>/patchgate.db)' })
      .option('audit', auditOpt)
      .option('today', { type: 'string', describe: 'YYYY-MM-DD for ledger expiry (default: today, UTC)' })
      .option('verbose', { type: 'boolean', default: false, describe: 'show the runner\'s output, the whole decision table and every reason (default: a summary)' })
      .option('sandbox', { choices: ['bwrap', 'none'] as const, default: 'bwrap' as const, describe: 'strict runs: every test process under bubblewrap (no network, no parent /proc, only the sealed tree writable); none: the explicit opt-out, reported as not sandboxed' })
      .option('class', { type: 'string', describe: 'judge the static policy as a push of this agent class (ci/patchgate.json "classes"; default: the default class)' })
      .option('evidence', { type: 'boolean', default: false, describe: 'a test author\'s push (issue 50): instead of the suite, its new and changed tests must fail on the trusted tip (--base) and no test may be deleted or lose assertions; use with --class' })
      .usage('$0 ci --base REV --head REV [options] -- CMD...\n\nCMD (after --) runs the tests: pytest, node (--test), vitest or jest, run directly; npm test, npm run NAME, yarn test and pnpm test run the script the trusted revision\'s package.json names.')
      .example('$0 ci --base origin/main --head HEAD -- node --import=@tapjs/typescript/import --test --test-reporter=tap test/node/npm-script.test.ts', 'judge HEAD, then run patchgate\'s own node:test suite (green on this repository)')
      .example('$0 ci --base origin/main --head HEAD -- python3 -m pytest tests', 'a pytest project (src/ put first on the import path)')
      .example('$0 ci --evidence --class test-author --base origin/main --head agent/tests -- python3 -m pytest tests', 'a test author\'s push: its new tests must fail on main, and it may weaken no test')
      .example('$0 ci --base origin/main --head HEAD -- npm test', 'the trusted package.json\'s test script (e.g. vitest run), run directly')
      .parserConfiguration({ 'populate--': true, 'parse-positional-numbers': false }),
    (a) => guarded(async () => (await ciCommand()).runCi({
      repo: resolve(a.repo), base: a.base, head: a.head, seed: a.seed, junit: a.junit, report: a.report,
      baseline: a.baseline, writeBaseline: a.writeBaseline, data: a.data, ...(a.audit !== undefined ? { audit: a.audit } : {}), today: a.today, cmd: afterDashes(a), verbose: a.verbose, sandbox: a.sandbox, ...(a.holdout !== undefined ? { holdout: a.holdout } : {}), ...(a.runs !== undefined ? { runs: a.runs } : {}),
      ...(a.class !== undefined ? { agentClass: a.class } : {}), evidence: a.evidence,
      // Each suite run's progress past 2 s on stderr: in place on a terminal, a line every 30 s elsewhere (src/ci/run-progress.ts).
    }, { ...io, progress: { write: (t: string) => void process.stderr.write(t), isTTY: !!process.stderr.isTTY } })))
    .command('ledger', 'the flake ledger: `ledger check`, `ledger freeze`', (y) => y
      .command('check', 'validate the flake ledger; exit 1 when a row is invalid', (y2) => y2
        .option('repo', repoOpt)
        .option('today', { type: 'string', describe: 'YYYY-MM-DD (default: today, UTC)' })
        .option('json', { type: 'boolean', default: false, describe: 'one JSON object: {"ok", "problems": [{"line", "messageId", "detail"}], "lines"}' }),
      (a) => guarded(async () => {
        const r = await (await ledger()).runLedgerCheck({ repo: resolve(a.repo), today: a.today });
        out(a.json ? [JSON.stringify({ ok: r.problems.length === 0, problems: r.problems, lines: r.lines })] : r.lines);
        return r.problems.length ? 1 : 0;
      }))
      .command('freeze <nodeid>', 'freeze a flaky failure after re-running it twice (a person\'s command)', (y2) => y2
        .positional('nodeid', { type: 'string', demandOption: true })
        .option('repo', repoOpt)
        .option('seed', { type: 'string', demandOption: true })
        .option('reason', { type: 'string', demandOption: true })
        .option('expires', { type: 'string', describe: 'YYYY-MM-DD (default and maximum: today + the policy\'s maxDays)' })
        .option('today', { type: 'string' })
        .option('sandbox', { choices: ['bwrap', 'none'] as const, default: 'bwrap' as const, describe: 'a strict policy\'s re-runs run as patchgate ci runs them (a sealed copy of HEAD, only the named pytest test), under bubblewrap; none: the explicit opt-out' })
        .parserConfiguration({ 'populate--': true, 'parse-positional-numbers': false }),
      (a) => guarded(async () => (await ciCommand()).runLedgerFreeze({
        repo: resolve(a.repo), nodeid: a.nodeid as string, seed: a.seed, reason: a.reason, expires: a.expires, today: a.today, rerun: afterDashes(a), sandbox: a.sandbox,
      }, io)))
      .demandCommand(1, 'name a ledger command: check or freeze'))
    .command('policy', 'the policy file: `policy check`', (y) => y
      .command('check', 'validate ci/patchgate.json and the allow file, lock and ledger it names, as a push of them is judged (default: the work tree; --rev: a commit); exit 0 valid, 1 invalid, 2 error', (y2) => y2
        .option('repo', repoOpt)
        .option('rev', { type: 'string', describe: 'check the files as committed at REV instead of the work tree' })
        .option('json', { type: 'boolean', default: false, describe: 'one JSON object: {"ok", "source", "checked", "problems": [{"path", "line", "message"}], "lines"}' }),
      (a) => guarded(async () => {
        const r = await (await policy()).runPolicyCheck({ repo: resolve(a.repo), ...(a.rev !== undefined ? { rev: a.rev } : {}) });
        out(a.json ? [JSON.stringify({ ok: r.ok, source: r.source, checked: r.checked, problems: r.problems, lines: r.lines })] : r.lines);
        return r.ok ? 0 : 1;
      }))
      .demandCommand(1, 'name a policy command: check'))
    .command('serve', 'run the gate server (every flag also from its PATCHGATE_* variable or a --config JSON file)', (y) => {
      // No yargs defaults: serve-config.ts resolves flag > environment > config file > default.
      for (const s of Object.values(SERVE_SETTINGS)) {
        y.option(s.flag, { type: 'string', describe: `${s.describe}; env ${s.env}${'default' in s ? ` (default ${s.default})` : ''}` });
      }
      return y.option('config', { type: 'string', describe: 'JSON file with any of these flags as keys; env PATCHGATE_CONFIG' });
    },
    (a) => guarded(async () => {
      const flags = Object.fromEntries(Object.entries(SERVE_SETTINGS).map(([k, s]) => [k, a[s.flag] as string | undefined]));
      await (await admin()).runServe(resolveServeConfig({ ...flags, config: a.config as string | undefined }));
      return undefined;
    }))
    .command('daemon', 'the hook daemon of a git-host node (GitLab, Gitea, GHES, gitolite): see docs/hosts.md', (y) => y
      .option('config', { type: 'string', demandOption: true, describe: 'the daemon\'s JSON config: {"data": DIR, "audit": "sqlite:PATH" | "postgres://…", "humans": [glob…], "agents": [glob…], "admins": [glob…], "repos": [glob…], "repoRoots": [DIR…], "monitor": "127.0.0.1:7006"} (docs/hosts.md)' })
      .option('audit', { type: 'string', describe: 'audit store URL: sqlite:PATH or postgres://USER@HOST:PORT/DB (the password in PATCHGATE_AUDIT_URL, PGPASSFILE or PGPASSWORD, never the command line); overrides the config and PATCHGATE_AUDIT_URL' })
      .epilog('Keep it running (systemd) as the user that runs the host\'s hooks; the shims `hook install` writes talk to it. /healthz and /metrics on the config\'s "monitor" address.'),
    (a) => guarded(async () => (await hostCommand()).runDaemon({ config: a.config, audit: a.audit })))
    .command('warm <repos..>', 'seed the contract cache from a repository on this machine, with progress, before agents push (a host with a short hook budget: GHES); see docs/hosts.md', (y) => y
      .positional('repos', { type: 'string', array: true, demandOption: true, describe: 'REPO_DIR...: each bare repository\'s folder (the host\'s own copy; with --data also a repository name)' })
      .option('config', { type: 'string', describe: 'the daemon\'s JSON config (its data folder holds cache.db; its trusted branches apply)' })
      .option('data', { type: 'string', describe: 'the gate server\'s data folder (patchgate serve --data DIR)' })
      .epilog('Run it as the user that owns the repositories and runs the daemon. The daemon may keep running: it reads what this writes on its next miss.'),
    async (a) => {
      await guarded(async () => out(await (await import('./commands/warm.js')).runWarm({ config: a.config, data: a.data, repos: a.repos as string[] })));
      process.exit(); // the parse workers would keep the process alive
    })
    .command('hook', 'hooks inside a git host: `hook install --host H --config FILE REPO_DIR...`', (y) => y
      .command('install <dirs..>', 'write the pre-receive shim for that host into each REPO_DIR', (y2) => y2
        .positional('dirs', { type: 'string', array: true, demandOption: true, describe: 'REPO_DIR...: where each shim goes, by host: gitlab REPO.git (writes custom_hooks/pre-receive), gitea REPO.git (hooks/pre-receive.d/patchgate), ghes the hook repository\'s work tree (patchgate-pre-receive.sh), gitolite ~/local (hooks/repo-specific/patchgate, created when missing), generic REPO.git (hooks/pre-receive)' })
        .option('host', { choices: ['gitlab', 'gitea', 'ghes', 'gitolite', 'generic'] as const, demandOption: true })
        .option('config', { type: 'string', demandOption: true, describe: 'the daemon\'s JSON config' }),
      (a) => guarded(async () => out(await (await hostCommand()).runHookInstall({ host: a.host, config: a.config, dirs: a.dirs as string[] }))))
      .demandCommand(1, 'name a hook command: install'))
    .command('repo', 'repositories: `repo create NAME`, `repo list`, `repo hooks NAME`, `repo upstream|sync|mode NAME` (each with --json)', (y) => y
      .command('create <name>', 'create a bare repository with the gate hooks installed', (y2) => y2
        .positional('name', { type: 'string', demandOption: true })
        .option('data', dataOpt)
        .option('trusted', { type: 'string', default: 'main', describe: 'the trusted branch (the repo\'s HEAD)' })
        .option('upstream', { type: 'string', describe: 'the team\'s real remote (https URL, may carry user:token@); accepted pushes are forwarded there' })
        .option('upstream-credential-file', { type: 'string', describe: 'file whose first line is the upstream token (or user:token); stored mode 0600' })
        .option('allow-http-credential', { type: 'boolean', default: false, describe: 'accept a token for a plain http:// upstream that is not this machine (sent in clear text)' })
        .option('mode', { choices: ['enforce', 'evaluate'] as const, describe: 'evaluate: judge and audit, accept would-be refusals (default enforce)' })
        .option('holdout-of', { type: 'string', describe: 'held-out tests of repository NAME: agent tokens can neither read nor list it' })
        .option('wait', { type: 'boolean', default: false, describe: 'with --upstream: fill the contract cache now (progress on stderr) and return when the warm-up is done' })
        .option('audit', auditOpt)
        .option('json', jsonOpt),
      async (a) => {
        await jsonDoc(a.json, 'repo create', async () => (a.upstream !== undefined || a.mode !== undefined || a.upstreamCredentialFile !== undefined
          ? await (await upstream()).runRepoCreateUpstream({ data: a.data, name: a.name, trusted: a.trusted, upstream: a.upstream, credentialFile: a.upstreamCredentialFile, allowHttpCredential: a.allowHttpCredential, mode: a.mode, wait: a.wait, audit: a.audit })
          : await (await admin()).runRepoCreate({ data: a.data, name: a.name, trusted: a.trusted, audit: a.audit, ...(a.holdoutOf ? { holdoutOf: a.holdoutOf } : {}) })),
        () => ({ repo: a.name.replace(/\.git$/, ''), dir: resolve(a.data, 'repos', `${a.name.replace(/\.git$/, '')}.git`), trusted: a.trusted, mode: a.mode ?? 'enforce', ...(a.holdoutOf ? { holdoutOf: a.holdoutOf } : {}) }));
        if (a.wait) process.exit(); // the parse workers of the warm-up would keep the process alive
      })
      .command('upstream <name> <url>', 'set the upstream remote (`none` removes it), then fetch its trusted branch', (y2) => y2
        .positional('name', { type: 'string', demandOption: true })
        .positional('url', { type: 'string', demandOption: true })
        .option('upstream-credential-file', { type: 'string', describe: 'file whose first line is the token (or user:token)' })
        .option('allow-http-credential', { type: 'boolean', default: false, describe: 'accept a token for a plain http:// upstream that is not this machine (sent in clear text)' })
        .option('data', dataOpt)
        .option('audit', auditOpt)
        .option('json', jsonOpt),
      (a) => jsonDoc(a.json, 'repo upstream', async () => (await upstream()).runRepoUpstream({ data: a.data, name: a.name, url: a.url, credentialFile: a.upstreamCredentialFile, allowHttpCredential: a.allowHttpCredential, audit: a.audit }), () => ({ repo: a.name, upstream: a.url === 'none' ? null : 'set' })))
      .command('sync <name>', 'fetch the trusted branch (and every branch upstream has) from upstream now', (y2) => y2
        .positional('name', { type: 'string', demandOption: true })
        .option('data', dataOpt)
        .option('audit', auditOpt)
        .option('json', jsonOpt),
      (a) => jsonDoc(a.json, 'repo sync', async () => (await upstream()).runRepoSync({ data: a.data, name: a.name, audit: a.audit }), () => ({ repo: a.name })))
      .command('mode <name> <mode>', 'enforce (default) or evaluate: judge and audit, accept would-be refusals as would-reject', (y2) => y2
        .positional('name', { type: 'string', demandOption: true })
        .positional('mode', { choices: ['enforce', 'evaluate'] as const, demandOption: true })
        .option('data', dataOpt)
        .option('audit', auditOpt)
        .option('json', jsonOpt),
      (a) => jsonDoc(a.json, 'repo mode', async () => (await upstream()).runRepoMode({ data: a.data, name: a.name, mode: a.mode, audit: a.audit }), () => ({ repo: a.name, mode: a.mode })))
      .command('warm <name>', false, (y2) => y2
        .positional('name', { type: 'string', demandOption: true })
        .option('data', dataOpt),
      async (a) => {
        await guarded(async () => out(await (await upstream()).runRepoWarm({ data: a.data, name: a.name })));
        process.exit(); // the parse workers would keep the process alive
      })
      .command('hooks <name>', 'reinstall patchgate\'s hooks in a repository', (y2) => y2
        .positional('name', { type: 'string', demandOption: true })
        .option('data', dataOpt)
        .option('audit', auditOpt)
        .option('json', jsonOpt),
      (a) => jsonDoc(a.json, 'repo hooks', async () => (await admin()).runRepoHooks({ data: a.data, name: a.name, audit: a.audit }), () => ({ repo: a.name })))
      .command('list', 'the repositories under --data: trusted branch, mode, upstream (never its credential), hooks', (y2) => y2
        .option('data', dataOpt)
        .option('json', { type: 'boolean', default: false, describe: 'one JSON document: {"ok", "repos": [{"name", "dir", "trusted", "mode", "upstream", "hooks", "holdoutOf"}]}' }),
      (a) => guarded(async () => {
        const repos = await (await upstream()).listRepoInfo({ data: a.data });
        out(a.json ? [JSON.stringify({ ok: true, command: 'repo list', repos })] : repos.length
          ? repos.map((r) => `${r.name}\ttrusted ${r.trusted ?? '?'}\t${r.mode}\t${r.upstream ? `upstream ${r.upstream}` : 'no upstream'}\thooks ${r.hooks}${r.holdoutOf ? `\tholdout of ${r.holdoutOf}` : ''}`)
          : [`no repositories under ${resolve(a.data, 'repos')} (patchgate repo create NAME)`]);
      }))
      .demandCommand(1, 'name a repo command: create, list, hooks, upstream, sync or mode'))
    .command('escalation', 'agents\' escalations (git push -o patchgate.escalate="…"): `escalation list [--open]`, `escalation show ID`, `escalation close ID --note TEXT --as NAME`', (y) => y
      .command('list', 'escalations, open ones first (newest first)', (y2) => y2
        .option('open', { type: 'boolean', default: false, describe: 'only those not closed yet' })
        .option('repo', { type: 'string', describe: 'only this repository\'s' })
        .option('json', { type: 'boolean', default: false, describe: 'one JSON object per line: {"id", "time", "repo", "actor", "ref", "new", "verdict", "pushId", "text", "open", "closed"?}' })
        .option('data', dataOpt)
        .option('audit', auditOpt),
      (a) => guarded(async () => out(await (await admin()).runEscalationList({ data: a.data, audit: a.audit, open: a.open, json: a.json, repo: a.repo }))))
      .command('close <id>', 'close an open escalation with what was decided (an audited row); an unknown or closed ID exits 2', (y2) => y2
        .positional('id', { type: 'string', demandOption: true, describe: 'the # that escalation list shows' })
        .option('note', { type: 'string', demandOption: true, describe: 'what was decided (e.g. "the test was wrong; fixed on main in abc123")' })
        .option('as', { type: 'string', alias: 'by', describe: 'the person who closes it (or their token in PATCHGATE_TOKEN, read from the environment); one of them is required' })
        .option('json', { type: 'boolean', default: false })
        .option('data', dataOpt)
        .option('audit', auditOpt)
        .parserConfiguration({ 'parse-positional-numbers': false }),
      (a) => guarded(async () => out(await (await admin()).runEscalationClose({ data: a.data, audit: a.audit, id: String(a.id), note: a.note, by: a.as, json: a.json }))))
      .command('show <id>', 'the escalation, and the diff of the commits it kept for review (refs/patchgate/escalations/ID); an unknown ID exits 2', (y2) => y2
        .positional('id', { type: 'string', demandOption: true, describe: 'the # that escalation list shows' })
        .option('json', { type: 'boolean', default: false })
        .option('data', dataOpt)
        .option('audit', auditOpt)
        .parserConfiguration({ 'parse-positional-numbers': false }),
      (a) => guarded(async () => out(await (await admin()).runEscalationShow({ data: a.data, audit: a.audit, id: String(a.id), json: a.json }))))
      .demandCommand(1, 'name an escalation command: list, show or close'))
    .command('token', 'access tokens: `token create|list|revoke`', (y) => y
      .command('create <name>', 'create a token; the secret is the last line of output', (y2) => y2
        .positional('name', { type: 'string', demandOption: true })
        .option('role', { choices: ['agent', 'human', 'admin'] as const, demandOption: true })
        .option('repos', { type: 'string', describe: 'repository glob this token may use (default *)' })
        .option('expires', { type: 'string', describe: 'days until the token expires (fractions allowed)' })
        .option('class', { type: 'string', describe: 'an agent token\'s class of the policy (ci/patchgate.json "classes"; docs/policy.md); default: the default class' })
        .option('data', dataOpt)
        .option('audit', auditOpt),
      (a) => guarded(async () => out(await (await admin()).runTokenCreate({ data: a.data, audit: a.audit, name: a.name, role: a.role, repos: a.repos, expires: a.expires === undefined ? undefined : parseDays(a.expires, '--expires', 36_500), ...(typeof a.class === 'string' ? { agentClass: a.class } : {}) }))))
      .command('list', 'list tokens (never their secrets)', (y2) => y2.option('data', dataOpt).option('json', { type: 'boolean', default: false }).option('audit', auditOpt),
        (a) => guarded(async () => out(await (await admin()).runTokenList({ data: a.data, audit: a.audit, json: a.json }))))
      .command('revoke <name>', 'revoke a token (on every node that shares its audit log)', (y2) => y2.positional('name', { type: 'string', demandOption: true }).option('data', dataOpt).option('audit', auditOpt),
        (a) => guarded(async () => out(await (await admin()).runTokenRevoke({ data: a.data, audit: a.audit, name: a.name }))))
      .demandCommand(1, 'name a token command: create, list or revoke'))
    .command('audit', 'query the audit log (newest first); `audit show ID`, `audit verify`', (y) => y
      .command('$0', 'query the audit log', (y2) => y2
        .option('data', dataOpt)
        .option('repo', { type: 'string' })
        .option('actor', { type: 'string' })
        .option('verdict', { choices: ['accept', 'reject', 'would-reject'] as const, describe: 'by outcome: a push upstream refused after the gate accepted it is a reject' })
        .option('since', { type: 'string', describe: 'ISO 8601 time' })
        .option('until', { type: 'string', describe: 'ISO 8601 time' })
        .option('kind', { choices: ['push', 'ref', 'auth', 'admin', 'ci', 'confirm', 'escalation', 'upstream-refusal'] as const, describe: 'escalation: agents\' notes for a person and their closing rows; upstream-refusal: refs the gate accepted and upstream refused' })
        .option('limit', { type: 'string', default: '100', describe: 'at most this many rows (1 to 1000000)' })
        .option('json', { type: 'boolean', default: false, describe: 'one JSON object per line' })
        .option('audit', auditOpt),
      (a) => guarded(async () => out(await (await admin()).runAudit({ data: a.data, audit: a.audit, json: a.json, repo: a.repo, actor: a.actor, verdict: a.verdict, since: a.since, until: a.until, kind: a.kind, limit: parsePositiveInt(a.limit, '--limit', 1_000_000) }))))
      .command('show <id>', 'the trace of every rule checked for a push (push id or row number)', (y2) => y2
        .positional('id', { type: 'string', demandOption: true })
        .option('data', dataOpt)
        .option('json', { type: 'boolean', default: false })
        .option('audit', auditOpt),
      (a) => guarded(async () => out(await (await admin()).runAuditShow({ data: a.data, audit: a.audit, id: a.id, json: a.json }))))
      .command('verify', 'check the hash chain (and, with --checkpoints, every published head); exit 1 when tampered', (y2) => y2.option('data', dataOpt).option('audit', auditOpt)
        .option('checkpoints', { type: 'string', describe: 'git:REPO (path or URL, ref refs/patchgate/audit) or file:PATH' })
        .option('public-key', { type: 'string', describe: 'the gate\'s checkpoint public key: audit-checkpoint.vkey or .pub (default: the data folder\'s)' })
        .option('checkpoint-credential-file', cpCredOpt)
        .option('json', { type: 'boolean', default: false, describe: 'one JSON document: {"ok", "rows"?, "tokens"?, "firstBadId"?, "reason"?, "lines"} (an error: {"ok": false, "error"}, exit 2)' }),
        (a) => {
          const run = async () => a.checkpoints
            ? await (await auditCp()).runAuditVerifyCheckpoints({ data: a.data, audit: a.audit, checkpoints: a.checkpoints, publicKey: a.publicKey, credentialFile: a.checkpointCredentialFile })
            : await (await admin()).runAuditVerify({ data: a.data, audit: a.audit });
          if (!a.json) return guarded(async () => {
            const r = await run();
            out(r.lines);
            return r.ok ? 0 : 1;
          });
          return (async () => {
            try {
              const r = await run();
              out([JSON.stringify({ command: 'audit verify', ...r })]);
              process.exitCode = r.ok ? 0 : 1;
            } catch (err) {
              out([JSON.stringify({ ok: false, command: 'audit verify', error: (err instanceof PatchgateError ? err.message : `unexpected error: ${errorMessage(err)}`).split('\n')[0] })]);
              process.exitCode = 2;
            }
          })();
        })
      .command('checkpoint', 'sign the chain (a C2SP tlog checkpoint) and publish it outside the database', (y2) => y2.option('data', dataOpt).option('audit', auditOpt)
        .option('publish', { type: 'string', array: true, default: [] as string[], describe: 'git:REPO or file:PATH (repeatable)' })
        .option('checkpoint-credential-file', cpCredOpt)
        .option('ignore-lease', { type: 'boolean', default: false, describe: 'on a shared PostgreSQL log, sign even while another node holds its signing lease (that node signs with its own key)' }),
        (a) => guarded(async () => {
          const r = await (await auditCp()).runAuditCheckpoint({ data: a.data, audit: a.audit, publish: a.publish as string[], credentialFile: a.checkpointCredentialFile, ignoreLease: a.ignoreLease });
          out(r.lines);
          return r.ok ? 0 : 1;
        }))
      .command('prove <row>', 'an RFC 6962 inclusion proof of one row against the latest checkpoint; exit 0 proved, 1 not', (y2) => y2
        .positional('row', { type: 'string', demandOption: true })
        .option('data', dataOpt).option('audit', auditOpt)
        .option('checkpoints', { type: 'string', describe: 'take the latest checkpoint from git:REPO or file:PATH (default: the data folder\'s)' })
        .option('public-key', { type: 'string', describe: 'the gate\'s checkpoint public key: audit-checkpoint.vkey or .pub (default: the data folder\'s)' })
        .option('checkpoint-credential-file', cpCredOpt)
        .option('json', { type: 'boolean', default: false })
        .parserConfiguration({ 'parse-positional-numbers': false }),
        (a) => guarded(async () => {
          const r = await (await auditCp()).runAuditProve({ data: a.data, audit: a.audit, row: String(a.row), checkpoints: a.checkpoints, publicKey: a.publicKey, credentialFile: a.checkpointCredentialFile, json: a.json });
          out(r.lines);
          return r.ok ? 0 : 1;
        }))
      .command('export', 'rows for a SIEM, oldest first, as stored (one JSON object per line)', (y2) => y2.option('data', dataOpt).option('audit', auditOpt)
        .option('since', { type: 'string', demandOption: true, describe: 'ISO 8601 time' })
        .option('until', { type: 'string', describe: 'ISO 8601 time' })
        .option('format', { choices: ['jsonl'] as const, default: 'jsonl' as const }),
        (a) => guarded(async () => (await admin()).runAuditExport({ data: a.data, audit: a.audit, since: a.since, until: a.until, format: a.format }, (l) => void process.stdout.write(l + '\n'))))
      .command('migrate', 'copy a data folder\'s SQLite log and its tokens into an empty PostgreSQL log, verify the chain on both sides, mark the SQLite file as moved and record the new log in the data folder; exit 1 when a side does not verify', (y2) => y2
        .option('data', { type: 'string', describe: 'the data folder whose log moves: its patchgate.db is the default --from, and it records the new log (default: the folder of a --from named patchgate.db, else PATCHGATE_DATA or ./data)' })
        .option('from', { type: 'string', describe: 'sqlite:PATH (the embedded log to copy; default sqlite:<data>/patchgate.db)' })
        .option('to', { type: 'string', describe: 'postgres://… (an empty log; default PATCHGATE_AUDIT_URL; no password on the command line)' })
        .option('audit', { type: 'string', describe: 'the same as --to' }),
      (a) => guarded(async () => {
        const r = await (await import('./commands/audit-migrate.js')).runAuditMigrate({ from: a.from, to: a.to ?? a.audit, ...(a.data !== undefined ? { data: a.data } : {}) });
        out(r.lines);
        return r.ok ? 0 : 1;
      })))
    .demandCommand(1, 'name a command; see patchgate --help')
    .recommendCommands()
    .strict()
    .fail((msg, err, usage) => {
      if (err) throw err;
      // The commands being run and what the last offers (yargs' context and usage), so the
      // message can say "did you mean" under a command that also runs bare, and name its --help.
      const path = ((top as unknown as { getInternalMethods?: () => { getContext: () => { commands?: string[] } } }).getInternalMethods?.().getContext().commands ?? []).map((c) => c.split(' ')[0]!);
      const subs = ((usage as unknown as { getCommands?: () => Array<[string]> }).getCommands?.() ?? []).map((c) => c[0].split(' ')[0]!).filter((n) => n !== '$0' && n !== '*');
      process.stderr.write(usageErrorLines(msg, path, subs, argv).join('\n') + '\n');
      process.exit(2);
    })
    .help()
    .version(packageVersion());
}

// The heap's growth step (src/heap.ts), before any command allocates; a bad setting stops here.
try {
  tuneHeap();
} catch (err) {
  process.stderr.write(`patchgate: ${err instanceof PatchgateError ? err.message : errorMessage(err)}\n`);
  process.exit(2);
}

await buildCli(hideBin(process.argv)).parseAsync();
