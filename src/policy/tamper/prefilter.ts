// The tamper scan's text pre-check (issue 24): most changed files name nothing the scan looks
// for, and parsing them whole (typescript-estree converts bodies too) was the largest part of a
// push's judging. Every finding of scan-typescript.ts, stack-js.ts and scan-python.ts rests on a
// name or a string whose letters stand in the source as they are, save where an escape spells
// them; so a file in which none of those words appears, and in which no escape could spell one,
// cannot give a finding, and is not parsed. Anything else is scanned as before. This file must
// stay a superset of those checks: test/policy/tamper-prefilter.test.ts holds it to every
// TS/JS/Python file of the corpus and to each check's constructs.

/**
 * A backslash that can spell a letter or digit in a JS string, template, identifier or regex:
 * anything but \n \r \t \b \f \v \' \" \\ \/ and a \0 that no digit follows (those give
 * control characters, quotes, slashes or NUL). `&#` is a character reference, which a JSX
 * attribute or text may hold.
 */
const JS_SPELLING = /\\(?![nrtbfv'"\\/]|0(?![0-9]))|&#/;

/**
 * Words behind each check of the TS/JS scan (case-insensitive, which only widens it):
 * - process.exit/reallyExit/abort/kill/exitCode/on('exit'), process.env.X, getBuiltinModule, binding: `process`;
 * - arguments.callee, .caller: `calle`;
 * - imports of runner, assertion and interpreter modules (JS_RUNNER_MODULES, JS_WALK_MODULES): the
 *   specifier starts right after its quote;
 * - RUNNER_ENV and REPORT_NAME in literals and templates;
 * - CallSite methods, captureStackTrace, prepareStackTrace;
 * - `.stack` of an own Error (`Error`, case and all, ends its callee's name) needs the file signal of stack-js.ts:
 *   file modules and names, a test-like literal, a location pattern.
 */
const JS_WORDS = new RegExp([
  'process', 'calle',
  `["'](node:)?(test|assert|inspector|v8)`, `["'](tap|vitest|jest|mocha|chai|uvu|ava)`, `["']@(jest|vitest|tapjs)/`,
  'PYTEST_', '_PYTEST', 'PATCHGATE_', 'NODE_TEST', 'JEST_WORKER', 'VITEST', 'TAP_', 'HYPOTHESIS_',
  'junit', 'pytest_cache', 'lastfailed', 'test-', 'patchgate',
  'getFileName', 'getLineNumber', 'getColumnNumber', 'getThis', 'getFunction', 'getScriptNameOrSourceURL', 'getEvalOrigin', 'getEnclosingLineNumber',
  'captureStackTrace', 'prepareStackTrace',
].join('|'), 'i');

/** What makes a stack read a finding (stack-js.ts fileSignal): any of these, with `Error` in the file. */
const JS_FILE_SIGNAL = new RegExp([
  `["'](node:)?(fs|module|child_process)`,
  'readFile', 'createReadStream', 'openSync', 'readSync', 'fileURLToPath', '__filename', '__dirname', 'createRequire', 'execSync', 'execFileSync', 'spawnSync',
  'test', 'spec', 'file:', '\\.[cm]?[jt]sx?\\b',
].join('|'), 'i');

/** False only when the TS/JS scan surely finds nothing in this text (see the top of the file). */
export function mayHitTypeScript(text: string): boolean {
  if (JS_SPELLING.test(text) || JS_WORDS.test(text)) return true;
  return text.includes('Error') && JS_FILE_SIGNAL.test(text);
}

/**
 * Words behind each check of the Python scan, which compares node texts as written (tree-sitter
 * gives the source's own characters, escapes unresolved), so no escape can hide one:
 * runner modules, hooks and patch targets; constant __eq__/__ne__/__hash__; the interpreter walks
 * of PY_WALK by their function names (inspect's `stack` and `trace` through `inspect`) and
 * FRAME_SOURCE_CALLS through `inspect` or `linecache`; exits, atexit, SystemExit, os.kill;
 * frame attributes and their names as strings; RUNNER_ENV and REPORT_NAME in strings.
 */
const PY_WORDS = new RegExp([
  'pytest', 'pluggy', 'py\\.test', 'unittest', 'TestCase', '__import__', '__(eq|ne|hash)__',
  'get_objects', 'get_referrers', 'get_referents', '_getframe', '_current_frames', 'getouterframes', 'getframeinfo',
  'extract_stack', 'walk_stack', 'format_stack', 'print_stack', 'getargvalues', 'settrace', 'setprofile',
  'inspect', 'linecache', 'atexit', 'exit', 'abort', 'quit', 'kill',
  'f_back', 'f_globals', 'f_locals', 'f_code', 'f_lineno', 'f_lasti', 'f_trace', 'f_builtins', 'tb_frame', 'gi_frame', 'cr_frame', 'ag_frame',
  'PYTEST_', 'PATCHGATE_', 'NODE_TEST', 'JEST_WORKER', 'VITEST', 'TAP_', 'HYPOTHESIS_',
  'junit', 'lastfailed', 'test-', 'patchgate',
].join('|'), 'i');

/** False only when the Python scan surely finds nothing in this text. */
export function mayHitPython(text: string): boolean {
  return PY_WORDS.test(text);
}
