// What `patchgate` prints when yargs refuses the command line (issue 49): a mistyped
// subcommand under a command that also runs bare (`audit shwo 3`, where `audit` alone queries
// the log, so yargs only sees unknown arguments) gets the "did you mean" yargs gives elsewhere,
// and the help pointer names the (sub)command being run, not the top-level --help.

/** Levenshtein distance, bounded use: short command names only. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const here = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = here;
    }
  }
  return row[b.length]!;
}

/** The closest of `names` to `word` (as yargs' recommendCommands: distance at most 3), or null. */
export function closest(word: string, names: readonly string[]): string | null {
  let best: string | null = null;
  let bestD = 4;
  for (const n of names) {
    const d = distance(word, n);
    if (d < bestD) {
      best = n;
      bestD = d;
    }
  }
  return best;
}

/**
 * The lines for a refused command line. `path`: the commands being run (yargs' context, e.g.
 * ['audit']); `subcommands`: the names the last of them offers; `argv`: the words as typed.
 */
export function usageErrorLines(msg: string, path: readonly string[], subcommands: readonly string[], argv: readonly string[]): string[] {
  const cmd = ['patchgate', ...path].join(' ');
  const lines: string[] = [];
  if (/^Unknown arguments?:/.test(msg) && subcommands.length) {
    // The first word after the command path, if it is not an option: the mistyped subcommand.
    const words = argv.filter((w) => !w.startsWith('-'));
    const word = words[path.length];
    const guess = word !== undefined && !subcommands.includes(word) ? closest(word, subcommands) : null;
    if (guess) lines.push(`patchgate: Did you mean ${path.length ? `${path.join(' ')} ` : ''}${guess}? (${cmd} has no command ${JSON.stringify(word)})`);
  }
  if (!lines.length) lines.push(`patchgate: ${msg}`);
  lines.push(`run \`${cmd} --help\` for usage`);
  return lines;
}
