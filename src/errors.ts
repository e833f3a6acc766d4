// Named error classes: every failure patchgate can meet carries a stable code and the
// original error as `cause`, so the engine can turn any of them into a one-line refusal.

export class PatchgateError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A git command failed: carries the command, its exit code and stderr. */
export class GitError extends PatchgateError {
  readonly args: readonly string[];
  readonly exitCode: number | null;
  readonly stderr: string;
  constructor(args: readonly string[], exitCode: number | null, stderr: string, options?: { cause?: unknown }) {
    const first = stderr.trim().split('\n')[0] ?? '';
    super('GIT', `git ${args.join(' ')} failed (exit ${exitCode}): ${first}`, options);
    this.args = args;
    this.exitCode = exitCode;
    this.stderr = stderr;
  }
}

/** A pack read in the daemon (src/git/pack-read.ts) is not one it reads; only a cache warm-up is given up. */
export class PackReadError extends PatchgateError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PACK_READ', `pack not read: ${message}`, options);
  }
}

/** The policy file (or a CLI option standing in for it) is invalid. Message starts with CONFIG: and names the key. */
export class ConfigError extends PatchgateError {
  readonly key: string;
  constructor(key: string, message: string, options?: { cause?: unknown }) {
    super('CONFIG', `CONFIG: ${key}: ${message}`, options);
    this.key = key;
  }
}

/**
 * One of the policy's files (the policy, the allow file, the fixture lock, the flake ledger)
 * does not parse or validate. A ConfigError, so its message still starts `CONFIG: <file>@<rev>:
 * <key>`; it also names the file and, when known, the line (src/policy/policy-files.ts).
 */
export class PolicyFileError extends ConfigError {
  readonly path: string;
  readonly line: number | null;
  readonly detail: string;
  constructor(key: string, detail: string, where: { path: string; line: number | null }, options?: { cause?: unknown }) {
    super(key, where.line !== null ? `${detail} (line ${where.line})` : detail, options);
    this.path = where.path;
    this.line = where.line;
    this.detail = detail;
  }
}

/** A source file under a contract root does not parse. */
export class ContractParseError extends PatchgateError {
  readonly path: string;
  readonly line: number;
  readonly column: number;
  constructor(path: string, line: number, column: number, detail: string, options?: { cause?: unknown }) {
    super('CONTRACT_PARSE', `${path}:${line}:${column}: does not parse: ${detail}`, options);
    this.path = path;
    this.line = line;
    this.column = column;
  }
}

/**
 * A contract file is larger than the policy's `contract.maxSourceBytes`: refused from the
 * blob's size, before it is read or parsed. A ContractParseError too, so every place that
 * treats an unparsable tree (the trusted side matches nothing, never cached as a value) treats
 * this one the same way.
 */
export class ContractSizeError extends ContractParseError {
  readonly size: number;
  readonly limit: number;
  constructor(path: string, size: number, limit: number, options?: { cause?: unknown }) {
    super(path, 1, 1, `${size} bytes, over contract.maxSourceBytes (${limit} bytes)`, options);
    (this as { code: string }).code = 'CONTRACT_SIZE';
    this.message = `${path} is ${size} bytes, over the policy's contract.maxSourceBytes (${limit} bytes): not parsed`;
    this.size = size;
    this.limit = limit;
  }
}

/** A parse worker died, ran out of memory or overran its time on a file: that file has no rows. */
export class ParseWorkerError extends PatchgateError {
  readonly path: string;
  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super('PARSE_WORKER', `${path}: ${message}`, options);
    this.path = path;
  }
}

/** The audit log could not be written or read. A failed write always refuses the push. */
export class AuditError extends PatchgateError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('AUDIT', message, options);
  }
}

/** An audit checkpoint could not be made, published, read or verified (src/audit/checkpoint*.ts). */
export class CheckpointError extends PatchgateError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CHECKPOINT', message, options);
  }
}

/**
 * The pusher's token was revoked or expired (or deleted) after its push began and before its
 * decision was written (src/audit/credential.ts): the push was written to the audit log as
 * refused, every ref, and is answered so. The message is one line and names no secret.
 */
export class CredentialError extends PatchgateError {
  readonly state: 'revoked' | 'expired' | 'unknown';
  constructor(message: string, state: 'revoked' | 'expired' | 'unknown', options?: { cause?: unknown }) {
    super('CREDENTIAL', message, options);
    this.state = state;
  }
}

/**
 * A file or folder the gate reads back from its data folder is not one it wrote (a symlink, a
 * FIFO, another user's, too large: src/server/owned-file.ts). The message names the path and
 * what it is, never anything of its content.
 */
export class ForeignFileError extends PatchgateError {
  readonly path: string;
  constructor(path: string, why: string, options?: { cause?: unknown }) {
    super('FOREIGN_FILE', `${path}: not used, ${why}`, options);
    this.path = path;
  }
}

/** Bad input from a user of the CLI or the API (not a policy violation). */
export class UsageError extends PatchgateError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('USAGE', message, options);
  }
}

/** A client request the HTTP front refuses before git sees it: carries the HTTP status. */
export class RequestError extends PatchgateError {
  readonly status: number;
  constructor(status: number, message: string, options?: { cause?: unknown }) {
    super('REQUEST', message, options);
    this.status = status;
  }
}

/** The server could not start: the data folder is in use, or the port could not be bound. */
export class StartupError extends PatchgateError {
  constructor(code: 'LOCKED' | 'LISTEN', message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/**
 * The upstream remote (repo create --upstream) could not be read or refused a forward. The
 * message is already redacted (no credential in it) and names upstream; `answer` is
 * upstream's own (redacted) reason when it gave one.
 */
export class UpstreamError extends PatchgateError {
  readonly answer: string;
  constructor(code: 'UPSTREAM_UNREACHABLE' | 'UPSTREAM_REFUSED' | 'UPSTREAM_CONFIG', message: string, answer = '', options?: { cause?: unknown }) {
    super(code, message, options);
    this.answer = answer;
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** A git-host hook request the daemon cannot tie to a pusher (no or unknown identity, repository outside its roots). */
export class HostIdentityError extends PatchgateError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('HOST_IDENTITY', message, options);
  }
}

/** `patchgate ci --holdout`: the held-out tests cannot be had (unreachable, refused, empty). The message is redacted. */
export class HoldoutError extends PatchgateError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('HOLDOUT', message, options);
  }
}

/** A sealed-expectation file of the held-out source (`*.sealed.json`, src/ci/sealed-cases.ts) is malformed: names the file and, for a bad case, its index. */
export class SealedCaseError extends PatchgateError {
  readonly file: string;
  readonly index: number | null;
  constructor(file: string, index: number | null, message: string, options?: { cause?: unknown }) {
    super('SEALED_CASE', `${file}${index === null ? '' : ` case #${index}`}: ${message}`, options);
    this.file = file;
    this.index = index;
  }
}

/** `patchgate ci --evidence` (src/ci/evidence.ts) could not judge the push's tests (no merge base, a trusted test file that does not parse, no result from the trusted tip): it fails closed with this one line. */
export class EvidenceError extends PatchgateError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('EVIDENCE', message, options);
  }
}
