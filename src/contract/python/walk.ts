// What both row formats share: parse one file and lower it under one error mapping,
// find function definitions, and compare strings by code point as Python does.

import type { Node } from 'web-tree-sitter';
import { ContractParseError } from '../../errors.js';
import { named } from './cst.js';
import { Lowerer } from './lower.js';
import { normaliseNewlines, type Parsed, parsePython, type Scope } from './parse.js';
import { positionOf, PyError } from './position.js';
import { UnparseError } from './unparse.js';

interface Ctx {
  parsed: Parsed;
  lower: Lowerer;
}

/** Run f for one statement; an unparse failure is reported at that statement. */
export function atStatement<T>(stmt: Node, f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof UnparseError) throw new PyError(stmt.startIndex, err.message);
    throw err;
  }
}

export function withTree<T>(source: string, path: string, scope: Scope, f: (ctx: Ctx) => T): T {
  const original = normaliseNewlines(source);
  const parsed = parsePython(original, path, scope);
  // The seed must never print a value it cannot reproduce exactly: \N{...} is refused.
  const lower = new Lowerer(parsed.text, scope === 'seed');
  try {
    return f({ parsed, lower });
  } catch (err) {
    if (err instanceof PyError) {
      const pos = positionOf(original, parsed.toOriginal(err.index));
      throw new ContractParseError(path, pos.line, pos.column, err.message, { cause: err });
    }
    throw err;
  } finally {
    parsed.release();
  }
}

export function functionOf(stmt: Node): { def: Node; decorators: Node[] } | null {
  if (stmt.type === 'function_definition') return { def: stmt, decorators: [] };
  if (stmt.type === 'decorated_definition') {
    const def = stmt.childForFieldName('definition');
    if (def) return { def, decorators: named(stmt).filter((c) => c.type === 'decorator') };
  }
  return null;
}

export function isAsync(def: Node): boolean {
  return def.child(0)?.type === 'async';
}

export function codePointCompare(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(j)!;
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  const ra = a.length - i;
  const rb = b.length - j;
  return ra === rb ? 0 : ra < rb ? -1 : 1;
}
