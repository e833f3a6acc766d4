// The checks of rule tamper-scan (issue 11) and what they share: the finding shape, the
// names and literals that mark the test runner, its environment and its report files.

export const TAMPER_CHECKS = ['runner-internals', 'interpreter-walk', 'env-read', 'exit', 'report-write', 'constant-eq', 'package-metadata'] as const;
export type TamperCheck = (typeof TAMPER_CHECKS)[number];

export interface TamperHit {
  check: TamperCheck;
  line: number;
  construct: string;
  /**
   * Set when the strict run's runtime checks cover what this construct could do (an exit
   * handler: the stream's end record and the exit status are cross-checked; a frame's code and
   * line: harmless, the tripwire records reads of test frames and sources). Such a hit is
   * advisory (audited, not refused) unless the policy turns the check off.
   */
  covered?: boolean;
}

/** Environment variables of test runners and of the gate. */
export const RUNNER_ENV = /^(PYTEST_|_PYTEST|PATCHGATE_|NODE_TEST|JEST_WORKER|VITEST|TAP_|HYPOTHESIS_)/;
/** File names of runner reports and caches. */
export const REPORT_NAME = /junit|\.pytest_cache|lastfailed|test-results|TEST-[^/]*\.xml|patchgate[^/]*\.json/i;

/**
 * True when a literal that names a report is a pattern of names to skip: an alternation of three
 * or more names in which every alternative that names a report is pytest's cache directory, as
 * black's DEFAULT_EXCLUDES `/(\.direnv|\.eggs|...|\.pytest_cache|...)/`. A pattern with a
 * junit, TEST-*.xml, lastfailed or test-results alternative still counts as naming a report.
 */
export function skipPatternOnly(v: string): boolean {
  const alts = v.split('|').map((s) => s.replace(/^[\^/(?:]+|[)$/]+$/g, '').replace(/\\\./g, '.'));
  if (alts.length < 3) return false;
  const named = alts.filter((a) => REPORT_NAME.test(a));
  return named.length > 0 && named.every((a) => a === '.pytest_cache');
}

export const PY_RUNNER_MODULES = /^(_pytest|pytest|pluggy|py\.test)(\.|$)/;
export const PY_PATCH_TARGET = /^(unittest|pytest|_pytest|pluggy|TestCase|builtins\.__import__)(\.|$)/;
export const PY_WALK = new Set(['gc.get_objects', 'gc.get_referrers', 'gc.get_referents', 'sys._getframe', 'sys._current_frames', 'inspect.stack', 'inspect.getouterframes', 'inspect.getframeinfo', 'inspect.trace', 'traceback.extract_stack', 'traceback.walk_stack', 'traceback.format_stack', 'traceback.print_stack', 'inspect.getargvalues', 'sys.settrace', 'sys.setprofile', 'threading.settrace', 'threading.setprofile']);
// A caller's locals are where its expected values live. f_back alone (click's version_option
// reaches its caller) is not refused: what is read there is (f_globals, f_code: frames.ts).
export const PY_FRAME_ATTRS = new Set(['f_locals']);
export const JS_RUNNER_MODULES = /^(node:)?(test|assert)(\/strict)?$|^(tap|vitest|jest|mocha|chai|uvu|ava)(\/|$)|^@(jest|vitest|tapjs)\//;
