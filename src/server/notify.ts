// `serve --notify-url URL`: a JSON event POSTed for each escalation (src/audit/escalation.ts),
// so a person hears of it without watching the log. Fire and forget: `send` returns at once,
// each attempt has a time limit, a failure is retried a few times with back-off, and nothing
// of it ever holds up or refuses a push. The event carries what the escalation row holds (no
// token: the hook never sees one). The URL may itself hold a secret (a webhook's path), so
// messages name only its origin.

import { errorMessage } from '../errors.js';

export interface NotifyOptions {
  /** One attempt's time limit (ms). Default 5000. */
  timeoutMs?: number;
  /** Attempts after the first. Default 3. */
  retries?: number;
  /** The first retry's wait (ms), doubled each time. Default 1000. */
  backoffMs?: number;
  log?: (line: string) => void;
}

export interface EscalationEvent {
  type: 'patchgate.escalation';
  v: 1;
  id: number;
  time: string;
  repo: string;
  actor: string;
  role: string;
  ref: string;
  old: string;
  new: string;
  verdict: string;
  pushId: string;
  text: string;
  /** The command a person runs to close it. */
  close: string;
}

/** Checks a notify URL (http or https, nothing else); throws a one-line reason. */
export function checkNotifyUrl(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Error('not a URL (expected http://… or https://…)');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`must be http:// or https:// (got ${u.protocol})`);
  return u;
}

export class Notifier {
  private readonly url: URL;
  private readonly where: string;
  private readonly pending = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private readonly opts: Required<NotifyOptions>;

  constructor(url: string, opts: NotifyOptions = {}) {
    this.url = checkNotifyUrl(url);
    this.where = this.url.origin;
    this.opts = { timeoutMs: 5000, retries: 3, backoffMs: 1000, log: (l) => void process.stderr.write(l + '\n'), ...opts };
  }

  /** Sends in the background; never throws, never waits. */
  send(event: EscalationEvent): void {
    const p = this.deliver(event).catch((err: unknown) => this.opts.log(`patchgate: notify: ${errorMessage(err).split('\n')[0]}`));
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** Deliveries still under way (tests wait on it). */
  async idle(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  /** At stop: pending deliveries are abandoned (their retries end). */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.idle();
  }

  private async deliver(event: EscalationEvent): Promise<void> {
    const body = JSON.stringify(event);
    let wait = this.opts.backoffMs;
    for (let attempt = 0; ; attempt++) {
      let why: string;
      try {
        const res = await fetch(this.url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'User-Agent': 'patchgate-notify' },
          body,
          redirect: 'error',
          signal: AbortSignal.any([AbortSignal.timeout(this.opts.timeoutMs), this.stopping.signal]),
        });
        await res.arrayBuffer().catch(() => undefined);
        if (res.ok) return;
        why = `HTTP ${res.status}`;
        // A client error will not change on a retry (except 408 and 429).
        if (res.status < 500 && res.status !== 408 && res.status !== 429) attempt = this.opts.retries;
      } catch (err) {
        why = (err as { name?: string }).name === 'TimeoutError' ? `no answer within ${this.opts.timeoutMs} ms` : errorMessage((err as { cause?: unknown }).cause ?? err);
      }
      if (this.stopping.signal.aborted) throw new Error(`escalation ${event.id} not delivered to ${this.where}: the server stopped (${why})`);
      if (attempt >= this.opts.retries) throw new Error(`escalation ${event.id} not delivered to ${this.where} after ${attempt + 1} attempt(s): ${why}; it is in the audit log (patchgate escalation list --open)`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, wait);
        t.unref();
        this.stopping.signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
      });
      wait *= 2;
    }
  }
}
