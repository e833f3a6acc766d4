// The tamper scan's text pre-check (src/policy/tamper/prefilter.ts) skips the parse of a file
// that names nothing the scan looks for. It must never skip a file the parsed scan finds
// something in. Checked on every TS/JS and Python file of the five corpus projects (each file
// whole, every line new), and on each check's constructs, spelled plainly and through escapes,
// added to real files that the pre-check skips.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { mayHitPython, mayHitTypeScript } from '../../src/policy/tamper/prefilter.js';
import { scanTypeScript, scanTypeScriptParsed } from '../../src/policy/tamper/scan-typescript.js';
import { scanPython, scanPythonParsed } from '../../src/policy/tamper/scan-python.js';
import type { TamperHit } from '../../src/policy/tamper/checks.js';
import { cloneCorpus } from '../helpers/corpus.js';

const allLines = (text: string) => new Set(text.split('\n').map((_, i) => i + 1));

async function parsed(path: string, text: string): Promise<TamperHit[]> {
  try {
    return path.endsWith('.py') ? await scanPythonParsed(text, path, allLines(text)) : scanTypeScriptParsed(text, path, allLines(text));
  } catch {
    return []; // a file that does not parse is the contract rule's refusal, as in the rule
  }
}
const mayHit = (path: string, text: string) => (path.endsWith('.py') ? mayHitPython(text) : mayHitTypeScript(text));

/** One construct per finding of scan-typescript.ts and stack-js.ts; escapes spell some of them. */
const TS_CONSTRUCTS = [
  "import assert from 'node:assert';",
  "import { vi } from 'vitest';",
  "export * from '@jest/globals';",
  "export { x } from 'tap';",
  "const m = await import('mocha');",
  "const c = require('chai');",
  "const t = process.getBuiltinModule('node:test');",
  'process.exit(0);',
  "process['exit'](0);",
  'process.reallyExit(0);',
  "process.on('exit', () => {});",
  'process.exitCode = 0;',
  'export const e = process.env.NODE_TEST_CONTEXT;',
  "export const k = 'JEST_WORKER_ID';",
  'export const p = `out/junit-${1}.xml`;',
  "export const r = 'TEST-results.xml';",
  'export function f() { return arguments.callee; }',
  'export function g() { return g.caller; }',
  "import * as insp from 'node:inspector';",
  "const v = require('v8');",
  "const b = process.binding('fs');",
  'export const site = (s: any) => s.getFileName();',
  'Error.captureStackTrace({});',
  'Error.prepareStackTrace = (_e: unknown, s: unknown) => s;',
  "export const name = 'prepareStackTrace';",
  "import { readFileSync } from 'node:fs';\nexport function where() { const e = new Error(); return e.stack; }",
  "export function isTest() { return new Error()['stack'].includes('.test.'); }",
  // Escapes that spell a name or a string: the pre-check sees the backslash, the parser the name.
  'proc\\u0065ss.exit(0);',
  "process['\\x65xit'](0);",
  "const j = require('\\u006aest');",
  "export const w = 'PYTE\\ST_CURRENT_TEST';",
  "export const q = 'ju\\\nnit.xml';",
];

const PY_CONSTRUCTS = [
  'import _pytest.assertion',
  'from pluggy import HookimplMarker',
  'def pytest_configure(config):\n    pass',
  'import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None',
  'setattr(builtins.__import__, "x", 1)',
  'pytest_plugins = ["evil"]',
  'class A:\n    def __eq__(self, other):\n        return True',
  'class B:\n    __hash__ = lambda self: 0',
  'import gc\nobjs = gc.get_objects()',
  'from sys import _getframe as g\nx = g(1).f_locals',
  'import inspect as i\ns = i.stack()',
  'import traceback\ntraceback.print_stack()',
  'import threading\nthreading.settrace(None)',
  'import inspect\nsrc = inspect.getsource(frame.f_back)',
  'import linecache\nl = linecache.getline(fr.f_code.co_filename, 1)',
  'import atexit\natexit.register(lambda: None)',
  'import os\nos._exit(0)',
  'import sys\nsys.exit(0)',
  'quit()',
  'raise SystemExit(0)',
  'x = frame.f_globals["expected"]',
  'y = frame.f_lineno',
  'z = getattr(frame, "f_locals")',
  'import os\nif "PYTEST_CURRENT_TEST" in os.environ:\n    pass',
  'open("build/junit.xml", "w")',
  'open(".pytest_cache/v/cache/lastfailed")',
];

t.test('the pre-check skips only files the parsed scan finds nothing in (all five corpus projects)', async (t) => {
  const skipped: Record<string, Array<[string, string]>> = { ts: [], py: [] };
  let files = 0;
  for (const name of ['click', 'attrs', 'packaging', 'zustand', 'jotai']) {
    const dir = cloneCorpus(t, name);
    if (!dir) continue;
    const list = execFileSync('git', ['-C', dir, 'ls-files', '-z'], { encoding: 'utf8' }).split('\0').filter((p) => /\.(py|[cm]?[jt]sx?)$/.test(p));
    let missed = 0;
    let skips = 0;
    for (const p of list) {
      const text = readFileSync(join(dir, p), 'utf8');
      files++;
      if (mayHit(p, text)) continue;
      skips++;
      (p.endsWith('.py') ? skipped.py : skipped.ts).push([p, text]);
      const hits = await parsed(p, text);
      if (hits.length) {
        missed++;
        t.fail(`${name}:${p}: skipped, but the parsed scan finds ${JSON.stringify(hits[0])}`);
      }
    }
    t.equal(missed, 0, `${name}: no finding in the ${skips} of ${list.length} files the pre-check skips`);
    // The pre-check has work to do on real code: each project has files it skips.
    t.ok(skips > 0, `${name}: some files are skipped (${skips})`);
  }
  if (!files) return;

  // Each construct, added to real files the pre-check skips, is found by both: the pre-check
  // lets the file through and the scan (with the pre-check) reports what the parsed scan reports.
  for (const [lang, constructs] of [['ts', TS_CONSTRUCTS], ['py', PY_CONSTRUCTS]] as const) {
    const hosts = skipped[lang]!.filter(([p]) => lang === 'py' || (p.endsWith('.ts') && !p.endsWith('.d.ts'))).slice(0, 3);
    t.ok(hosts.length > 0, `${lang}: real files to add the constructs to`);
    for (const construct of constructs) {
      for (const [p, text] of hosts) {
        const changed = `${text}\n${construct}\n`;
        const path = p;
        const want = await parsed(path, changed);
        const lines = allLines(changed);
        let got: TamperHit[] | string;
        try {
          got = lang === 'ts' ? scanTypeScript(changed, path, lines) : await scanPython(changed, path, lines);
        } catch (e) {
          got = String(e);
        }
        if (want.length === 0 || !mayHit(path, changed) || JSON.stringify(got) !== JSON.stringify(want)) {
          t.fail(`${JSON.stringify(construct)} in ${p}: parsed scan ${JSON.stringify(want)}, pre-check ${mayHit(path, changed)}, scan ${JSON.stringify(got)}`);
        }
      }
    }
    t.pass(`${lang}: ${constructs.length} constructs, each found in ${hosts.length} real file(s) the pre-check skipped before`);
  }
});

t.test('a file that names nothing checked is skipped; one word brings the parse back', async (t) => {
  const plain = 'export function add(a: number, b: number): number {\n  return a + b;\n}\n';
  t.notOk(mayHitTypeScript(plain));
  t.same(scanTypeScript(plain, 'src/a.ts', allLines(plain)), []);
  t.ok(mayHitTypeScript(`${plain}export const e = process.env.VITEST;\n`));
  t.ok(mayHitTypeScript(`${plain}export const s = 'a\\u0062';\n`), 'a \\u escape may spell anything');
  t.notOk(mayHitTypeScript(`${plain}export const s = 'a\\n\\t\\'\\\\';\n`), 'escapes that spell no letter do not');
  // An octal escape could spell `v8`; typescript-estree refuses it even in a script (and the
  // contract rule refuses the file), but the pre-check lets it through all the same.
  const octal = "var v = require('v\\070');\n";
  t.ok(mayHitTypeScript(octal), 'a \\0 before a digit is an octal escape');
  t.throws(() => scanTypeScript(octal, 'src/a.js', allLines(octal)), /Octal escape/);
  const py = 'def add(a, b):\n    return a + b\n';
  t.notOk(mayHitPython(py));
  t.same(await scanPython(py, 'src/a.py', allLines(py)), []);
  t.ok(mayHitPython(`${py}import sys\nsys.exit(0)\n`));
});
