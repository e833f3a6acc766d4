// Contract extractor for TypeScript/JavaScript: turns one source file into sorted rows, one per
// public signature element, re-rendered from the AST so formatting, comments and bodies never
// change them while any change to a public signature does. Never executes or imports the source.
//
// The facade: the extractor lives in ./typescript/ (issue 22), as the Python one in ./python/:
//   parse.ts       the entry point: TypeScript parses, bodies are blanked, ESTree is converted
//   extractor.ts   the walk: which declarations are public and the rows each one gives
//   printer.ts     signatures, types, expressions and inferred shapes, printed canonically
//   locals.ts      Local, Scope and the small AST questions both share
//   precedence.ts  operator precedence, keyword types, literal contexts

export { TS_EXTENSIONS, TS_EXTRACTOR_VERSION, extractTypeScript, isTypeScriptPath } from './typescript/parse.js';
