// The pre-receive shim a git host runs (GitLab custom_hooks, Gitea pre-receive.d, a GHES hook
// script, a gitolite repo-specific hook). Like hooks/pre-receive it is bash talking HTTP to the
// warm daemon over /dev/tcp, so a push starts no node process; unlike it, identity comes from
// the host's variables (./identity.ts) and the daemon's endpoint file is named in the shim.
// It refuses without an identity, without a daemon, and past its wait; for GHES the wait is
// the budget (default 4.5 s of the 5 s GitHub Enterprise gives all hooks together).

import { HOST_VARS, type HostKind } from './identity.js';

export const SHIM_MARK = 'patchgate-hook: host-v2';

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function firstSet(names: readonly string[]): string {
  return names.reduceRight((acc, n) => `\${${n}:-${acc}}`, '');
}

/**
 * GitLab shows a server hook's message in its UI and API only on lines that start with
 * `GL-HOOK-ERR: ` (DESIGN.md), so its shim prefixes every line it writes; the other hosts show
 * stderr as it is. Every line goes through `say`, so no line can miss the prefix.
 */
export const GITLAB_PREFIX = 'GL-HOOK-ERR: ';

export function shimText(host: HostKind, endpointPath: string, budgetMs: number): string {
  const body = shimBody(host, endpointPath, budgetMs)
    .replace(/^(\s*)echo "(.*)" >&2$/gm, '$1say "$2"')
    .replace(/printf '%s\\n' "\$last" >&2/g, 'say "$last"');
  const pfx = host === 'gitlab' ? GITLAB_PREFIX : '';
  return body.replace('\nset -u\n', `\nset -u\npfx=${q(pfx)}\nsay() { printf '%s%s\\n' "$pfx" "$1" >&2; }\n`);
}

function shimBody(host: HostKind, endpointPath: string, budgetMs: number): string {
  const v = HOST_VARS[host];
  const repoExpr = v.repoPair ? `\${${v.repoPair[0]}:+\${${v.repoPair[0]}}/\${${v.repoPair[1]}:-}}` : firstSet(v.repo);
  const ghes = host === 'ghes';
  return `#!/usr/bin/env bash
# patchgate pre-receive shim for ${v.label}, written by \`patchgate hook install --host ${host}\`.
# Identity: ${[...v.user, ...(v.repoPair ?? v.repo), ...v.via, ...v.userId].join(', ')} (the host's own variables).
# It forwards the ref lines, the quarantine variables and the identity to the warm
# \`patchgate daemon\` named in its endpoint file and exits 0 only on the daemon's explicit accept.
# No identity, no daemon, no verdict in time: the push is refused.
# ${SHIM_MARK} ${host}
set -u
export LC_ALL=C # lengths in bytes
endpoint=${q(endpointPath)}
user=${firstSet(v.user)}
# Unset, empty or spaces only: nobody is named (spaces are not a user called "   ").
if [ -z "\${user//[[:space:]]/}" ]; then
  echo "patchgate: push refused: no pusher identity (${v.user.join('/')} is not set, or holds only spaces); this hook only runs inside ${v.label}'s receive-pack; ask the host's admin to check: patchgate hook install --host ${host}" >&2
  exit 1
fi
${ghes ? `budget_ms=${budgetMs}
start=\${EPOCHREALTIME/./}
# Seconds left of the budget, as read -t wants them (no process started).
left() {
  local l=$(( start + budget_ms * 1000 - \${EPOCHREALTIME/./} ))
  if [ "$l" -le 0 ]; then t=0; return 1; fi
  printf -v t '%d.%06d' $(( l / 1000000 )) $(( l % 1000000 ))
}
late() {
  echo "patchgate: push refused: gate did not finish in time (the hook's budget is \${budget_ms} ms of the 5 s GitHub Enterprise gives all pre-receive hooks); nothing was accepted; push again, and if this repeats ask a person to check the gate daemon's load" >&2
  exit 1
}
` : ''}if ! read -r host port secret wait 2>/dev/null < "$endpoint"; then
  echo "patchgate: push refused: the gate daemon is not running (no $endpoint); retry when it is up (patchgate daemon --config FILE)" >&2
  exit 1
fi
case "\${GIT_DIR:-.}" in /*) dir=$GIT_DIR ;; *) dir=$PWD/\${GIT_DIR:-.} ;; esac
nl=$'\\n'
body="hook pre-receive\${nl}ppid $PPID\${nl}dir $dir\${nl}id host ${host}\${nl}id user $user\${nl}"
repo=${repoExpr}
via=${firstSet(v.via)}
userid=${firstSet(v.userId)}
case "$user$repo$via$userid" in *[[:cntrl:]]*)
  echo "patchgate: push refused: the host's identity variables hold a control character (a line break, tab or escape); nothing was accepted; ask the host's admin to check the account and repository names" >&2
  exit 1 ;;
esac
[ -z "$repo" ] || body+="id repo $repo\${nl}"
[ -z "$via" ] || body+="id via $via\${nl}"
[ -z "$userid" ] || body+="id userid $userid\${nl}"
${ghes ? 'body+="id budget-ms $budget_ms${nl}"\n' : ''}for v in GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_QUARANTINE_PATH GIT_PUSH_OPTION_COUNT; do
  if [ -n "\${!v:-}" ]; then body+="env $v \${!v}\${nl}"; fi
done
# Push options (git push -o patchgate.escalate="..."): at most 16, 8 KiB each, control characters made spaces.
n=\${GIT_PUSH_OPTION_COUNT:-0}
case "$n" in ''|*[!0-9]*) n=0 ;; ?|1[0-6]) ;; *) n=16 ;; esac
for ((i = 0; i < n; i++)); do
  v=GIT_PUSH_OPTION_$i; o=\${!v-}; o=\${o//[[:cntrl:]]/ }
  body+="env $v \${o:0:8192}\${nl}"
done
body+=$nl
while IFS= read -r line; do body+="$line$nl"; done
if ! { exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null; then
  echo "patchgate: push refused: the gate daemon did not answer on $host:$port; retry when it is up (patchgate daemon --config FILE)" >&2
  exit 1
fi
printf 'POST /hook HTTP/1.0\\r\\nHost: patchgate\\r\\nX-Patchgate-Secret: %s\\r\\nContent-Type: text/plain\\r\\nContent-Length: %d\\r\\n\\r\\n%s' "$secret" "\${#body}" "$body" >&3
${ghes ? `t=0
left || late
IFS= read -r -t "$t" status <&3; rc=$?
[ "$rc" -gt 128 ] && late
[ "$rc" -eq 0 ] || status=""
while left && IFS= read -r -t "$t" line <&3 && [ "$line" != $'\\r' ]; do :; done
last=""
while left && IFS= read -r -t "$t" line <&3; do
  [ -z "$last" ] || printf '%s\\n' "$last" >&2
  last=$line
done
left || late` : `case "\${wait:-}" in ''|*[!0-9]*) max=60 ;; *) max=$wait ;; esac
IFS= read -r -t "$max" status <&3; rc=$?
if [ "$rc" -gt 128 ]; then
  echo "patchgate: push refused: the gate daemon gave no verdict within \${max} s (its hook time limit plus a margin); nothing was accepted; push again, and if this repeats ask a person to check the daemon's load" >&2
  exit 1
fi
[ "$rc" -eq 0 ] || status=""
while IFS= read -r -t "$max" line <&3 && [ "$line" != $'\\r' ]; do :; done
last=""
while IFS= read -r -t "$max" line <&3; do
  [ -z "$last" ] || printf '%s\\n' "$last" >&2
  last=$line
done`}
case "$status $last" in
  "HTTP/1."?" 200 "*"patchgate-verdict: accept") exit 0 ;;
  *"patchgate-verdict: "*) exit 1 ;;
esac
[ -z "$last" ] || printf '%s\\n' "$last" >&2
echo "patchgate: push refused: no verdict from the gate daemon" >&2
exit 1
`;
}
