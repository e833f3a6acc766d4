// One file's tamper scan shared by the rule and a push's warm-up (src/policy/tamper/scan-file.ts):
// a second caller joins a scan under way and gets its hits; when the scan it joined failed (the
// warm-up's own reads), it scans again itself, so a warm-up's failure never becomes a verdict.

import t from 'tap';
import { scanBase, tamperHitsOf, tamperKey } from '../../src/policy/tamper/scan-file.js';

const TEXT = 'export const a = 1;\nprocess.exit(0);\n';
const blob = Buffer.from(TEXT);

/** Blob reads from memory; `fail` reads reject (a store that went away), each read waits a turn. */
function source(fail: boolean) {
  let reads = 0;
  return {
    get reads() {
      return reads;
    },
    pathId: async () => ({ size: blob.length }),
    readBlob: async () => {
      reads++;
      await new Promise((r) => setImmediate(r));
      if (fail) throw new Error('the reader was closed');
      return blob;
    },
  };
}

t.test('a joined scan gives its hits; a failed one is scanned again by the caller', async (t) => {
  const memo = new Map<string, unknown>();
  const ok = source(false);
  const [a, b] = await Promise.all([tamperHitsOf(ok, memo, 'src/a.ts', null, '1'.repeat(40), 1 << 20), tamperHitsOf(ok, memo, 'src/a.ts', null, '1'.repeat(40), 1 << 20)]);
  t.equal(ok.reads, 1, 'one scan for both');
  t.same([a.scanned, b.scanned], [true, false]);
  t.match(b.hits, [{ check: 'exit', line: 2 }], 'the joined caller gets the hits');

  const memo2 = new Map<string, unknown>();
  const broken = source(true);
  const good = source(false);
  const first = tamperHitsOf(broken, memo2, 'src/a.ts', null, '2'.repeat(40), 1 << 20);
  const second = tamperHitsOf(good, memo2, 'src/a.ts', null, '2'.repeat(40), 1 << 20);
  await t.rejects(first, /the reader was closed/, 'the warm-up\'s scan fails on its reads');
  const r = await second;
  t.equal(r.scanned, true, 'the rule scanned again itself');
  t.match(r.hits, [{ check: 'exit', line: 2 }], 'and found the construct');
  t.ok(memo2.has(tamperKey(null, '2'.repeat(40), 'src/a.ts')), 'its hits are kept');
});

t.test('the scan base: null for an added file or a former symlink; keys part .tsx from .ts', async (t) => {
  t.equal(scanBase({ status: 'A', oldKind: null, oldId: '0'.repeat(40) }), null);
  t.equal(scanBase({ status: 'T', oldKind: 'symlink', oldId: '3'.repeat(40) }), null);
  t.equal(scanBase({ status: 'M', oldKind: 'regular', oldId: '3'.repeat(40) }), '3'.repeat(40));
  t.not(tamperKey(null, '4'.repeat(40), 'a.tsx'), tamperKey(null, '4'.repeat(40), 'a.ts'));
  t.equal(tamperKey(null, '4'.repeat(40), 'a.ts'), tamperKey(null, '4'.repeat(40), 'b.ts'), 'the path counts only by its language');
});
