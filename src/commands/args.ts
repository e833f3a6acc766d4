// Checks the CLI makes before a command touches anything: that a data folder really holds
// gate data (a mistyped --data must not silently create an empty database and exit 0), and
// numeric options parsed with a message that names the flag and repeats what was typed.

import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { UsageError } from '../errors.js';

/** No gate data where a command that only reads it was pointed. Exit 2 like every usage error. */
export class NoDataError extends UsageError {
  constructor(data: string) {
    super(`no gate data in ${resolve(data)} (no patchgate.db): pass --data (or PATCHGATE_DATA) the folder \`patchgate serve\` uses, or start \`patchgate serve --data ${data}\` once first`);
  }
}

export function requireData(data: string): void {
  if (!existsSync(join(resolve(data), 'patchgate.db'))) throw new NoDataError(data);
}

/** The `--data` default of every command: PATCHGATE_DATA, else ./data (as `serve`). */
export function defaultData(env: NodeJS.ProcessEnv = process.env): string {
  return env.PATCHGATE_DATA || './data';
}

/** A positive integer option given as text, e.g. `--limit 20`. */
export function parsePositiveInt(raw: unknown, flag: string, max: number): number {
  const s = String(raw ?? '').trim();
  if (!/^\d+$/.test(s) || Number(s) < 1 || Number(s) > max) throw new UsageError(`${flag}: must be a whole number from 1 to ${max} (got ${JSON.stringify(String(raw ?? ''))})`);
  return Number(s);
}

/** A positive number of days, fractions allowed, e.g. `--expires 30` or `--expires 0.5`. */
export function parseDays(raw: unknown, flag: string, max: number): number {
  const s = String(raw ?? '').trim();
  const n = /^\d+(\.\d+)?$/.test(s) ? Number(s) : NaN;
  if (!(n > 0 && n <= max)) throw new UsageError(`${flag}: must be a number of days above 0 and at most ${max} (got ${JSON.stringify(String(raw ?? ''))})`);
  return n;
}

/** The package's version, read from package.json beside dist/ (or src/). */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}
