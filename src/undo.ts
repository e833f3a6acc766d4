// A start that fails half-way must close what it had opened (the data-folder lock, the audit
// log, the hook listener), or the next start finds them busy. `serve` and `patchgate daemon`
// both keep a list of closers and run it, newest first, when their start fails.

/** Run every closer, newest first; a closer that throws does not stop the others. */
export async function runUndo(undo: Array<() => unknown>): Promise<void> {
  for (const f of undo.reverse()) {
    try {
      await f();
    } catch {
      // best effort: the start already failed with its own error
    }
  }
}
