#!/usr/bin/env node
// patchgate's command line: the pinned interface of DESIGN.md (check, serve, repo, token,
// audit, contract, fixtures, ledger, ci). Each command's work lives in src/commands/; this
// file only declares options and maps results to output and exit codes.

import yargs, { type Argv } from 'yargs';
import { hideBin } from 'yargs/helpers';
import { resolve } from 'node:path';
import { errorMessage, PatchgateError } from './errors.js';

// Command modules load on first use: `token list` should not pay for loading TypeScript.
const check = () => import('./commands/check.js');
const contract = () => import('./commands/contract.js');
const fixtures = () => import('./commands/fixtures.js');
const ledger = () => import('./commands/ledger.js');
const admin = () => import('./commands/admin.js');
const ciCommand = () => import('./ci/command.js');

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

const repoOpt = { type: 'string', default: '.', describe: 'repository directory' } as const;
const dataOpt = { type: 'string', default: './data', describe: 'data folder (repos, audit log, hook socket)' } as const;

export function buildCli(argv: string[]): Argv {
  return yargs(argv)
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
        .option('rev', { type: 'string', describe: 'verify a commit instead of the work tree' }),
      (a) => guarded(async () => {
        const r = await (await fixtures()).runFixturesVerify({ repo: resolve(a.repo), lock: a.lock, rev: a.rev });
        out(r.lines);
        return r.drift.length ? 1 : 0;
      }))
      .demandCommand(1, 'name a fixtures command: lock or verify'))
    .command('ci', 'check, then run the tests with a recorded seed, apply the ledger, print the decision table; exit 0 green, 1 red, 2 error', (y) => y
      .option('repo', repoOpt)
      .option('base', { type: 'string', demandOption: true, describe: 'trusted revision' })
      .option('head', { type: 'string', demandOption: true, describe: 'the revision under test (must be checked out)' })
      .option('seed', { type: 'string', describe: 'run seed (default: random); exported as PATCHGATE_SEED' })
      .option('junit', { type: 'string', describe: 'JUnit XML report CMD writes (default: TAP on CMD\'s stdout)' })
      .option('report', { type: 'string', describe: 'write a JSON report here' })
      .option('baseline', { type: 'string', describe: 'test ids of the last green run of the base (JSON)' })
      .option('write-baseline', { type: 'string', describe: 'after a green run, write the executed test ids here' })
      .option('holdout', { type: 'string', describe: 'a folder of held-out tests, run against the judged src/ after the visible suite' })
      .option('runs', { type: 'number', describe: 'runs of the suite, later ones shuffled (default: policy ci.runs, 2)' })
      .option('data', { type: 'string', describe: 'also record the run in <data>/patchgate.db' })
      .option('today', { type: 'string', describe: 'YYYY-MM-DD for ledger expiry (default: today, UTC)' })
      .parserConfiguration({ 'populate--': true, 'parse-positional-numbers': false }),
    (a) => guarded(async () => (await ciCommand()).runCi({
      repo: resolve(a.repo), base: a.base, head: a.head, seed: a.seed, junit: a.junit, report: a.report,
      baseline: a.baseline, writeBaseline: a.writeBaseline, data: a.data, today: a.today, cmd: afterDashes(a), ...(a.holdout ? { holdout: a.holdout } : {}), ...(a.runs !== undefined ? { runs: a.runs } : {}),
    }, io)))
    .command('ledger', 'the flake ledger: `ledger check`, `ledger freeze`', (y) => y
      .command('check', 'validate the flake ledger; exit 1 when a row is invalid', (y2) => y2
        .option('repo', repoOpt)
        .option('today', { type: 'string', describe: 'YYYY-MM-DD (default: today, UTC)' }),
      (a) => guarded(async () => {
        const r = await (await ledger()).runLedgerCheck({ repo: resolve(a.repo), today: a.today });
        out(r.lines);
        return r.problems.length ? 1 : 0;
      }))
      .command('freeze <nodeid>', 'freeze a flaky failure after re-running it twice (a person\'s command)', (y2) => y2
        .positional('nodeid', { type: 'string', demandOption: true })
        .option('repo', repoOpt)
        .option('seed', { type: 'string', demandOption: true })
        .option('reason', { type: 'string', demandOption: true })
        .option('expires', { type: 'string', describe: 'YYYY-MM-DD (default and maximum: today + the policy\'s maxDays)' })
        .option('today', { type: 'string' })
        .parserConfiguration({ 'populate--': true, 'parse-positional-numbers': false }),
      (a) => guarded(async () => (await ciCommand()).runLedgerFreeze({
        repo: resolve(a.repo), nodeid: a.nodeid as string, seed: a.seed, reason: a.reason, expires: a.expires, today: a.today, rerun: afterDashes(a),
      }, io)))
      .demandCommand(1, 'name a ledger command: check or freeze'))
    .command('serve', 'run the gate server', (y) => y
      .option('data', dataOpt)
      .option('port', { type: 'number', default: 7005 })
      .option('host', { type: 'string', default: '127.0.0.1' })
      .option('tls-cert', { type: 'string', describe: 'PEM certificate (with --tls-key) to serve HTTPS' })
      .option('tls-key', { type: 'string' })
      .option('hook-timeout', { type: 'number', default: 30, describe: 'seconds the policy may take per push before it is refused' }),
    (a) => guarded(async () => {
      await (await admin()).runServe({ data: a.data, port: a.port, host: a.host, tlsCert: a.tlsCert, tlsKey: a.tlsKey, hookTimeout: a.hookTimeout });
      return undefined;
    }))
    .command('repo', 'repositories: `repo create NAME`, `repo hooks NAME`', (y) => y
      .command('create <name>', 'create a bare repository with the gate hooks installed', (y2) => y2
        .positional('name', { type: 'string', demandOption: true })
        .option('data', dataOpt)
        .option('trusted', { type: 'string', default: 'main', describe: 'the trusted branch (the repo\'s HEAD)' })
        .option('holdout-of', { type: 'string', describe: 'held-out tests of repository NAME: agent tokens can neither read nor list it' }),
      (a) => guarded(async () => out(await (await admin()).runRepoCreate({ data: a.data, name: a.name, trusted: a.trusted, ...(a.holdoutOf ? { holdoutOf: a.holdoutOf } : {}) }))))
      .command('hooks <name>', 'reinstall patchgate\'s hooks in a repository', (y2) => y2
        .positional('name', { type: 'string', demandOption: true })
        .option('data', dataOpt),
      (a) => guarded(async () => out(await (await admin()).runRepoHooks({ data: a.data, name: a.name }))))
      .demandCommand(1, 'name a repo command: create or hooks'))
    .command('token', 'access tokens: `token create|list|revoke`', (y) => y
      .command('create <name>', 'create a token; the secret is the last line of output', (y2) => y2
        .positional('name', { type: 'string', demandOption: true })
        .option('role', { choices: ['agent', 'human', 'admin'] as const, demandOption: true })
        .option('repos', { type: 'string', describe: 'repository glob this token may use (default *)' })
        .option('expires', { type: 'number', describe: 'days until the token expires' })
        .option('data', dataOpt),
      (a) => guarded(async () => out((await admin()).runTokenCreate({ data: a.data, name: a.name, role: a.role, repos: a.repos, expires: a.expires }))))
      .command('list', 'list tokens (never their secrets)', (y2) => y2.option('data', dataOpt).option('json', { type: 'boolean', default: false }),
        (a) => guarded(async () => out((await admin()).runTokenList({ data: a.data, json: a.json }))))
      .command('revoke <name>', 'revoke a token', (y2) => y2.positional('name', { type: 'string', demandOption: true }).option('data', dataOpt),
        (a) => guarded(async () => out((await admin()).runTokenRevoke({ data: a.data, name: a.name }))))
      .demandCommand(1, 'name a token command: create, list or revoke'))
    .command('audit', 'query the audit log (newest first); `audit show ID`, `audit verify`', (y) => y
      .command('$0', 'query the audit log', (y2) => y2
        .option('data', dataOpt)
        .option('repo', { type: 'string' })
        .option('actor', { type: 'string' })
        .option('verdict', { choices: ['accept', 'reject'] as const })
        .option('since', { type: 'string', describe: 'ISO 8601 time' })
        .option('until', { type: 'string', describe: 'ISO 8601 time' })
        .option('kind', { choices: ['push', 'ref', 'auth', 'admin', 'ci', 'confirm'] as const })
        .option('limit', { type: 'number', default: 100 })
        .option('json', { type: 'boolean', default: false, describe: 'one JSON object per line' }),
      (a) => guarded(async () => out((await admin()).runAudit({ data: a.data, json: a.json, repo: a.repo, actor: a.actor, verdict: a.verdict, since: a.since, until: a.until, kind: a.kind, limit: a.limit }))))
      .command('show <id>', 'the trace of every rule checked for a push (push id or row number)', (y2) => y2
        .positional('id', { type: 'string', demandOption: true })
        .option('data', dataOpt)
        .option('json', { type: 'boolean', default: false }),
      (a) => guarded(async () => out((await admin()).runAuditShow({ data: a.data, id: a.id, json: a.json }))))
      .command('verify', 'check the hash chain; exit 1 when a row was changed or removed', (y2) => y2.option('data', dataOpt),
        (a) => guarded(async () => {
          const r = (await admin()).runAuditVerify({ data: a.data });
          out(r.lines);
          return r.ok ? 0 : 1;
        })))
    .demandCommand(1, 'name a command; see patchgate --help')
    .strict()
    .fail((msg, err) => {
      if (err) throw err;
      process.stderr.write(`patchgate: ${msg}\nrun \`patchgate --help\` for usage\n`);
      process.exit(2);
    })
    .help()
    .version(false);
}

await buildCli(hideBin(process.argv)).parseAsync();
