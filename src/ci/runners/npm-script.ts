// `npm test`, `npm run NAME`, `yarn test`, `pnpm test`: the package manager would run the
// script through a shell from the package.json of whatever tree it stands in, which the agent
// may have changed, and no reporter of patchgate's could be attached. So `patchgate ci` reads
// the script from the TRUSTED revision's package.json (git plumbing, never the agent's file),
// parses it as one command (shell-quote), and runs what it names directly.

import { parse } from 'shell-quote';
import { basename } from 'node:path';

export interface ScriptCall {
  manager: 'npm' | 'yarn' | 'pnpm';
  script: string;
  /** Arguments after the script name (npm: after `--`). */
  extra: string[];
}

const NPM_ALIASES: Record<string, string> = { test: 'test', t: 'test', tst: 'test', start: 'start' };
/** yarn and pnpm subcommands that are not script names. */
const NOT_SCRIPTS = new Set(['add', 'install', 'i', 'remove', 'rm', 'exec', 'dlx', 'x', 'init', 'create', 'why', 'list', 'ls', 'info', 'config', 'global', 'link', 'unlink', 'publish', 'pack', 'up', 'upgrade', 'update', 'outdated', 'audit', 'store', 'cache', 'node', 'set', 'workspace', 'workspaces']);

/** The script an npm/yarn/pnpm command line runs, or null when argv is not such a call. */
export function scriptCall(argv: string[]): ScriptCall | null {
  const m = argv[0] ? basename(argv[0]) : '';
  if (m !== 'npm' && m !== 'yarn' && m !== 'pnpm') return null;
  const rest = argv.slice(1);
  if (m === 'npm') {
    const sub = rest[0];
    if (sub === undefined) return null;
    let script: string | undefined;
    let after: string[];
    if (sub === 'run' || sub === 'run-script' || sub === 'rum' || sub === 'urn') [script, after] = [rest[1], rest.slice(2)];
    else if (NPM_ALIASES[sub]) [script, after] = [NPM_ALIASES[sub], rest.slice(1)];
    else return null;
    if (!script) return null;
    // npm passes on only what follows `--`.
    const dd = after.indexOf('--');
    return { manager: 'npm', script, extra: dd >= 0 ? after.slice(dd + 1) : [] };
  }
  const sub = rest[0];
  if (sub === undefined || sub.startsWith('-') || NOT_SCRIPTS.has(sub)) return null;
  const [script, extra] = sub === 'run' ? [rest[1], rest.slice(2)] : [sub, rest.slice(1)];
  if (!script) return null;
  return { manager: m, script, extra: extra[0] === '--' ? extra.slice(1) : extra };
}

export class ScriptError extends Error {}

/**
 * The argv a script names, from the trusted package.json text. Nested `npm run X` /
 * `yarn X` / `pnpm X` are followed (at most 5 deep). A script that needs a shell (`&&`,
 * pipes, `$VAR`, globs, redirections, `VAR=value` prefixes) cannot be run directly: ScriptError.
 */
export function resolveScript(call: ScriptCall, packageJson: string, depth = 0): { argv: string[]; chain: string[] } {
  let pkg: { scripts?: Record<string, unknown> };
  try {
    pkg = JSON.parse(packageJson) as typeof pkg;
  } catch (e) {
    throw new ScriptError(`package.json is not JSON: ${(e as Error).message}`);
  }
  const body = pkg?.scripts?.[call.script];
  if (typeof body !== 'string' || !body.trim()) throw new ScriptError(`package.json has no script "${call.script}"`);
  const words: string[] = [];
  for (const w of parse(body, (name: string) => `\0$${name}`)) {
    if (typeof w !== 'string') {
      const op = (w as { op?: string; pattern?: string; comment?: string }).op ?? 'comment';
      throw new ScriptError(`the script "${call.script}" (${JSON.stringify(body)}) needs a shell (${op === 'glob' ? `the glob ${(w as { pattern: string }).pattern}` : `"${op}"`}); patchgate runs one command without a shell: make the script name one runner, or give that command after --`);
    }
    if (w.includes('\0$')) throw new ScriptError(`the script "${call.script}" (${JSON.stringify(body)}) reads an environment variable; patchgate runs one command without a shell: give the command after --`);
    words.push(w);
  }
  if (words[0] && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0])) throw new ScriptError(`the script "${call.script}" (${JSON.stringify(body)}) sets a variable before its command; patchgate runs one command without a shell: give the command after --`);
  const argv = [...words, ...call.extra];
  const nested = scriptCall(argv);
  if (nested) {
    if (depth >= 5) throw new ScriptError(`the script "${call.script}" calls scripts more than 5 deep`);
    const r = resolveScript(nested, packageJson, depth + 1);
    return { argv: r.argv, chain: [`${call.script}: ${body}`, ...r.chain] };
  }
  return { argv, chain: [`${call.script}: ${body}`] };
}
