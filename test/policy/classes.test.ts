// Agent classes (issue 50): the class views of a policy, and the separation-of-duties invariant
// that `policy check` and rule `policy` enforce (src/policy/classes.ts).
import t from 'tap';
import { defaultPolicy, parsePolicy, policyFromText } from '../../src/policy/config.js';
import { hasClass, policyForClass, separationProblems } from '../../src/policy/classes.js';
import { policyDigest } from '../../src/policy/carried.js';
import { problemsOf } from '../../src/policy/policy-files.js';

const twoClasses = {
  classes: {
    implementer: { writable: ['src/**'] },
    'test-author': { writable: ['tests/**'], protected: ['src/**', 'package-lock.json'] },
  },
};

t.test('the default policy, and a two-class policy, keep the invariant', async (t) => {
  t.same(separationProblems(defaultPolicy()), []);
  const p = parsePolicy(twoClasses);
  t.same(separationProblems(p), []);
  t.same(policyForClass(p, 'test-author').writable, ['tests/**']);
  t.same(policyForClass(p, 'implementer').protected, p.protected, 'an unset protected is the top level\'s (tests protected)');
  t.equal(policyForClass(p, 'default'), p, 'the default class is the policy itself');
  t.ok(hasClass(p, 'implementer'));
  t.notOk(hasClass(p, 'docs'));
  t.not(policyDigest(policyForClass(p, 'implementer')), policyDigest(policyForClass(p, 'test-author')), 'the cache key differs by class');
  t.not(policyDigest(policyForClass(p, 'implementer')), policyDigest(p));
});

t.test('a class that may write both code and tests is a problem naming it', async (t) => {
  const p = parsePolicy({ classes: { both: { writable: ['src/**', 'tests/**'], protected: [] }, sneaky: { writable: ['**'], protected: ['tests/**'] } } });
  const probs = separationProblems(p);
  t.same(probs.map((x) => x.className), ['both', 'sneaky']);
  t.match(probs[0]!.message, /class both may write both the contract root src\/ .* and the test or oracle path tests\//);
  t.match(probs[1]!.message, /class sneaky may write both the contract root src\//);
  // The default class too, when its protected list is emptied.
  t.same(separationProblems(parsePolicy({ protected: [] , writable: ['src/**'] })).map((x) => x.keyPath), [['writable']]);
});

t.test('class names and reserved names are validated with the key path', async (t) => {
  t.throws(() => parsePolicy({ classes: { Bad: { writable: ['src/**'] } } }), /classes\.Bad/);
  t.throws(() => parsePolicy({ classes: { default: { writable: ['src/**'] } } }), /classes\.default/);
  t.throws(() => parsePolicy({ classes: { x: { protected: [] } } }), /classes\.x\.writable/);
  const p = parsePolicy({ classes: { x: { writable: ['tests/**'], protected: [], fixtures: { lock: 'ci/x.lock' } } } });
  t.ok(p.oracleFiles.includes('ci/x.lock'), 'a class\'s lock guards the oracle for every class');
});

t.test('problemsOf names the line of the class at fault', async (t) => {
  const text = JSON.stringify({ classes: { implementer: { writable: ['src/**'] }, both: { writable: ['src/**', 'tests/**'], protected: [] } } }, null, 2);
  policyFromText(text, 'x');
  const probs = problemsOf({ kind: 'policy', path: 'ci/patchgate.json' }, text);
  t.equal(probs.length, 1);
  const both = text.split('\n').findIndex((l) => l.includes('"both"'));
  t.equal(probs[0]!.line, both + 2, 'the line of classes.both.writable');
  t.match(probs[0]!.message, /^classes\.both\.writable: class both may write both/);
});
