// The small model of Python's `ast` expression nodes that the CST lowering produces and
// the ast.unparse port prints: the shared vocabulary of the Python extractor modules.

export type PyStr = number[]; // code points; Python strings may hold lone surrogates
export type ConstValue =
  | { t: 'str'; s: PyStr }
  | { t: 'bytes'; b: number[] }
  | { t: 'int'; v: bigint }
  | { t: 'float'; v: number }
  | { t: 'complex'; imag: number }
  | { t: 'None' }
  | { t: 'bool'; v: boolean }
  | { t: 'Ellipsis' };

export interface Arg {
  arg: string;
  annotation: Expr | null;
}
export interface Arguments {
  posonlyargs: Arg[];
  args: Arg[];
  vararg: Arg | null;
  kwonlyargs: Arg[];
  kw_defaults: (Expr | null)[];
  kwarg: Arg | null;
  defaults: Expr[];
}
export interface Keyword {
  arg: string | null;
  value: Expr;
}
export interface Comprehension {
  target: Expr;
  iter: Expr;
  ifs: Expr[];
  isAsync: boolean;
}
export interface ConstantNode {
  k: 'Constant';
  value: ConstValue;
  kind: 'u' | null;
}
export interface FormattedValue {
  k: 'FormattedValue';
  value: Expr;
  conversion: number;
  formatSpec: JoinedStr | null;
}
export interface JoinedStr {
  k: 'JoinedStr';
  values: (ConstantNode | FormattedValue)[];
}

export type Expr =
  | { k: 'Name'; id: string }
  | ConstantNode
  | JoinedStr
  | FormattedValue
  | { k: 'Attribute'; value: Expr; attr: string }
  | { k: 'Subscript'; value: Expr; slice: Expr }
  | { k: 'Slice'; lower: Expr | null; upper: Expr | null; step: Expr | null }
  | { k: 'Starred'; value: Expr }
  | { k: 'BinOp'; op: string; left: Expr; right: Expr }
  | { k: 'UnaryOp'; op: string; operand: Expr }
  | { k: 'BoolOp'; op: 'and' | 'or'; values: Expr[] }
  | { k: 'Compare'; left: Expr; ops: string[]; comparators: Expr[] }
  | { k: 'Call'; func: Expr; args: Expr[]; keywords: Keyword[] }
  | { k: 'List' | 'Tuple' | 'Set'; elts: Expr[] }
  | { k: 'Dict'; keys: (Expr | null)[]; values: Expr[] }
  | { k: 'Lambda'; args: Arguments; body: Expr }
  | { k: 'IfExp'; test: Expr; body: Expr; orelse: Expr }
  | { k: 'Await'; value: Expr }
  | { k: 'Yield'; value: Expr | null }
  | { k: 'YieldFrom'; value: Expr }
  | { k: 'NamedExpr'; target: Expr; value: Expr }
  | { k: 'ListComp' | 'SetComp' | 'GeneratorExp'; elt: Expr; generators: Comprehension[] }
  | { k: 'DictComp'; key: Expr; value: Expr; generators: Comprehension[] };
