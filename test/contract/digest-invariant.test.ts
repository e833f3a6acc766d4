// The digest/row-set invariant, as a seeded property test over random edits of real git
// trees: two trees have equal v1 digests exactly when their contract row sets are equal, and
// whenever the digest moved, the refusal's diff has at least one `+`, `-` or `~` row. Edits
// include the zustand case (a duplicate `declare module` augmentation removed), duplicate
// overloads, reordered declarations, formatting, and real signature changes.

import t from 'tap';
import { Git } from '../../src/git/git.js';
import { contractOf, contractRows, diffContracts } from '../../src/contract/digest.js';
import { TestRepo } from '../helpers/repo.js';

const SEED = Number(process.env.PATCHGATE_PROPERTY_SEED ?? 20261201);
const STEPS = 60;

/** mulberry32: small, seeded, reproducible. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

type Decl = string;
/** `priv`: definitions in the private src/pk/_impl.py; `exp`: the names src/pk/__init__.py imports from it. */
interface State { ts: Decl[]; py: Decl[]; priv?: Decl[]; exp?: string[] }

const AUG = "declare module 'zustand' {\n  interface StoreMutators<S, A> { persist: S }\n}";

function render(s: State): Record<string, string> {
  return {
    'src/store.ts': `export {};\n${s.ts.join('\n\n')}\n`,
    'src/geo.py': `${s.py.join('\n\n')}\n`,
    'src/pk/__init__.py': s.exp?.length ? `from ._impl import ${s.exp.join(', ')}\n` : '',
    'src/pk/_impl.py': `${(s.priv ?? []).join('\n\n')}\n`,
  };
}

function edit(s: State, rnd: () => number): State {
  const pick = <T>(xs: T[]): number => Math.floor(rnd() * xs.length);
  const ts = [...s.ts];
  const py = [...s.py];
  const priv = [...(s.priv ?? [])];
  let exp = [...(s.exp ?? [])];
  const n = Math.floor(rnd() * 1000);
  switch (Math.floor(rnd() * 13)) {
    // Private module edits: only re-exported definitions count (under the package's name).
    case 9: priv.push(`def h${n % 4}(a${n % 2 ? ', b=2' : ''}):\n    return a`); break;
    case 10: { const name = `h${n % 4}`; exp = exp.includes(name) ? exp.filter((x) => x !== name) : [...exp, name].sort(); break; }
    case 11: if (priv.length) { const i = pick(priv); priv[i] = `# note ${n}\n${priv[i]}`; } break; // a comment
    case 12: if (priv.length) priv.splice(pick(priv), 1); break;
    case 0: ts.push(AUG); break; // a duplicate augmentation (counts once)
    case 1: { const i = ts.indexOf(AUG); if (i >= 0) ts.splice(i, 1); break; } // remove one (zustand f0252e5db1)
    case 2: ts.push(`export function f${n % 7}(a: number): number;`); break; // an overload, maybe a duplicate
    case 3: if (ts.length > 1) { const i = pick(ts); ts.push(...ts.splice(i, 1)); } break; // reorder
    case 4: if (ts.length) { const i = pick(ts); ts[i] = ts[i]!.replace(/\(a: number\)/, '(a: number | string)'); } break;
    case 5: py.push(`def g${n % 5}(x${n % 3 ? ', y=1' : ''}):\n    return x`); break;
    case 6: if (py.length > 1) { const i = pick(py); py.push(...py.splice(i, 1)); } break; // reorder
    case 7: if (py.length) { const i = pick(py); py[i] = `# note ${n}\n${py[i]}`; } break; // a comment
    default: if (ts.length) ts.splice(pick(ts), 1); break;
  }
  return { ts, py, priv, exp };
}

t.test(`equal digests exactly when row sets are equal (seed ${SEED}, ${STEPS} edits)`, async (t) => {
  const r = TestRepo.init(t);
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const rnd = prng(SEED);
  let state: State = { ts: [AUG, 'export function f0(a: number): number;', 'export interface P { x: number }'], py: ['def g0(x):\n    return x'] };
  const revs: string[] = [r.commit('base', render(state))];
  for (let i = 0; i < STEPS; i++) {
    state = edit(state, rnd);
    revs.push(r.commit(`edit ${i}`, render(state)));
  }
  const cache = new Map<string, unknown>();
  const got = [];
  for (const rev of revs) {
    const c = await contractOf(git, rev, ['src/'], 'v1', cache);
    const rows = await contractRows(git, c, rev, ['src/'], cache);
    got.push({ digest: c.digest, rows, set: JSON.stringify([...new Set(rows)].sort()) });
  }
  let equalPairs = 0;
  let movedPairs = 0;
  for (let i = 0; i < got.length; i++) {
    for (let j = i + 1; j < got.length; j += 1 + (j % 3)) {
      const a = got[i]!;
      const b = got[j]!;
      if ((a.digest === b.digest) !== (a.set === b.set)) {
        t.fail(`revs ${i} and ${j}: digest equal ${a.digest === b.digest}, row sets equal ${a.set === b.set}`);
      }
      if (a.digest !== b.digest) {
        movedPairs++;
        const d = diffContracts(a.rows, b.rows);
        if (d.added.length + d.removed.length + d.changed.length === 0) t.fail(`revs ${i} and ${j}: the digest moved but no row shows why`);
      } else equalPairs++;
    }
  }
  t.ok(got.some((g) => g.rows.some((x) => /^src\/pk\/__init__\.py::export h\d -> def h\d/.test(x))), 'some trees re-export a private definition');
  t.ok(equalPairs > 0, `some pairs have equal digests (${equalPairs})`);
  t.ok(movedPairs > 0, `some pairs moved (${movedPairs})`);
});

t.test('the zustand case: removing a duplicate declare module augmentation moves nothing', async (t) => {
  const r = TestRepo.init(t);
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const a = r.commit('two', { 'src/m.ts': `export {};\n${AUG}\n${AUG}\n` });
  const b = r.commit('one', { 'src/m.ts': `export {};\n${AUG}\n` });
  const ca = await contractOf(git, a, ['src/'], 'v1');
  const cb = await contractOf(git, b, ['src/'], 'v1');
  t.equal(ca.digest, cb.digest, 'a duplicate declaration counts once');
  t.ok(ca.rows.length > 0, 'the augmentation has rows');
});
