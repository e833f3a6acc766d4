// patchgate's jest reporter. patchgate ci adds it with --reporters from a folder outside the
// work tree, beside jest's own --json report; it writes to fd 3, a pipe the gate owns: each
// test's id (file relative to the root dir, then the names joined with " > ") and outcome, then
// an end record. The gate cross-checks the stream against jest's JSON report.
const { writeSync } = require('node:fs');
const { relative } = require('node:path');

function send(rec) {
  const buf = Buffer.from(JSON.stringify(rec) + '\n');
  let off = 0;
  while (off < buf.length) {
    try {
      off += writeSync(3, buf, off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
    }
  }
}

const STATUS = { passed: 'passed', failed: 'failed' };

class PatchgateJestReporter {
  constructor(globalConfig) {
    this.root = globalConfig.rootDir;
  }

  onRunStart() {
    send({ t: 'start', runner: 'jest' });
  }

  onTestResult(test, result) {
    const file = relative(this.root, result.testFilePath);
    for (const a of result.testResults) {
      send({ t: 'test', id: `${file}::${[...a.ancestorTitles, a.title].join(' > ')}`, status: STATUS[a.status] ?? 'skipped' });
    }
    // A file that failed to run (a syntax error, a throw at import) has no test: a failure of its own.
    if (!result.testResults.length && result.testExecError) send({ t: 'test', id: `${file}::(file)`, status: 'failed' });
  }

  onRunComplete(contexts, results) {
    send({ t: 'end', exitstatus: null, failed: results.numFailedTests });
  }
}

module.exports = PatchgateJestReporter;
