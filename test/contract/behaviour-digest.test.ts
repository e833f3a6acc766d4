// The structural-split proof (issue 22): scripts/behaviour-digest.mjs --quick hashes contract
// rows (a corpus bundle and a generated TS + Python tree), audit row hashes of a fixed write
// sequence, and check --json refusal texts. A refactor that moves code must leave that digest
// exactly as recorded in behaviour-digest.json (the full run's digest is recorded there too).

import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../../scripts/behaviour-digest.mjs', import.meta.url));
const RECORDED = JSON.parse(readFileSync(fileURLToPath(new URL('./behaviour-digest.json', import.meta.url)), 'utf8')) as {
  quick: { digest: string; sections: Record<string, string> };
};

t.test('the quick behaviour digest is the one recorded before the split', { skip: existsSync('/work/shared/corpus/zustand.bundle') || process.env.PATCHGATE_CORPUS ? false : 'no corpus' }, async (t) => {
  const out = await new Promise<string>((resolve, reject) =>
    execFile('node', [SCRIPT, '--quick'], { maxBuffer: 1 << 26 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout))),
  );
  const lines = out.trim().split('\n');
  const sections: Record<string, string> = {};
  for (const l of lines.slice(0, -1)) {
    const [name, , hash] = l.split(' ');
    sections[name!] = hash!;
  }
  t.same(sections, RECORDED.quick.sections, 'each section as recorded');
  t.equal(lines.at(-1), RECORDED.quick.digest, 'the whole digest as recorded');
});
