// Cancelling a judgement. The hook daemon runs each push's judgement under an AbortSignal
// (AsyncLocalStorage carries it through the engine, the rules and the contract digest without
// a parameter on every call); when the hook time limit passes, or the hook that asked goes
// away, the signal fires: the parse worker holding that push's file is terminated (its memory
// goes with it) and the judgement stops at its next check instead of running on unseen.

import { AsyncLocalStorage } from 'node:async_hooks';
import { PatchgateError } from './errors.js';

/** The judgement was cancelled (time limit or the hook went away); never cached, never an accept. */
export class CancelledError extends PatchgateError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CANCELLED', message, options);
  }
}

const current = new AsyncLocalStorage<AbortSignal>();

/** Run `fn` with `signal` as the current judgement's signal (inherited by everything it awaits). */
export function runCancellable<T>(signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
  return current.run(signal, fn);
}

/** The current judgement's signal, if any (none in `check` and the CLI). */
export function currentSignal(): AbortSignal | undefined {
  return current.getStore();
}

/** Throws CancelledError when the current judgement was cancelled. */
export function throwIfCancelled(signal: AbortSignal | undefined = current.getStore()): void {
  if (signal?.aborted) throw cancelledBy(signal);
}

export function cancelledBy(signal: AbortSignal): CancelledError {
  const why = signal.reason instanceof Error ? signal.reason.message : 'cancelled';
  return new CancelledError(`judgement cancelled: ${why}`, { cause: signal.reason });
}
