// The `seed` row format: byte-for-byte the seed article's public_signatures rows, its
// file order and its contract_digest.

import { createHash } from 'node:crypto';
import { ContractParseError } from '../../errors.js';
import { named } from './cst.js';
import { unparse } from './unparse.js';
import { atStatement, codePointCompare, functionOf, withTree } from './walk.js';

/**
 * Rows exactly as the seed's public_signatures produces for one file, in source order:
 * each module-level def/async def whose name does not start with '_', as
 * `${rel}::${name}(${regular positional parameters joined by ','})->${ast.unparse(returns)}`.
 * Requires initPython(). `source` must be the file decoded as UTF-8 with a BOM kept (the
 * seed reads it with read_text, and then ast.parse rejects it: so do we). Throws
 * ContractParseError wherever the seed itself would crash.
 */
export function extractPythonSeed(source: string, rel: string): string[] {
  if (source.charCodeAt(0) === 0xfeff) {
    // read_text(encoding='utf-8') keeps the BOM, and ast.parse rejects it.
    throw new ContractParseError(rel, 1, 1, 'invalid non-printable character U+FEFF (byte order mark)');
  }
  return withTree(source, rel, 'seed', ({ parsed, lower }) => {
    const rows: string[] = [];
    for (const stmt of named(parsed.root)) {
      const fn = functionOf(stmt);
      if (!fn || fn.def.type !== 'function_definition') continue;
      const name = lower.name(fn.def.childForFieldName('name')!);
      const args = lower.parameters(fn.def.childForFieldName('parameters')!);
      if (name.startsWith('_')) continue;
      const ret = fn.def.childForFieldName('return_type');
      const returns = ret ? atStatement(stmt, () => unparse(lower.expr(ret))) : '';
      rows.push(`${rel}::${name}(${args.args.map((a) => a.arg).join(',')})->${returns}`);
    }
    return rows;
  });
}

// ---------------------------------------------------------------------------------------
// The seed's file order and digest

function pathParts(p: string): string[] {
  return p.split('/').filter((x) => x !== '' && x !== '.');
}

/** Order paths the way Python 3.11 `sorted(Path(...).rglob('*.py'))` orders them. */
export function seedOrder(paths: string[]): string[] {
  const keyed = paths.map((p) => ({ p, parts: pathParts(p) }));
  keyed.sort((a, b) => {
    const n = Math.min(a.parts.length, b.parts.length);
    for (let i = 0; i < n; i++) {
      const c = codePointCompare(a.parts[i]!, b.parts[i]!);
      if (c !== 0) return c;
    }
    return a.parts.length - b.parts.length;
  });
  return keyed.map((k) => k.p);
}

/** sha256 hex of rows.join('\n') encoded UTF-8 (the seed's contract_digest). */
export function seedDigest(rows: string[]): string {
  return createHash('sha256').update(rows.join('\n'), 'utf8').digest('hex');
}
