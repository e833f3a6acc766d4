// Deterministic generator of Python expression source text, used to compare our port of
// ast.unparse against the real python3 on many shapes (precedence, literals, strings,
// f-strings, comprehensions...). Not every generated text is valid Python; the tests let
// python3 decide and skip the ones it rejects.

export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    // mulberry32
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

const NAMES = ['x', 'y', 'Foo', 'int', 'str', 'None_', 'match', 'type', 'print', '_p', 'ñ', 'ﬁle', 'ℌ', 'données', 'T'];
const DOTTED = ['typing.Optional', 'collections.abc.Callable', 'np.ndarray', 'os.PathLike'];
const INTS = ['0', '00', '7', '42', '1_000', '0x1F', '0XdeadBEEF', '0o17', '0O7_7', '0b1010', '0B1_1', '123456789012345678901234567890', '0_0'];
const FLOATS = ['1.5', '.5', '5.', '1e3', '1E-7', '1_0.5e+1_0', '1e400', '0.1', '1e16', '1e15', '123.456e-10', '0.0001', '0.00001', '3.141592653589793238'];
const IMAGS = ['1j', '3J', '1.5j', '1e400j', '0j', '1e16j', '0777j', '.5j'];

// String body pieces; each item is [text, allowed in bytes, allowed in raw]
const STR_PIECES: [string, boolean, boolean][] = [
  ['abc', true, true],
  ['A b', true, true],
  ["'", true, false],
  ['"', true, false],
  ['\\n', true, true],
  ['\\t', true, true],
  ['\\\\', true, true],
  ['\\x41', true, true],
  ['\\x00', true, true],
  ['\\x7f', true, true],
  ['\\xff', true, true],
  ['\\0', true, true],
  ['\\7', true, true],
  ['\\101', true, true],
  ['\\377', true, true],
  ['\\d', true, true],
  ['\\8', true, true],
  ['\\u00e9', true, true],
  ['\\u200b', true, true],
  ['\\U0001F600', true, true],
  ['\\ud800', true, true],
  ['\\ud83d\\ude00', true, true],
  ['\\a\\b\\f\\v\\r', true, true],
  ["\\'", true, true],
  ['\\"', true, true],
  ['é', false, true],
  ['中文', false, true],
  ['😀', false, true],
  ['\u00a0', false, true],
  ['\u0301', false, true],
  ['\u202e', false, true],
  ['\u0378', false, true],
  ['\ue000', false, true],
  ['\ufffd', false, true],
  ['\u{1F6DC}', false, true], // assigned in Unicode 15: not printable for Python 3.11
  ['\u2028', false, true],
  ['{', true, true],
  ['}', true, true],
  [' ', true, true],
];

export class ExprGen {
  constructor(private readonly r: Rng) {}

  private sp(): string {
    return this.r.pick(['', '', '', ' ', '  ']);
  }

  /** Whitespace valid only inside brackets: may include newlines and comments. */
  private isp(): string {
    return this.r.pick(['', '', ' ', '\n  ', ' # note\n', '\t']);
  }

  name(): string {
    return this.r.chance(0.2) ? this.r.pick(DOTTED) : this.r.pick(NAMES);
  }

  number(): string {
    const k = this.r.int(3);
    return k === 0 ? this.r.pick(INTS) : k === 1 ? this.r.pick(FLOATS) : this.r.pick(IMAGS);
  }

  stringPiece(opts: { fstring?: boolean; quote?: string } = {}): string {
    const r = this.r;
    const bytes = !opts.fstring && r.chance(0.2);
    const raw = r.chance(0.2);
    let prefix = '';
    if (opts.fstring) prefix = raw ? r.pick(['rf', 'fR', 'Rf']) : r.pick(['f', 'F']);
    else if (bytes) prefix = raw ? r.pick(['rb', 'Br', 'bR']) : r.pick(['b', 'B']);
    else if (raw) prefix = r.pick(['r', 'R']);
    else if (r.chance(0.15)) prefix = r.pick(['u', 'U']);
    const quote = opts.quote ?? r.pick(["'", '"', "'''", '"""']);
    let body = '';
    const n = r.int(4);
    for (let i = 0; i < n; i++) {
      const [text, okBytes, okRaw] = r.pick(STR_PIECES);
      if (bytes && !okBytes) continue;
      if (raw && !okRaw) continue;
      if ((text === '{' || text === '}') && opts.fstring) {
        body += text + text;
        continue;
      }
      body += text;
    }
    if (quote.length === 3 && r.chance(0.3)) body += '\nline2';
    if (opts.fstring) {
      const m = 1 + r.int(2);
      for (let i = 0; i < m; i++) body += this.interpolation(quote[0]!) + (r.chance(0.5) ? 'txt' : '');
    }
    // Keep the closing quote from being escaped or merged.
    if (body.endsWith('\\') && !body.endsWith('\\\\')) body += 'z';
    if (body.endsWith(quote[0]!)) body += 'z';
    return prefix + quote + body + quote;
  }

  private interpolation(outer: string): string {
    const r = this.r;
    const other = outer === "'" ? '"' : "'";
    const inner = r.pick([
      () => this.r.pick(NAMES),
      () => `${this.r.pick(NAMES)}.attr`,
      () => `${this.r.pick(NAMES)}(${this.r.pick(INTS)})`,
      () => `${other}s${other}`,
      () => `a if b else c`,
      () => `a, b`,
      () => `{1: 2}`,
      () => `x + 1`,
      () => `lambda: 1`.replace(/^/, '(') + ')',
      () => `[i for i in y]`,
    ])();
    const eq = r.chance(0.15) ? r.pick(['=', ' = ', '= ']) : '';
    const conv = r.chance(0.25) ? r.pick(['!r', '!s', '!a']) : '';
    let spec = '';
    if (r.chance(0.3)) spec = ':' + r.pick(['>10', '.2f', '', '%H:%M', `{${this.r.pick(NAMES)}}`, `>{w}.{p}`]);
    const lead = eq && r.chance(0.5) ? ' ' : '';
    return `{${lead}${inner}${eq}${conv}${spec}}`;
  }

  string(): string {
    const n = 1 + (this.r.chance(0.3) ? this.r.int(3) : 0);
    const parts: string[] = [];
    for (let i = 0; i < n; i++) parts.push(this.stringPiece({ fstring: this.r.chance(0.2) }));
    return parts.join(this.r.pick([' ', '', '  ']));
  }

  atom(): string {
    const r = this.r;
    switch (r.int(10)) {
      case 0:
      case 1:
      case 2:
        return this.name();
      case 3:
        return this.number();
      case 4:
      case 5:
        return this.string();
      case 6:
        return r.pick(['None', 'True', 'False', '...', 'Ellipsis']);
      default:
        return this.name();
    }
  }

  expr(depth: number): string {
    const r = this.r;
    if (depth <= 0 || r.chance(0.25)) return this.atom();
    const d = depth - 1;
    const e = (): string => this.expr(d);
    const pe = (): string => (r.chance(0.5) ? `(${this.isp()}${e()}${this.isp()})` : e());
    const list = (n: number, f: () => string): string => {
      const out: string[] = [];
      for (let i = 0; i < n; i++) out.push(f());
      return out.join(`,${this.isp()}`);
    };
    switch (r.int(26)) {
      case 0:
        return `${pe()}.${this.r.pick(['attr', 'real', 'x'])}`;
      case 1:
      case 2: {
        const n = 1 + r.int(3);
        const item = (): string =>
          r.pick([
            e,
            e,
            () => `${r.chance(0.6) ? e() : ''}:${r.chance(0.6) ? e() : ''}${r.chance(0.3) ? ':' + (r.chance(0.6) ? e() : '') : ''}`,
            () => `*${this.name()}`,
            () => `[${list(r.int(3), e)}]`,
            () => '...',
          ])();
        return `${this.name()}[${this.isp()}${list(n, item)}${r.chance(0.2) ? ',' : ''}${this.isp()}]`;
      }
      case 3:
        return `${this.name()}[${e()}][${e()}]`;
      case 4: {
        const args: string[] = [];
        for (let i = r.int(3); i > 0; i--) args.push(r.chance(0.2) ? `*${e()}` : e());
        for (let i = r.int(2); i > 0; i--) args.push(`${r.pick(['k', 'key', 'type'])}${this.sp()}=${this.sp()}${e()}`);
        if (r.chance(0.2)) args.push(`**${e()}`);
        if (args.length === 0 && r.chance(0.3)) return `${this.name()}(${e()} for x in ${e()})`;
        return `${this.name()}(${args.join(`,${this.isp()}`)}${args.length && r.chance(0.2) ? ',' : ''})`;
      }
      case 5:
      case 6:
      case 7: {
        const op = r.pick(['+', '-', '*', '@', '/', '%', '//', '**', '|', '&', '^', '<<', '>>', '|', '|']);
        return `${pe()}${this.sp() || ' '}${op}${this.sp() || ' '}${pe()}`;
      }
      case 8:
        return `${r.pick(['-', '+', '~', 'not '])}${pe()}`;
      case 9:
        return `${pe()} ${r.pick(['and', 'or'])} ${pe()}${r.chance(0.4) ? ` ${r.pick(['and', 'or'])} ${pe()}` : ''}`;
      case 10: {
        const ops = ['<', '<=', '==', '!=', '>=', '>', 'in', 'not in', 'is', 'is not', 'not  in', 'is  not'];
        let s = pe();
        for (let i = 1 + r.int(2); i > 0; i--) s += ` ${r.pick(ops)} ${pe()}`;
        return s;
      }
      case 11:
        return `${pe()} if ${pe()} else ${pe()}`;
      case 12: {
        const params = r.pick(['', 'x', 'x, y', 'x=1', '*a, b', 'x, /, y', '*, k=2', '**kw', 'a, *b, c=3, **d']);
        return `lambda${params ? ' ' + params : ''}: ${pe()}`;
      }
      case 13:
        return `[${this.isp()}${list(r.int(4), () => (r.chance(0.15) ? `*${e()}` : e()))}${this.isp()}]`;
      case 14: {
        const n = r.int(4);
        return `(${list(n, e)}${n === 1 || (n > 1 && r.chance(0.3)) ? ',' : ''})`;
      }
      case 15:
        return `{${list(1 + r.int(3), () => (r.chance(0.15) ? `*${e()}` : e()))}}`;
      case 16:
        return `{${list(r.int(3), () => (r.chance(0.2) ? `**${pe()}` : `${e()}:${this.sp()}${e()}`))}}`;
      case 17: {
        const gen = (): string =>
          ` ${r.chance(0.1) ? 'async ' : ''}for ${r.pick(['x', 'x, y', '(x, y)', '[a, *b]', 'o.a'])} in ${pe()}${r.chance(0.3) ? ` if ${pe()}` : ''}`;
        const gens = gen() + (r.chance(0.3) ? gen() : '');
        return r.pick([`[${e()}${gens}]`, `{${e()}${gens}}`, `(${e()}${gens})`, `{${e()}: ${e()}${gens}}`]);
      }
      case 18:
        return `await ${pe()}`;
      case 19:
        return `(${this.r.pick(['x', 'y', 'n'])} := ${e()})`;
      case 20:
        return r.pick([`(yield)`, `(yield ${e()})`, `(yield from ${e()})`, `(yield ${e()}, ${e()})`]);
      case 21:
        return `${this.name()}[${e()}]${r.chance(0.5) ? ' | None' : ''}`;
      case 22:
        return `${pe()}(${e()})`;
      case 23:
        return this.string();
      case 24:
        return `Callable[[${list(r.int(3), e)}], ${e()}]`;
      default:
        return `(${this.isp()}${e()}${this.isp()})`;
    }
  }
}

/** A batch of expression texts: generated, deterministic for a given seed. */
export function generateExpressions(seed: number, count: number, depth = 3): string[] {
  const g = new ExprGen(new Rng(seed));
  const out: string[] = [];
  for (let i = 0; i < count; i++) out.push(g.expr(1 + (i % depth)));
  return out;
}
