// Python contract extraction. The gate must read the public API of pushed Python code
// without running a Python interpreter on it, so the modules under ./python/ parse source
// with the tree-sitter Python grammar (WebAssembly, in-process), lower the parts they need
// into a small model of Python's `ast` nodes, and print expressions exactly as CPython
// 3.11's `ast.unparse` does. Two row formats come out of it:
//   - `seed`: byte-for-byte the rows and digest of the seed article's public_signatures /
//     contract_digest, so existing allow files keep matching;
//   - `v1`: a richer, normalised description of a module's public surface.
// This file is the facade the rest of the gate imports from; the work is in:
//   python/grammar.ts      grammar loading, the shared parser and annotation query
//   python/parse.ts        source preparation and the Python 3 syntax check
//   python/position.ts     index-located errors, index -> line/column
//   python/annotations.ts  re-parsing annotations in parentheses (tree-sitter workarounds)
//   python/literals.ts     number and string literal checks and decoding
//   python/cst.ts          tree-sitter node helpers
//   python/ast.ts          the ast model
//   python/lower.ts        CST -> ast model (expressions, call arguments, parameters)
//   python/strings.ts      CST -> ast model for string literals and f-strings
//   python/repr.ts         Python's repr() of constants, str.isprintable()
//   python/unparse.ts      the ast.unparse port
//   python/walk.ts         what both row formats share (parse + lower, defs, ordering)
//   python/seed.ts         the seed rows, file order and digest
//   python/v1.ts           the v1 rows and the re-export links (resolved in py-reexport.ts)

/** Bumped whenever the rows produced for the same source could change. */
export const PY_EXTRACTOR_VERSION = 3;

export { initPython, pythonTree } from './python/grammar.js';
export { extractPythonSeed, seedDigest, seedOrder } from './python/seed.js';
export { analysePythonV1, extractPythonV1, isPrivateModule, type PyLinks } from './python/v1.js';
