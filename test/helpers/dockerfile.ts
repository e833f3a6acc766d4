// A small Dockerfile and .dockerignore reader for the image lint test (no Docker engine runs
// here, and no Dockerfile parser is among the project's packages). It knows what the lint
// needs: comments, parser directives, line continuations, instructions with their
// arguments, JSON (exec) forms, stages split at FROM, and .dockerignore's last-match-wins
// patterns with `!` exceptions, where a pattern that matches a folder excludes what is in it.

import picomatch from 'picomatch';

export interface Instruction {
  keyword: string;
  /** The arguments as written, continuations joined with a space. */
  args: string;
  line: number;
}

export interface Stage {
  from: Instruction;
  image: string;
  name: string | null;
  instructions: Instruction[];
}

export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split(/\r?\n/);
  let escape = '\\';
  let directives = true;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const trimmed = raw.trim();
    if (directives) {
      const d = /^#\s*(\w+)\s*=\s*(\S+)\s*$/.exec(trimmed);
      if (d && d[1]!.toLowerCase() === 'escape') escape = d[2]!;
      if (!d) directives = false;
      else continue;
    }
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const start = i + 1;
    let joined = '';
    let cur = raw;
    for (;;) {
      const t = cur.trimEnd();
      if (t.endsWith(escape)) {
        joined += t.slice(0, -escape.length) + ' ';
        i++;
        // comment lines inside a continuation are dropped, as the builder does
        while (i < lines.length && lines[i]!.trim().startsWith('#')) i++;
        if (i >= lines.length) break;
        cur = lines[i]!;
        continue;
      }
      joined += t;
      break;
    }
    const m = /^\s*(\S+)\s*(.*)$/.exec(joined)!;
    out.push({ keyword: m[1]!.toUpperCase(), args: m[2]!.replace(/\s+/g, ' ').trim(), line: start });
  }
  return out;
}

/** Split into stages at each FROM; instructions before the first FROM (ARG) are dropped. */
export function stages(instructions: Instruction[]): Stage[] {
  const out: Stage[] = [];
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') {
      const words = ins.args.split(' ').filter((w) => !w.startsWith('--'));
      const as = words.findIndex((w) => w.toUpperCase() === 'AS');
      out.push({ from: ins, image: words[0] ?? '', name: as >= 0 ? (words[as + 1] ?? null) : null, instructions: [] });
    } else if (out.length) out[out.length - 1]!.instructions.push(ins);
  }
  return out;
}

/** The words of an exec form (`["a", "b"]`), or null for a shell form. */
export function execForm(args: string): string[] | null {
  if (!args.startsWith('[')) return null;
  try {
    const v: unknown = JSON.parse(args);
    return Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : null;
  } catch {
    return null;
  }
}

/**
 * Whether an image reference is pinned: by digest (`@sha256:` and 64 hex digits) or by a
 * tag holding an exact x.y.z version (`node:20.20.2-bookworm-slim`), or it names an earlier stage.
 */
export function pinned(image: string, earlierStages: readonly string[]): boolean {
  if (earlierStages.includes(image)) return true;
  if (/@sha256:[0-9a-f]{64}$/.test(image)) return true;
  const slash = image.lastIndexOf('/');
  const colon = image.indexOf(':', slash + 1);
  if (colon < 0) return false;
  return /^v?\d+\.\d+\.\d+([-._][A-Za-z0-9._-]+)?$/.test(image.slice(colon + 1));
}

/** A .dockerignore: does it keep `path` (relative to the context root) out of the build context? */
export function dockerignore(text: string): (path: string) => boolean {
  const rules = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !l.startsWith('#')).map((l) => {
    const negate = l.startsWith('!');
    const pattern = (negate ? l.slice(1) : l).trim().replace(/^\/+|\/+$/g, '').replace(/^\.\//, '');
    return { negate, match: picomatch(pattern, { dot: true }) };
  });
  return (path: string) => {
    const parts = path.replace(/^\/+/, '').split('/');
    const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
    let excluded = false;
    for (const r of rules) if (candidates.some((c) => r.match(c))) excluded = !r.negate;
    return excluded;
  };
}
