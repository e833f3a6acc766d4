// Python number and string literals: validity checks and decoding of string bodies
// (escapes, raw and byte strings) into the code points the ast model holds.

import type { Node } from 'web-tree-sitter';
import type { ConstValue } from './ast.js';
import { PyError } from './position.js';

const DIGITPART = String.raw`\d(?:_?\d)*`;
/** Candidate number tokens in source text (a superset; checked against the tree on doubt). */
export const NUMBER_LIKE = /(?<![\p{L}\p{N}_.])(?:\d|\.\d)(?:[eE][+-]|[\p{L}\p{N}_.])*/gu;
export const DEC_INT = /^(?:0(?:_?0)*|[1-9](?:_?\d)*)$/;
export const HEX_INT = /^0[xX](?:_?[0-9a-fA-F])+$/;
export const OCT_INT = /^0[oO](?:_?[0-7])+$/;
export const BIN_INT = /^0[bB](?:_?[01])+$/;
export const IMAG_INT = new RegExp(`^${DIGITPART}[jJ]$`);
export const FLOAT = new RegExp(`^(?:(?:(?:${DIGITPART})?\\.${DIGITPART}|${DIGITPART}\\.)(?:[eE][+-]?${DIGITPART})?|${DIGITPART}[eE][+-]?${DIGITPART})[jJ]?$`);

export function checkNumber(n: Node): void {
  const s = n.text;
  const ok = n.type === 'integer' ? DEC_INT.test(s) || HEX_INT.test(s) || OCT_INT.test(s) || BIN_INT.test(s) || IMAG_INT.test(s) : FLOAT.test(s);
  if (!ok) throw new PyError(n.startIndex, `invalid number literal ${JSON.stringify(s)}`);
}

export function numberConstant(n: Node): ConstValue {
  const s = n.text.replace(/_/g, '');
  if (/[jJ]$/.test(s)) return { t: 'complex', imag: Number(s.slice(0, -1)) };
  if (n.type === 'float') return { t: 'float', v: Number(s) };
  const lower = s.length > 1 && s[0] === '0' ? s.slice(0, 2).toLowerCase() + s.slice(2) : s;
  if (/^0+$/.test(lower)) return { t: 'int', v: 0n };
  return { t: 'int', v: BigInt(lower) };
}

const SIMPLE_ESCAPES: Record<string, number> = {
  '\\': 0x5c,
  "'": 0x27,
  '"': 0x22,
  a: 7,
  b: 8,
  f: 12,
  n: 10,
  r: 13,
  t: 9,
  v: 11,
};

export interface StrFlags {
  raw: boolean;
  bytes: boolean;
  fmt: boolean;
}

/**
 * Decode the body of a string literal the way Python's tokenizer does. `at` maps an offset
 * in `raw` to a source index for error reporting.
 */
export function decodeBody(raw: string, flags: StrFlags, at: (i: number) => number, strictNamedEscapes: boolean): number[] {
  const out: number[] = [];
  const hex = (from: number, len: number): number => {
    const h = raw.slice(from, from + len);
    if (h.length !== len || !/^[0-9a-fA-F]+$/.test(h)) throw new PyError(at(from - 2), 'truncated escape sequence in string literal');
    return parseInt(h, 16);
  };
  for (let i = 0; i < raw.length; ) {
    const cp = raw.codePointAt(i)!;
    const width = cp > 0xffff ? 2 : 1;
    if (flags.bytes && cp > 0x7f) throw new PyError(at(i), 'bytes can only contain ASCII literal characters');
    if (flags.fmt && (cp === 0x7b || cp === 0x7d) && raw.charCodeAt(i + 1) === cp) {
      out.push(cp);
      i += 2;
      continue;
    }
    if (cp !== 0x5c || flags.raw) {
      out.push(cp);
      i += width;
      continue;
    }
    const next = raw[i + 1];
    if (next === undefined) {
      out.push(0x5c);
      i += 1;
      continue;
    }
    if (next === '\n') {
      i += 2;
      continue;
    }
    if (Object.hasOwn(SIMPLE_ESCAPES, next)) {
      out.push(SIMPLE_ESCAPES[next]!);
      i += 2;
      continue;
    }
    if (next >= '0' && next <= '7') {
      let j = i + 1;
      let v = 0;
      while (j < raw.length && j < i + 4 && raw[j]! >= '0' && raw[j]! <= '7') v = v * 8 + (raw.charCodeAt(j++) - 48);
      out.push(flags.bytes ? v & 0xff : v);
      i = j;
      continue;
    }
    if (next === 'x') {
      out.push(hex(i + 2, 2));
      i += 4;
      continue;
    }
    if (!flags.bytes && (next === 'u' || next === 'U')) {
      const len = next === 'u' ? 4 : 8;
      const v = hex(i + 2, len);
      if (v > 0x10ffff) throw new PyError(at(i), 'illegal Unicode character in string literal');
      out.push(v);
      i += 2 + len;
      continue;
    }
    if (!flags.bytes && next === 'N') {
      const close = raw.indexOf('}', i);
      if (raw[i + 2] !== '{' || close === -1) throw new PyError(at(i), 'malformed \\N character escape');
      // No Unicode name database is available here: keep the escape as written.
      if (strictNamedEscapes) throw new PyError(at(i), '\\N{...} escapes are not supported by the seed-compatible extractor');
      for (const ch of raw.slice(i, close + 1)) out.push(ch.codePointAt(0)!);
      i = close + 1;
      continue;
    }
    out.push(0x5c); // unknown escape: the backslash stays
    i += 1;
  }
  return out;
}
