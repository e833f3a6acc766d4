// The intent journal: which accepted pushes still have effects to settle (see ./intents.ts).
// One append-only file, `<data>/intents/journal.jsonl`, instead of a file per push: making an
// entry durable is one append and one fdatasync on the thread pool (a file per push cost a
// file fsync and a folder fsync on the event loop, and one more folder fsync to remove it,
// about 17 ms of blocked loop per push here). Settling appends a line without a sync: a
// settle lost in a crash only makes the next start settle that push again, and settling is
// idempotent (it records only what the log lacks). The file is rewritten at start (after
// recovery) and emptied whenever nothing is open. Entries of the earlier format (one
// `<pushId>.json` per push) are still read, so an upgrade after a crash loses nothing.

import { closeSync, existsSync, fsyncSync, ftruncateSync, openSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { open as openFile, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../errors.js';
import { privateDir } from '../private-files.js';

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

type Line = { open: IntentEntry } | { settle: string };

function isEntry(e: unknown): e is IntentEntry {
  const o = e as IntentEntry | null;
  return !!o && typeof o.pushId === 'string' && typeof o.repoDir === 'string' && typeof o.repo === 'string';
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
      bad.push(`${JOURNAL_FILE} line ${i + 1}: ${errorMessage(err)}`);
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

  constructor(readonly dir: string) {
    this.path = join(dir, JOURNAL_FILE);
  }

  /**
   * The append handle, on the file that is at the journal's path now: a handle whose file was
   * removed or replaced (a person cleaned the folder) would write entries no start can read,
   * so it is dropped and the path opened again (and a path that cannot be opened refuses).
   */
  private async file(): Promise<FileHandle> {
    if (this.handle) {
      const [h, now] = await Promise.all([this.handle.catch(() => null), stat(this.path).catch(() => null)]);
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
        const fh = await openFile(this.path, 'a', 0o600);
        return { fh, ino: (await fh.stat()).ino };
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
    if (!existsSync(this.path)) return;
    if (this.live.size === 0 && this.writing === 0) {
      // Nothing is open (this process's entries and those an earlier one left are settled) and
      // no append is under way: every line is settled, so the file starts again empty.
      const fd = openSync(this.path, 'r+');
      try {
        ftruncateSync(fd, 0);
      } finally {
        closeSync(fd);
      }
      this.lines = 0;
      return;
    }
    const fd = openSync(this.path, 'a', 0o600);
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
    if (!existsSync(this.dir)) return { entries: [], bad: [], torn: null };
    const { open, bad, torn } = existsSync(this.path) ? replay(readFileSync(this.path, 'utf8')) : { open: new Map<string, IntentEntry>(), bad: [] as string[], torn: null };
    const legacy = new Set<string>();
    for (const f of readdirSync(this.dir).filter((n) => LEGACY_RE.test(n))) {
      try {
        const e = JSON.parse(readFileSync(join(this.dir, f), 'utf8')) as unknown;
        if (!isEntry(e)) throw new Error('missing fields');
        legacy.add(e.pushId);
        if (!open.has(e.pushId)) open.set(e.pushId, e);
      } catch (err) {
        bad.push(`${f}: ${errorMessage(err)}`);
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
    if (!existsSync(this.path) || this.writing > 0) return;
    const { open, badLines } = replay(readFileSync(this.path, 'utf8'));
    const text = [...[...open.values()].map((e) => JSON.stringify({ open: e })), ...badLines].map((l) => l + '\n').join('');
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, text, { mode: 0o600 });
    const fd = openSync(tmp, 'r');
    try {
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
