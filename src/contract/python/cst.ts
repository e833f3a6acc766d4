// Small helpers over tree-sitter nodes shared by the parse check, the lowering and the
// extraction walks (child lists without comments and line continuations).

import type { Node } from 'web-tree-sitter';

export function nfkc(name: string): string {
  // Python normalises non-ASCII identifiers to NFKC while parsing.
  return /^[\x00-\x7f]*$/.test(name) ? name : name.normalize('NFKC');
}

export function isTrivia(n: Node): boolean {
  const t = n.type;
  return t === 'comment' || t === 'line_continuation';
}

// (Node#children fetches all children in one call; child(i) walks from the first each time.)
export function named(n: Node): Node[] {
  return n.namedChildren.filter((c): c is Node => c !== null && !isTrivia(c));
}

export function all(n: Node): Node[] {
  return n.children.filter((c): c is Node => c !== null && !isTrivia(c));
}
