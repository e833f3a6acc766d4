// Loads the tree-sitter Python grammar (WebAssembly) once per process and holds the
// parser and the annotation query every other part of the Python extractor uses.

import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { Language, Parser, Query, type Tree } from 'web-tree-sitter';

let parser: Parser | null = null;
export let typeFormQuery: Query | null = null;
let loading: Promise<void> | null = null;

const TYPE_FORMS = '[(generic_type) (union_type) (member_type) (constrained_type)]';
const TYPE_FORM_QUERY = `
(function_definition return_type: (type ${TYPE_FORMS}) @t)
(typed_parameter type: (type ${TYPE_FORMS}) @t)
(typed_default_parameter type: (type ${TYPE_FORMS}) @t)
(assignment type: (type ${TYPE_FORMS}) @t)
`;

/** Load the grammar (idempotent). */
export function initPython(): Promise<void> {
  if (parser) return Promise.resolve();
  if (!loading) {
    loading = (async () => {
      await Parser.init();
      const require = createRequire(import.meta.url);
      const wasm = await readFile(require.resolve('tree-sitter-python/tree-sitter-python.wasm'));
      const language = await Language.load(new Uint8Array(wasm.buffer, wasm.byteOffset, wasm.byteLength));
      const p = new Parser();
      p.setLanguage(language);
      typeFormQuery = new Query(language, TYPE_FORM_QUERY);
      parser = p;
    })();
    loading.catch(() => {
      loading = null;
    });
  }
  return loading;
}

export function requireParser(): Parser {
  if (!parser) throw new Error('python contract extractor used before initPython() resolved');
  return parser;
}

/** A tree-sitter parse of Python source for other static readers (the tamper scan). */
export async function pythonTree(text: string): Promise<Tree> {
  await initPython();
  const tree = requireParser().parse(text);
  if (!tree) throw new Error('tree-sitter returned no tree');
  return tree;
}
