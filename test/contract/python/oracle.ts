// Reference implementations run by the real python3 (3.11) during the tests: they are the
// oracle our Node-only extractor must agree with. Each script reads JSON from stdin and
// prints JSON to stdout.

import { execFileSync } from 'node:child_process';

let interpreter: string | null = null;

/** The real interpreter behind `python3` (version-manager shims can cost a second a call). */
function python(): string {
  interpreter ??= execFileSync('python3', ['-c', 'import sys; print(sys.executable)']).toString().trim() || 'python3';
  return interpreter;
}

export function runPython(script: string, input: unknown, cwd?: string): unknown {
  const out = execFileSync(python(), ['-X', 'utf8', '-c', script], {
    input: JSON.stringify(input),
    cwd,
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, PYTHONIOENCODING: 'utf-8', PYTHONDONTWRITEBYTECODE: '1' },
  });
  return JSON.parse(out.toString('utf8'));
}

/**
 * The seed's contract: for every *.py under ./src (in sorted path order), the module-level
 * public def/async def of the file, as `path::name(regular args)->unparsed return`, hashed
 * with sha256 over the rows joined by newlines. Input: a list of tree roots; for each, the
 * working directory is changed to that root and the root of the walk is Path("src").
 * Prints per tree {"rows", "digest", "files"}, or {"error", "files"} when the seed crashes.
 */
export const SEED_ORACLE = String.raw`
import ast, hashlib, json, sys
from pathlib import Path

def signature_rows(root):
    rows = []
    for path in sorted(root.rglob("*.py")):
        module = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for stmt in module.body:
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) or stmt.name.startswith("_"):
                continue
            names = ",".join(a.arg for a in stmt.args.args)
            ret = ast.unparse(stmt.returns) if stmt.returns else ""
            rows.append(f"{path.as_posix()}::{stmt.name}({names})->{ret}")
    return rows

import os
results = []
for tree in json.load(sys.stdin):
    os.chdir(tree)
    root = Path("src")
    files = [p.as_posix() for p in sorted(root.rglob("*.py"))]
    try:
        rows = signature_rows(root)
    except Exception as e:
        results.append({"error": type(e).__name__ + ": " + str(e), "files": files})
    else:
        digest = hashlib.sha256("\n".join(rows).encode()).hexdigest()
        results.append({"rows": rows, "digest": digest, "files": files})
print(json.dumps(results))
`;

/** sorted() of PurePosixPath objects, for a list of path strings. */
export const SORT_ORACLE = String.raw`
import json, sys
from pathlib import PurePosixPath
paths = json.load(sys.stdin)
print(json.dumps([str(p) for p in sorted(PurePosixPath(x) for x in paths)]))
`;

/**
 * For each expression text: ast.unparse of it as a return annotation, and the v1 row we
 * expect for it placed as a parameter annotation, a default, and a class attribute.
 */
export const UNPARSE_ORACLE = String.raw`
import ast, json, sys, warnings
warnings.simplefilter("ignore")
out = []
for text in json.load(sys.stdin):
    try:
        ret = ast.parse("def f() -> " + text + ": pass\n").body[0].returns
        out.append(ast.unparse(ret))
    except Exception as e:
        out.append(None)
print(json.dumps(out))
`;

/**
 * The v1 row format, written against Python's own ast: public module-level functions,
 * classes (bases, decorators), methods, nested classes, annotated names; __all__ literal
 * lists select the module's names; top-level if/try blocks are looked into.
 * Input: [[path, source], ...]; output: per file a sorted list of rows or {"error"}.
 */
export const V1_ORACLE = String.raw`
import ast, json, re, sys, warnings
warnings.simplefilter("ignore")

def literal_names(node):
    if isinstance(node, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts]
    return None

def module_all(module):
    names, opaque = None, False
    for stmt in module.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets):
            vals = literal_names(stmt.value) if len(stmt.targets) == 1 else None
            if vals is None: opaque = True
            else: names = vals
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == "__all__":
            if stmt.value is None: continue
            vals = literal_names(stmt.value)
            if vals is None: opaque = True
            else: names = vals
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == "__all__":
            vals = literal_names(stmt.value)
            if vals is None or names is None or not isinstance(stmt.op, ast.Add): opaque = True
            else: names = names + vals
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            f = stmt.value.func
            if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "__all__"):
                continue
            args = stmt.value.args
            if f.attr == "extend" and len(args) == 1 and not stmt.value.keywords and names is not None and literal_names(args[0]) is not None:
                names = names + literal_names(args[0])
            elif f.attr == "append" and len(args) == 1 and not stmt.value.keywords and names is not None and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                names = names + [args[0].value]
            else:
                opaque = True
    return None if opaque else names

def is_private(path):
    parts = re.sub(r"\.pyi?$", "", path).split("/")
    return any(p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in parts)

def rows_of(path, source):
    module = ast.parse(source)
    if is_private(path): return []
    exported = module_all(module)
    reexports = exported is None and re.search(r"(^|/)__init__\.pyi?$", path) is not None
    imported = set()
    rows, defined = set(), set()
    def decos(node):
        return "".join("@" + ast.unparse(d) + " " for d in node.decorator_list)
    def visit(body, prefix, is_module):
        def public(name):
            if is_module:
                return name in exported if exported is not None else not name.startswith("_")
            return not name.startswith("_") or name == "__init__"
        for s in body:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if is_module: defined.add(s.name)
                if not public(s.name): continue
                ret = " -> " + ast.unparse(s.returns) if s.returns else ""
                kw = "async def" if isinstance(s, ast.AsyncFunctionDef) else "def"
                rows.add(f"{path}::{decos(s)}{kw} {prefix}{s.name}({ast.unparse(s.args)}){ret}")
            elif isinstance(s, ast.ClassDef):
                if is_module: defined.add(s.name)
                if not public(s.name): continue
                parts = [ast.unparse(b) for b in s.bases] + [("**" if k.arg is None else k.arg + "=") + ast.unparse(k.value) for k in s.keywords]
                bases = "(" + ", ".join(parts) + ")" if parts else ""
                rows.add(f"{path}::{decos(s)}class {prefix}{s.name}{bases}")
                visit(s.body, prefix + s.name + ".", False)
            elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.simple:
                name = s.target.id
                if is_module: defined.add(name)
                if not public(name) or name == "__all__": continue
                alias = re.match(r"^(?:(?:typing|typing_extensions|t)\.)?TypeAlias$", ast.unparse(s.annotation)) is not None
                value = " = " + ast.unparse(s.value) if (s.value is not None and (not is_module or alias)) else ""
                rows.add(f"{path}::{prefix}{name}: {ast.unparse(s.annotation)}{value}")
            elif hasattr(ast, "TypeAlias") and isinstance(s, ast.TypeAlias):
                name = s.name.id
                if is_module: defined.add(name)
                if not public(name): continue
                params = "[" + ", ".join(ast.unparse(p) for p in s.type_params) + "]" if s.type_params else ""
                rows.add(f"{path}::type {prefix}{name}{params} = {ast.unparse(s.value)}")
            elif isinstance(s, ast.ImportFrom) and is_module and reexports:
                for a in s.names:
                    bound = a.asname or a.name.split(".")[-1]
                    if bound != "*" and not bound.startswith("_"): imported.add(bound)
            elif isinstance(s, ast.If):
                visit(s.body, prefix, is_module)
                visit(s.orelse, prefix, is_module)
            elif isinstance(s, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                visit(s.body, prefix, is_module)
                for h in s.handlers: visit(h.body, prefix, is_module)
                visit(s.orelse, prefix, is_module)
                visit(s.finalbody, prefix, is_module)
    visit(module.body, "", True)
    if exported is not None:
        for name in exported:
            if name not in defined: rows.add(f"{path}::export {name}")
    for name in imported:
        if name not in defined: rows.add(f"{path}::export {name}")
    return sorted(rows)

out = []
for path, source in json.load(sys.stdin):
    try:
        out.append(rows_of(path, source.replace("\r\n", "\n").replace("\r", "\n")))
    except Exception as e:
        out.append({"error": type(e).__name__ + ": " + str(e)})
print(json.dumps(out))
`;
