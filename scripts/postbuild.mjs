// After tsc: make the CLI entry executable (it is the package's `bin`).
import { chmodSync } from 'node:fs';
chmodSync(new URL('../dist/cli.js', import.meta.url), 0o755);
// patchgate ci's runner plugins are not TypeScript: ship them beside the compiled ci code.
import { cpSync } from 'node:fs';
cpSync(new URL('../src/ci/channel/', import.meta.url), new URL('../dist/ci/channel/', import.meta.url), { recursive: true });
