// How a git that talks to another repository gets a credential, and how a URL's userinfo is
// kept out of messages: the helper text, the git options that switch every other credential
// source and redirects off, and the redaction used on git's own stderr.

/**
 * A credential helper that answers `get` from the child's environment, so a secret is never an
 * argument or in a URL, and only for the one origin it was given: git tells a helper the
 * protocol and host (with any port) it wants a credential for on stdin, and a redirect or a
 * submodule elsewhere gets nothing.
 */
const CREDENTIAL_HELPER = '!f() { test "$1" = get || return 0; p=; h=; while IFS= read -r l; do case "$l" in protocol=*) p=${l#protocol=} ;; host=*) h=${l#host=} ;; esac; done; ' +
  'test -n "$PATCHGATE_GIT_HOST" && test "$p" = "$PATCHGATE_GIT_PROTOCOL" && test "$h" = "$PATCHGATE_GIT_HOST" || return 0; ' +
  'printf \'username=%s\\npassword=%s\\n\' "$PATCHGATE_GIT_USER" "$PATCHGATE_GIT_SECRET"; }; f';

/** The protocol and host[:port] git names a URL's credential by (as it parses the URL: case and port as written). */
export function credentialOrigin(url: string): { protocol: string; host: string } | null {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(?:[^@/?#]*@)?([^/?#]+)/.exec(url);
  return m ? { protocol: m[1]!, host: m[2]! } : null;
}

/**
 * git options and environment that give a git child exactly this credential, for `url`'s
 * scheme, host and port only: every configured helper and prompt is switched off, redirects
 * are not followed (git would otherwise send the credential on to wherever upstream points
 * it), and with a secret the one helper above answers from the child's environment (the
 * held-out fetch, upstream fetch and forward).
 */
export function credentialArgs(user: string | null | undefined, secret: string | null | undefined, url: string): { pre: string[]; env: Record<string, string> } {
  const pre = ['-c', 'credential.helper=', '-c', 'core.askPass=true', '-c', 'http.followRedirects=false'];
  const origin = credentialOrigin(url);
  if (!secret || !origin) return { pre, env: {} };
  return {
    pre: [...pre, '-c', `credential.helper=${CREDENTIAL_HELPER}`],
    env: { PATCHGATE_GIT_USER: user || 'x-access-token', PATCHGATE_GIT_SECRET: secret, PATCHGATE_GIT_PROTOCOL: origin.protocol, PATCHGATE_GIT_HOST: origin.host },
  };
}

/** git's line for an HTTP redirect it did not follow (http.followRedirects=false). */
export const REDIRECT_REFUSED = /The requested URL returned error: (30[12378])/;

/** `user:password@` taken out of a URL, for messages. */
export function redactUrl(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, '$1***@');
}
