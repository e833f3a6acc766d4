// The intent journal: which accepted pushes still have effects to settle (see ./intents.ts).
// One append-only file, `<data>/intents/journal.jsonl`, instead of a file per push: making an
// entry durable is one append and one fdatasync on the thread pool (a file per push cost a
// file fsync and a folder fsync on the event loop, and one more folder fsync to remove it,
// about 17 ms of blocked loop per push here). Settling appends a line without a sync: a
// settle lost in a crash only makes the next start settle that push again, and settling is
// idempotent (it records only what the log lacks). The file is rewritten at start (after
// recovery) and emptied whenever nothing is open. Entries of the earlier format (one
// `<pushId>.json` per push) are still read, so an upgrade after a crash loses nothing.
// Only what the gate wrote is read or written (./owned-file.ts): every file here is opened
// without following a symlink and used only when it is a regular file of the gate's user with
// one link, under a size bound. Anything else is skipped and named (never quoted); a journal
// file that is not the gate's is moved aside for a person, and a new one starts. A line or
// entry that does not parse is named by its place, not by its text.

import { closeSync, constants, fsyncSync, ftruncateSync, lstatSync, openSync, readdirSync, renameSync, rmSync, writeSync } from 'node:fs';
import { lstat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { ForeignFileError, errorMessage } from '../errors.js';
import { privateDir } from '../private-files.js';
import { openOwned, openOwnedSync, readOwnedFile } from './owned-file.js';

export interface IntentEntry {
  pushId: string;
  repo: string;
  repoDir: string;
  /** The push is forwarded to an upstream remote (its refs there are compared at recovery). */
  upstream: boolean;
  time: string;
}

/** The journal's file name inside the intents folder. */
export const JOURNAL_FILE = 'journal.jsonl';
/** A journal that never empties (pushes always in flight) is rewritten once it has this many lines. */
const COMPACT_LINES = 4096;
/** Entries of the earlier format: one file per push. */
const LEGACY_RE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}\.json$/;
/** A push id as the gate makes them (src/audit/validate.ts PUSH_ID_RE). */
const PUSH_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/** Most bytes an entry file of the earlier format is read at (one entry is a few hundred). */
export const LEGACY_MAX_BYTES = 1024 * 1024;
/**
 * Most bytes the journal is read at: it is rewritten past COMPACT_LINES lines of at most a few
 * KiB each (a repository path is the longest field), so a larger one is not the gate's.
 */
export const JOURNAL_MAX_BYTES = 64 * 1024 * 1024;
const APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT;

type Line = { open: IntentEntry } | { settle: string };

function isEntry(e: unknown): e is IntentEntry {
  const o = e as IntentEntry | null;
  return !!o && typeof o === 'object' && typeof o.pushId === 'string' && PUSH_ID_RE.test(o.pushId) && typeof o.repoDir === 'string' && typeof o.repo === 'string';
}

/** What is wrong with a line or file that did not parse, without quoting it (a JSON error quotes its input). */
function parseProblem(err: unknown): string {
  return err instanceof SyntaxError ? 'not JSON' : errorMessage(err);
}

/**
 * The entries still open in a journal text; lines that do not parse are named in `bad` and
 * kept as they are in `badLines` (a torn last line is `torn`).
 */
export function replay(text: string): { open: Map<string, IntentEntry>; bad: string[]; badLines: string[]; torn: string | null } {
  const open = new Map<string, IntentEntry>();
  const bad: string[] = [];
  const badLines: string[] = [];
  let torn: string | null = null;
  const lines = text.split('\n');
  // The text after the last newline: an append that a crash cut short. Its fdatasync never
  // returned, so its push was never answered (nothing moved); it is dropped at the next rewrite.
  const last = lines.pop() ?? '';
  if (last) torn = last;
  lines.forEach((l, i) => {
    if (!l) return;
    try {
      const v = JSON.parse(l) as Line;
      if ('open' in v && isEntry(v.open)) open.set(v.open.pushId, v.open);
      else if ('settle' in v && typeof v.settle === 'string') open.delete(v.settle);
      else throw new Error('neither an open nor a settle line');
    } catch (err) {
      bad.push(`${JOURNAL_FILE} line ${i + 1}: ${parseProblem(err)}`);
      badLines.push(l);
    }
  });
  return { open, bad, badLines, torn };
}

/** The folder of unsettled pushes. An entry is durable (appended and fdatasync'd) before `open` resolves. */
export class IntentJournal {
  private readonly path: string;
  private handle: Promise<{ fh: FileHandle; ino: number }> | null = null;
  /**
   * Pushes open in the journal (opened by this process, or left by an earlier one and read by
   * `list`) and appends not finished: the file may be emptied only when both are none.
   */
  private readonly live = new Set<string>();
  private writing = 0;
  /** Entries of the earlier format still on disk (removed when settled). */
  private legacy = new Set<string>();
  /** Lines in the file; past COMPACT_LINES with entries still open, it is rewritten. */
  private lines = 0;

  /** `log`: where a journal file that is not the gate's, moved aside, is named. */
  constructor(readonly dir: string, private readonly log: (line: string) => void = () => {}) {
    this.path = join(dir, JOURNAL_FILE);
  }

  /** Whether the folder is there (false: not yet); a symlink or a file in its place throws ForeignFileError. */
  private folder(): boolean {
    let st;
    try {
      st = lstatSync(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
    if (!st.isDirectory()) throw new ForeignFileError(this.dir, st.isSymbolicLink() ? 'a symbolic link where the intent journal\'s folder should be' : 'not a folder');
    return true;
  }

  /** Whether the journal's path holds a regular file (a symlink is not followed). */
  private fileThere(): boolean {
    try {
      return lstatSync(this.path).isFile();
    } catch {
      return false;
    }
  }

  /**
   * The journal's path holds something the gate did not write (`why`): moved aside under a
   * name of its own, for a person to look at (nothing of it is read), so that a new journal
   * starts. The append handle goes with it (unless it is the one being opened: `dropHandle` false).
   */
  private setAside(why: string, dropHandle = true): void {
    const aside = `${JOURNAL_FILE}.unread-${Date.now()}`;
    renameSync(this.path, join(this.dir, aside));
    this.syncDir();
    this.lines = 0;
    if (dropHandle) {
      const old = this.handle;
      this.handle = null;
      void old?.then((h) => h.fh.close(), () => undefined);
    }
    this.log(`patchgate: intent journal: ${JOURNAL_FILE} is not a file the gate wrote (${why}); not read, moved aside as ${aside} for a person to look at; a new journal starts`);
  }

  /**
   * The append handle, on the file that is at the journal's path now: a handle whose file was
   * removed or replaced (a person cleaned the folder) would write entries no start can read,
   * so it is dropped and the path opened again (and a path that cannot be opened refuses).
   */
  private async file(): Promise<FileHandle> {
    if (this.handle) {
      const [h, now] = await Promise.all([this.handle.catch(() => null), lstat(this.path).catch(() => null)]);
      if (h && now && now.ino === h.ino) return h.fh;
      if (this.handle) {
        const old = this.handle;
        this.handle = null;
        void old.then((x) => x.fh.close(), () => undefined);
      }
    }
    if (!this.handle) {
      this.handle = (async () => {
        privateDir(this.dir);
        this.folder();
        let r = await openOwned(this.path, APPEND);
        if ('skipped' in r) {
          // Something else at the path (planted, or swapped in while running): never written through.
          this.setAside(r.skipped, false);
          r = await openOwned(this.path, APPEND | constants.O_EXCL);
          if ('skipped' in r) throw new ForeignFileError(this.path, r.skipped);
        }
        return { fh: r.fh, ino: (await r.fh.stat()).ino };
      })();
      this.handle.catch(() => (this.handle = null));
    }
    return (await this.handle).fh;
  }

  /** Before the decision row: rejects when the entry cannot be made durable (the push is refused). */
  async open(e: Omit<IntentEntry, 'time'>): Promise<void> {
    const line = JSON.stringify({ open: { ...e, time: new Date().toISOString() } }) + '\n';
    this.live.add(e.pushId);
    this.writing++;
    try {
      const fh = await this.file();
      await fh.write(line);
      await fh.datasync();
      this.lines++;
    } catch (err) {
      this.live.delete(e.pushId);
      throw err;
    } finally {
      this.writing--;
    }
  }

  /** The push's effects are all in the log: its entry is closed (no sync; see the top of this file). */
  settle(pushId: string): void {
    this.live.delete(pushId);
    if (this.legacy.delete(pushId)) rmSync(join(this.dir, `${pushId}.json`), { force: true });
    // No journal of the gate's there (none, or one that is not the gate's: the next open moves it aside): nothing to settle in it.
    if (!this.fileThere()) return;
    if (this.live.size === 0 && this.writing === 0) {
      // Nothing is open (this process's entries and those an earlier one left are settled) and
      // no append is under way: every line is settled, so the file starts again empty.
      const r = openOwnedSync(this.path, constants.O_RDWR);
      if ('skipped' in r) return;
      const fd = r.fd;
      try {
        ftruncateSync(fd, 0);
      } finally {
        closeSync(fd);
      }
      this.lines = 0;
      return;
    }
    const r = openOwnedSync(this.path, APPEND);
    if ('skipped' in r) return;
    const fd = r.fd;
    try {
      writeSync(fd, JSON.stringify({ settle: pushId }) + '\n');
    } finally {
      closeSync(fd);
    }
    if (++this.lines > COMPACT_LINES && this.writing === 0) this.compact();
  }

  has(pushId: string): boolean {
    return this.list().entries.some((e) => e.pushId === pushId);
  }

  /** Every unsettled push, oldest first; an unreadable line or entry is named in `bad`. */
  list(): { entries: IntentEntry[]; bad: string[]; torn: string | null } {
    if (!this.folder()) return { entries: [], bad: [], torn: null };
    // A journal that is not the gate's is read as none here (and named once, moved aside, by compact at start).
    const journal = readOwnedFile(this.path, JOURNAL_MAX_BYTES);
    const { open, bad, torn } = 'text' in journal ? replay(journal.text) : { open: new Map<string, IntentEntry>(), bad: [] as string[], torn: null };
    const legacy = new Set<string>();
    for (const f of readdirSync(this.dir).filter((n) => LEGACY_RE.test(n))) {
      const r = readOwnedFile(join(this.dir, f), LEGACY_MAX_BYTES);
      if ('absent' in r) continue;
      if ('skipped' in r) {
        bad.push(`${f}: not read, ${r.skipped}`);
        continue;
      }
      let e: unknown;
      try {
        e = JSON.parse(r.text);
      } catch (err) {
        bad.push(`${f}: ${parseProblem(err)}`);
        continue;
      }
      // The earlier format named each file after its push: anything else was not written by the gate.
      if (!isEntry(e)) bad.push(`${f}: not an intent entry (missing or malformed fields)`);
      else if (`${e.pushId}.json` !== f) bad.push(`${f}: its push id is not its file name`);
      else {
        legacy.add(e.pushId);
        if (!open.has(e.pushId)) open.set(e.pushId, e);
      }
    }
    this.legacy = legacy;
    for (const id of open.keys()) this.live.add(id);
    return { entries: [...open.values()].sort((a, b) => a.time.localeCompare(b.time)), bad, torn };
  }

  /**
   * At start, after recovery (and when the file grew long): the journal rewritten with only
   * the entries still open (and any line that did not parse, so that a person can look at
   * it), through a synced temp file and a rename. A torn last line is left out: its push was
   * never answered. Not while an append is under way (its handle is on the file replaced).
   */
  compact(): void {
    if (this.writing > 0) return;
    const journal = readOwnedFile(this.path, JOURNAL_MAX_BYTES);
    if ('absent' in journal) return;
    if ('skipped' in journal) return this.setAside(journal.skipped);
    const { open, badLines } = replay(journal.text);
    const text = [...[...open.values()].map((e) => JSON.stringify({ open: e })), ...badLines].map((l) => l + '\n').join('');
    const tmp = `${this.path}.tmp`;
    // A new file, never through whatever is at the temp name (O_EXCL: not even a dangling symlink).
    rmSync(tmp, { force: true });
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      const buf = Buffer.from(text, 'utf8');
      for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.path);
    this.syncDir();
    this.lines = open.size + badLines.length;
    // The append handle is on the replaced file: the next entry opens the new one.
    const old = this.handle;
    this.handle = null;
    void old?.then((h) => h.fh.close(), () => undefined);
  }

  /** Stop: the append handle is closed (entries already written stay). */
  async close(): Promise<void> {
    const h = this.handle;
    this.handle = null;
    if (h) await (await h.catch(() => null))?.fh.close();
  }

  private syncDir(): void {
    try {
      const fd = openSync(this.dir, 'r');
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch {
      // a folder fsync is not supported everywhere; the file itself was synced
    }
  }
}
