// The test command `patchgate ci` runs, worked out from what follows `--`: an npm/yarn/pnpm
// script is replaced by what the TRUSTED revision's package.json says it runs (read from git
// objects, never the agent's file; runners/npm-script.ts), and a bare runner name the project
// installed is its bin in node_modules/.bin, as the package manager's PATH would find it.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../errors.js';
import type { Git } from '../git/git.js';
import { resolveScript, scriptCall, ScriptError } from './runners/npm-script.js';
import { showArgv } from './process.js';

export interface ResolvedCommand {
  argv: string[];
  /** One log line saying what the script was resolved to (absent: the command ran as given). */
  note?: string;
}

export async function resolveCommand(git: Git, baseId: string, cmd: string[], repo: string): Promise<ResolvedCommand> {
  const call = scriptCall(cmd);
  if (!call) return { argv: cmd };
  const shown = showArgv(cmd);
  const pkg = await git.readBlob(`${baseId}:package.json`);
  if (!pkg) throw new UsageError(`${shown}: the trusted revision ${baseId.slice(0, 12)} has no package.json to read the script "${call.script}" from; give the test command itself after --`);
  let r;
  try {
    r = resolveScript(call, pkg.toString('utf8'));
  } catch (e) {
    if (e instanceof ScriptError) throw new UsageError(`${shown}: ${e.message} (package.json at the trusted revision ${baseId.slice(0, 12)})`, { cause: e });
    throw e;
  }
  let argv = r.argv;
  const bin = argv[0] ?? '';
  if (bin && !bin.includes('/') && existsSync(join(repo, 'node_modules', '.bin', bin))) argv = [`node_modules/.bin/${bin}`, ...argv.slice(1)];
  return { argv, note: `${shown} runs ${r.chain.map((c) => `"${c}"`).join(' -> ')} in package.json at the trusted revision ${baseId.slice(0, 12)}; patchgate runs ${showArgv(argv)} directly (no shell, no pre/post scripts)` };
}
