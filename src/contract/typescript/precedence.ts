// The TypeScript printer's tables: operator precedence for expressions and types, the keyword
// types, and the literal contexts of inferred shapes. Split out of src/contract/typescript.ts
// (issue 22) so the printer reads as code and the numbers it compares live in one place.

import { AST_NODE_TYPES as N } from '@typescript-eslint/typescript-estree';

export const INFERRED = '<inferred>';

/** Literal context of an unannotated value: widened, literal at the top only (`const x = 1`), or deep (`as const`). */
export const Lit = { Widen: 0, Top: 1, Deep: 2 } as const;
export type Lit = (typeof Lit)[keyof typeof Lit];
export const IDENT = /^[A-Za-z_$][\w$]*$/;

// Expression precedence (higher binds tighter).
export const P_SEQ = 1;
export const P_ASSIGN = 2;
export const P_COND = 3;
export const P_UNARY = 16;
export const P_POSTFIX = 17;
export const P_CALL = 18;
export const P_PRIMARY = 19;
export const BINARY_PREC: Record<string, number> = {
  '??': 4, '||': 5, '&&': 6, '|': 7, '^': 8, '&': 9,
  '==': 10, '!=': 10, '===': 10, '!==': 10,
  '<': 11, '>': 11, '<=': 11, '>=': 11, instanceof: 11, in: 11,
  '<<': 12, '>>': 12, '>>>': 12, '+': 13, '-': 13, '*': 14, '/': 14, '%': 14, '**': 15,
};
export const P_AS = 11;

// Type precedence.
export const T_FN = 0;
export const T_UNION = 1;
export const T_INTER = 2;
export const T_OP = 3;
export const T_POSTFIX = 4;
export const T_PRIMARY = 5;

export const KEYWORD_TYPES: Partial<Record<N, string>> = {
  [N.TSAnyKeyword]: 'any', [N.TSBigIntKeyword]: 'bigint', [N.TSBooleanKeyword]: 'boolean',
  [N.TSIntrinsicKeyword]: 'intrinsic', [N.TSNeverKeyword]: 'never', [N.TSNullKeyword]: 'null',
  [N.TSNumberKeyword]: 'number', [N.TSObjectKeyword]: 'object', [N.TSStringKeyword]: 'string',
  [N.TSSymbolKeyword]: 'symbol', [N.TSUndefinedKeyword]: 'undefined', [N.TSUnknownKeyword]: 'unknown',
  [N.TSVoidKeyword]: 'void', [N.TSThisType]: 'this',
};

export function num(value: number): string {
  return Object.is(value, -0) ? '0' : String(value);
}

