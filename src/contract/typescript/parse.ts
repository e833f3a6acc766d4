// The TypeScript/JavaScript extractor's entry point: parse one file (TypeScript's parser, once;
// bodies emptied in its tree and blanked in its text; then typescript-estree's converter) and
// hand the ESTree to the Extractor. Split out of src/contract/typescript.ts (issue 22) so that
// the parsing, the row walk and the printer are each one file; src/contract/typescript.ts
// re-exports this module's API.

import { createHash } from 'node:crypto';
import ts from 'typescript';
import { TSError, parseAndGenerateServices, type TSESTree } from '@typescript-eslint/typescript-estree';
import { ContractParseError } from '../../errors.js';
import { Extractor } from './extractor.js';

export const TS_EXTENSIONS: readonly string[] = Object.freeze(['.ts', '.tsx', '.mts', '.cts', '.js', '.mjs', '.cjs']);

/** Bump whenever the row format changes: it keys cached contract digests. */
export const TS_EXTRACTOR_VERSION = 3;

/** True when the path has a TS/JS extension this extractor handles ('.d.ts' counts as '.ts'). */
export function isTypeScriptPath(path: string): boolean {
  return TS_EXTENSIONS.some(ext => path.endsWith(ext));
}

/** TypeScript's script kind for a path, as typescript-estree chooses it (jsx only for unknown extensions). */
function scriptKind(path: string, jsx: boolean): ts.ScriptKind {
  const ext = /\.[^./]*$/.exec(path.toLowerCase())?.[0] ?? '';
  if (ext === '.js' || ext === '.mjs' || ext === '.cjs') return ts.ScriptKind.JS;
  if (ext === '.ts' || ext === '.mts' || ext === '.cts') return ts.ScriptKind.TS;
  if (ext === '.jsx') return ts.ScriptKind.JSX;
  if (ext === '.tsx') return ts.ScriptKind.TSX;
  if (ext === '.json') return ts.ScriptKind.JSON;
  return jsx ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
}

function sourceFile(path: string, text: string, kind: ts.ScriptKind, parents: boolean): ts.SourceFile {
  return ts.createSourceFile(path, text, { languageVersion: ts.ScriptTarget.Latest, jsDocParsingMode: ts.JSDocParsingMode.ParseNone }, parents, kind);
}

/**
 * The `{ ... }` bodies of functions, methods, accessors, constructors and static blocks that
 * no other such body contains. A body can declare nothing public, so its inside never reaches
 * a row; only its braces are kept. The walk also links every node outside those bodies (and the
 * bodies' blocks) to its parent, which the converter needs: the file is parsed without parent
 * links, so nothing is spent linking the insides of bodies that nobody reads.
 */
function outerBodies(sf: ts.SourceFile): ts.Block[] {
  const out: ts.Block[] = [];
  let parent: ts.Node = sf;
  let skip: ts.Node | undefined; // the body whose node is being walked: linked, not entered
  const visit = (n: ts.Node): undefined => {
    (n as { parent: ts.Node }).parent = parent;
    if (n === skip) return undefined;
    const body = ts.isFunctionLike(n) || ts.isClassStaticBlockDeclaration(n) ? (n as { body?: ts.Node }).body : undefined;
    const parent0 = parent;
    const skip0 = skip;
    parent = n;
    // Parameters and types may hold further functions (default values); their bodies count too.
    if (body !== undefined && ts.isBlock(body)) out.push((skip = body));
    ts.forEachChild(n, visit);
    parent = parent0;
    skip = skip0;
    return undefined;
  };
  ts.forEachChild(sf, visit);
  return out;
}

/**
 * True when TypeScript took the file for a module because of an `import.meta` (rather than a
 * top-level import or export, which no body can hold).
 */
function importMetaModule(sf: ts.SourceFile): boolean {
  const indicator = (sf as unknown as { externalModuleIndicator?: ts.Node | true }).externalModuleIndicator;
  return indicator !== undefined && (indicator === true || ts.isMetaProperty(indicator));
}

/** `text` with every character inside the ranges made a space, line breaks kept (so lines and columns stay). */
function blank(text: string, ranges: Array<[number, number]>): string {
  const parts: string[] = [];
  let at = 0;
  for (const [from, to] of ranges.sort((a, b) => a[0] - b[0])) {
    parts.push(text.slice(at, from), text.slice(from, to).replace(/[^\r\n\u2028\u2029]+/g, (run) => ' '.repeat(run.length)));
    at = to;
  }
  parts.push(text.slice(at));
  return parts.join('');
}

/**
 * The signature key of a file that parsed without an error: a hash of its top-level
 * statements' texts with the insides of its outer bodies left out, and of its path (which
 * decides the kind of file, and starts every row). The rows are a function of exactly that:
 * the extractor never reads inside a body, nor the comments and blank lines between
 * statements, nor a position (rows name no line). So a file whose key is one seen before has
 * that file's rows: an edit inside function bodies, or of the comments between declarations,
 * costs a parse, not the conversion and the walk (issue 24).
 */
function signatureKey(sf: ts.SourceFile, source: string, path: string, bodies: ts.Block[], inners: number[]): string {
  const h = createHash('sha256').update(`ts-sig:${TS_EXTRACTOR_VERSION}\0${path}\0`);
  const gaps = bodies.map((b, i) => [inners[i]!, b.end - 1] as const).sort((a, b) => a[0] - b[0]);
  let g = 0;
  for (const st of sf.statements) {
    const start = st.getStart(sf);
    // Each statement's text, less the insides of the bodies in it: its parts, each
    // length-prefixed, then `|` (no two lists of statements and parts hash alike).
    const parts: string[] = [];
    let at = start;
    while (g < gaps.length && gaps[g]![0] < st.end) {
      const [from, to] = gaps[g]!;
      if (from >= at) {
        parts.push(source.slice(at, from));
        at = to;
      }
      g++;
    }
    parts.push(source.slice(at, st.end));
    for (const part of parts) h.update(`${part.length}:${part}`);
    h.update('|');
  }
  return h.digest('hex');
}

/**
 * Public-API rows of one TS/JS file. Rows are stable strings, one per public signature element, in a deterministic order (sort them). Each row starts with `${path}::`.
 */
export function extractTypeScript(source: string, path: string): string[] {
  return extractTypeScriptKeyed(source, path).rows;
}

/**
 * Rows of one TS/JS file and its signature key (null when the file has a syntax error, which
 * refuses it). `known` answers a key seen before with its rows: then the file is not converted.
 *
 * Speed: converting a whole file to ESTree costs several times TypeScript's own parse, and
 * most of a file is function bodies, which carry no public signature. So TypeScript parses the
 * file once (any syntax error anywhere refuses, through typescript-estree's own error), the
 * bodies are emptied in that same tree (and blanked in its text), and typescript-estree converts
 * only what is left. The tree and text it sees are the ones a parse of the blanked text would
 * give, save for the nodes inside bodies, which it never reaches.
 */
export function extractTypeScriptKeyed(source: string, path: string, known?: (sig: string) => string[] | undefined): { rows: string[]; sig: string | null } {
  const jsx = /\.(tsx|jsx|js|mjs|cjs)$/.test(path);
  const kind = scriptKind(path, jsx);
  let ast: TSESTree.Program;
  let text = source;
  let sig: string | null = null;
  try {
    let sf = sourceFile(path, source, kind, false);
    // A syntax error: typescript-estree turns TypeScript's first diagnostic into its error.
    const hasErrors = ((sf as unknown as { parseDiagnostics?: unknown[] }).parseDiagnostics?.length ?? 0) > 0;
    if (!hasErrors) {
      const bodies = outerBodies(sf);
      // Just after each body's `{` (getStart skips its leading trivia, so it is found once).
      const inners = bodies.map((b) => b.getStart(sf) + 1);
      sig = signatureKey(sf, source, path, bodies, inners);
      const rows = known?.(sig);
      if (rows) return { rows, sig };
      text = blank(source, bodies.map((b, i) => [inners[i]!, b.end - 1]));
      if (importMetaModule(sf)) {
        // The file is a module only through an `import.meta`, which may sit in a body: whether
        // the blanked text is still a module (and how TypeScript parsed its top level) is
        // TypeScript's to say, so parse the blanked text again.
        sf = sourceFile(path, text, kind, true);
      } else {
        bodies.forEach((b, i) => {
          // As a parse of `{ <spaces> }` makes it: no statements, the list just after the `{`.
          (b as { statements: ts.NodeArray<ts.Statement> }).statements = ts.setTextRange(ts.factory.createNodeArray<ts.Statement>([]), { pos: inners[i]!, end: inners[i]! });
        });
        // The converter reads literals' raw text from the file's text: it gets the blanked one,
        // the same outside bodies and the same length.
        (sf as { text: string }).text = text;
      }
    }
    // parseAndGenerateServices takes a ts.SourceFile; with no project it only converts it.
    ast = parseAndGenerateServices(sf, {
      filePath: path,
      preserveNodeMaps: false,
      jsx,
      loc: true,
      range: true,
      comment: false,
      tokens: false,
      jsDocParsingMode: 'none',
      suppressDeprecatedPropertyWarnings: true,
      loggerFn: false,
    }).ast;
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    if (err instanceof TSError) {
      throw new ContractParseError(path, err.lineNumber, err.column + 1, detail, { cause: err });
    }
    throw new ContractParseError(path, 0, 0, detail, { cause: err });
  }
  return { rows: new Extractor(text, path).run(ast), sig };
}
