// Why the audit chain keeps its own canonicalJson instead of the `canonicalize` package
// (RFC 8785): on every JSON value the chain stores they give the same bytes, so old rows
// verify either way, and ours also names the path of a value that is not JSON (an error the
// store reports), and it hashes a string with a lone surrogate, which the package refuses.
// This test holds the two equal everywhere else.

import t from 'tap';
import canonicalize from 'canonicalize';
import { canonicalJson } from '../../src/audit/store.js';

t.test('canonicalJson is RFC 8785 on the values the chain stores', async (t) => {
  const values: unknown[] = [
    null, true, false, 0, -0, 1, -1.5, 1e21, 1e-7, 123456789012345680000, 0.1 + 0.2, Number.MAX_SAFE_INTEGER, 5e-324,
    '', 'plain', 'quote " backslash \\ tab \t newline \n', '\u0000\u001f\u007f', 'é ü 😀', '\u2028\u2029',
    [], [1, 'a', null, [true]], {}, { b: 1, a: 2, A: 3, '': 0, é: 4, '😀': 5, '\u0080': 6, '\uffff': 7 },
    { kind: 'push', push_id: 'mx4l7i2n-629098e91bfb', rules: [{ rule: 'write-block', status: 'fail', ms: 0, findings: [{ message: 'tests/x' }] }], timings: { total: 12.5 } },
  ];
  values.forEach((v, i) => t.equal(canonicalJson(v), canonicalize(v), `value ${i}`));
  // A git path can hold bytes that decode to a lone surrogate: the package refuses such a
  // string, so a push naming that path could not be audited; ours hashes it (escaped).
  t.throws(() => canonicalize('\ud800 lone'), /Lone surrogate/);
  t.equal(canonicalJson('\ud800 lone'), '"\\ud800 lone"');
  t.throws(() => canonicalJson({ a: NaN }), /\$\.a: not a finite number/, 'ours names the bad path');
  t.throws(() => canonicalJson({ a: new Map() }), /not a plain JSON object/);
});
