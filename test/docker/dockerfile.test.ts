// The image, linted without a Docker engine (none runs here): the Dockerfile is read with the
// small parser in test/helpers/dockerfile.ts and checked for what the red-team issue asked:
// every base pinned (digest or exact version), a multi-stage build whose final stage has no
// compiler toolchain and no curl, a non-root USER in the final stage, a HEALTHCHECK that
// needs no curl, and a .dockerignore that keeps data/ and node_modules out of the build
// context while keeping everything the build copies. The old Dockerfile is linted too, so
// every check is seen to fail on what it is meant to catch.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dockerignore, execForm, parseDockerfile, pinned, stages, type Stage } from '../helpers/dockerfile.js';

const root = (p: string) => fileURLToPath(new URL(`../../${p}`, import.meta.url));
const TOOLCHAIN = /\b(g\+\+|gcc|make|python3|build-essential|curl|wget)\b/;

/** The problems the lint finds; empty when the image is as required. */
function lint(dockerfile: string): string[] {
  const problems: string[] = [];
  const all = stages(parseDockerfile(dockerfile));
  if (all.length < 2) problems.push('not a multi-stage build');
  const names: string[] = [];
  for (const s of all) {
    if (!pinned(s.image, names)) problems.push(`FROM ${s.image} (line ${s.from.line}) is not pinned by digest or exact version`);
    if (s.name) names.push(s.name);
  }
  const final = all[all.length - 1] as Stage | undefined;
  if (!final) return [...problems, 'no FROM'];
  for (const ins of final.instructions) {
    if (ins.keyword === 'RUN' && TOOLCHAIN.test(ins.args)) problems.push(`final stage installs build tools or curl (line ${ins.line})`);
    if ((ins.keyword === 'COPY' || ins.keyword === 'ADD') && !/--from=/.test(ins.args)) problems.push(`final stage copies from the build context, not a build stage (line ${ins.line})`);
  }
  const users = final.instructions.filter((i) => i.keyword === 'USER');
  const user = users[users.length - 1]?.args.split(':')[0];
  if (!user) problems.push('final stage has no USER (runs as root)');
  else if (user === 'root' || user === '0') problems.push(`final stage runs as ${user}`);
  const cmdAt = final.instructions.findIndex((i) => i.keyword === 'CMD' || i.keyword === 'ENTRYPOINT');
  const userAt = final.instructions.findIndex((i) => i.keyword === 'USER');
  if (cmdAt >= 0 && userAt > cmdAt) problems.push('USER comes after CMD');
  const hc = final.instructions.filter((i) => i.keyword === 'HEALTHCHECK');
  if (!hc.length) problems.push('no HEALTHCHECK');
  for (const h of hc) {
    const cmd = h.args.replace(/^(--\S+\s+)*/, '');
    if (!/^CMD /.test(cmd)) problems.push('HEALTHCHECK has no CMD');
    const words = execForm(cmd.replace(/^CMD /, ''));
    if (!words) problems.push('HEALTHCHECK CMD is not in exec form (needs a shell)');
    if (/\b(curl|wget)\b/.test(cmd)) problems.push('HEALTHCHECK needs curl or wget');
    if (words && !/healthz/.test(words.join(' '))) problems.push('HEALTHCHECK does not ask /healthz');
  }
  const cmd = final.instructions.find((i) => i.keyword === 'CMD');
  if (!cmd || !execForm(cmd.args)) problems.push('no CMD in exec form (signals would go to a shell)');
  return problems;
}

const dockerfile = readFileSync(root('Dockerfile'), 'utf8');
const ignoreText = readFileSync(root('.dockerignore'), 'utf8');

t.test('the Dockerfile passes the lint', async (t) => {
  t.same(lint(dockerfile), []);
  const all = stages(parseDockerfile(dockerfile));
  t.equal(all.at(-1)!.instructions.filter((i) => i.keyword === 'USER').at(-1)!.args, 'node', 'the final stage runs as node');
  t.ok(all.at(-1)!.instructions.some((i) => i.keyword === 'RUN' && /\bgit\b/.test(i.args)), 'the final stage installs git (the hooks and the gate need it)');
  const cmd = execForm(all.at(-1)!.instructions.find((i) => i.keyword === 'CMD')!.args)!;
  t.same(cmd.slice(0, 5), ['node', 'dist/cli.js', 'serve', '--data', '/data'], 'serve with data on the volume');
});

t.test('the lint fails the old Dockerfile on each point', async (t) => {
  const old = [
    'FROM node:20-slim',
    'RUN apt-get update && apt-get install -y --no-install-recommends git curl ca-certificates python3 make g++ \\',
    '    && rm -rf /var/lib/apt/lists/*',
    'WORKDIR /app',
    'COPY package.json package-lock.json tsconfig.json ./',
    'COPY src ./src',
    'RUN npm ci && npm prune --omit=dev',
    'VOLUME /data',
    'CMD ["node", "dist/cli.js", "serve", "--data", "/data"]',
  ].join('\n');
  const p = lint(old);
  t.ok(p.includes('not a multi-stage build'), 'single stage');
  t.ok(p.some((x) => /FROM node:20-slim .* not pinned/.test(x)), 'floating tag');
  t.ok(p.some((x) => /installs build tools or curl \(line 2\)/.test(x)), 'toolchain in the final stage, line of the continued RUN');
  t.ok(p.includes('final stage has no USER (runs as root)'), 'root');
  t.ok(p.includes('no HEALTHCHECK'), 'no health check');
  t.same(lint(old.replace('FROM node:20-slim', 'FROM node:20-slim AS build\nFROM node:20.1.0\nUSER root\nHEALTHCHECK CMD curl -f http://x/healthz')).filter((x) => /root|curl|exec form|not pinned/.test(x)),
    ['FROM node:20-slim (line 1) is not pinned by digest or exact version', 'final stage installs build tools or curl (line 5)', 'final stage runs as root', 'HEALTHCHECK CMD is not in exec form (needs a shell)', 'HEALTHCHECK needs curl or wget']);
});

t.test('pinned(): digests and exact versions only', async (t) => {
  t.ok(pinned('node:20.20.2-bookworm-slim', []));
  t.ok(pinned(`node@sha256:${'a'.repeat(64)}`, []));
  t.ok(pinned(`node:20-slim@sha256:${'0'.repeat(64)}`, []));
  t.ok(pinned('registry.example:5000/node:20.19.5', []));
  t.ok(pinned('build', ['build']), 'an earlier stage');
  for (const bad of ['node', 'node:20', 'node:20-slim', 'node:lts', 'node:latest', 'registry.example:5000/node', 'node:20.19-bookworm-slim', `node@sha256:${'a'.repeat(10)}`]) t.notOk(pinned(bad, []), bad);
});

t.test('.dockerignore keeps data/ and node_modules out, and what the build copies in', async (t) => {
  const ignored = dockerignore(ignoreText);
  for (const p of ['data', 'data/patchgate.db', 'data/hook.endpoint', 'data/admin-token', 'data/repos/app.git/config', 'node_modules', 'node_modules/zod/package.json', 'src/node_modules/x.js', '.git/config', 'dist/cli.js', 'bench/work/x', 'patchgate.db', 'src/data/x.db', 'hooks/hook.endpoint']) {
    t.ok(ignored(p), `${p} is not in the build context`);
  }
  // Every source of a COPY from the context must reach the build.
  const copied = stages(parseDockerfile(dockerfile)).flatMap((s) => s.instructions)
    .filter((i) => i.keyword === 'COPY' && !/--from=/.test(i.args))
    .flatMap((i) => i.args.split(' ').filter((w) => !w.startsWith('--')).slice(0, -1));
  t.ok(copied.length >= 4, `the build copies ${copied.join(', ')}`);
  for (const c of copied) {
    const sample = c.endsWith('.json') || c.endsWith('.mjs') ? c : `${c}/${c === 'hooks' ? 'pre-receive' : c === 'scripts' ? 'postbuild.mjs' : 'cli.ts'}`;
    t.notOk(ignored(sample), `${sample} (COPY ${c}) is in the build context`);
  }
  t.notOk(ignored('src/server/app.ts'), 'deep source files are in');
  // The matcher itself: last match wins, `!` re-includes, a folder pattern covers its contents.
  const m = dockerignore('a\n!a/keep\nb/**/*.log\n');
  t.ok(m('a/x'));
  t.notOk(m('a/keep'));
  t.ok(m('b/c/d.log'));
  t.notOk(m('b/c/d.txt'));
});

t.test('docker-compose.yml: the health check needs no curl either', async (t) => {
  const compose = readFileSync(root('docker-compose.yml'), 'utf8');
  const test = /healthcheck:\s*\n\s*test:\s*(\[.*\])/.exec(compose);
  t.ok(test, 'a healthcheck test');
  const words = JSON.parse(test![1]!) as string[];
  t.equal(words[0], 'CMD');
  t.equal(words[1], 'node');
  t.notMatch(compose, /\bcurl\b/);
});
