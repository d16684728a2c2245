// All open SSE subscribers of the session. Owns their lifecycle: opening, counting, and ending
// every stream when the session terminates or the agent shuts down.

import { CatchUpScheduler, DEFAULT_CATCH_UP, type CatchUpOptions } from './catch-up.ts';
import type { EventFilter } from './event-filter.ts';
import type { EventLog } from './event-log.ts';
import { DEFAULT_FLUSH_TIMEOUT_MS, SseSubscriber, type SseSink } from './sse-subscriber.ts';

export interface StreamHubOptions {
  keepaliveMs: number;
  /** Per stream, how long closeAll() waits for a slow client to take its remaining frames. */
  flushTimeoutMs?: number;
  /** Pacing and caps of streams that replay history from disk (docs/events.md "Catching up from disk"). */
  catchUp?: Partial<Omit<CatchUpOptions, 'onIdle'>>;
}

/** open() after closeAll(): the session's streams are over. */
export class StreamClosedError extends Error {
  override name = 'StreamClosedError';
  readonly code = 'browser_unavailable';
  readonly status = 503;

  constructor() {
    super('the telemetry stream is closed');
  }
}

export class StreamHub {
  private readonly subscribers = new Set<SseSubscriber>();
  private closing: Promise<void> | undefined;
  private skipped = 0;
  /** Bytes written by subscribers that have closed; live ones are summed on demand. */
  private closedBytes = 0;
  readonly catchUp: CatchUpScheduler;

  constructor(
    private readonly log: EventLog,
    private readonly options: StreamHubOptions,
  ) {
    this.catchUp = new CatchUpScheduler({
      ...DEFAULT_CATCH_UP,
      ...options.catchUp,
      onIdle: () => log.dropArchiveCache(),
    });
  }

  /**
   * Before a stream from `startSeq` opens (and its headers go out): throws CatchUpFullError when it
   * would replay from disk and the replay queue is full.
   */
  checkCanOpen(startSeq: number): void {
    const ringOldest = this.log.ringOldestSeq;
    if (startSeq < ringOldest && this.log.oldestSeq < ringOldest) this.catchUp.checkAdmit();
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** True once closeAll() was called: open() refuses. */
  get isClosed(): boolean {
    return this.closing !== undefined;
  }

  /** Events skipped by subscribers that fell behind retention, over all streams (for metrics). */
  get skippedEvents(): number {
    return this.skipped;
  }

  /** Bytes written to every stream so far (for metrics). */
  get bytesWritten(): number {
    let total = this.closedBytes;
    for (const s of this.subscribers) total += s.bytesWritten;
    return total;
  }

  /** Start streaming to `sink` from `startSeq`. Headers are the caller's business. */
  open(sink: SseSink, startSeq: number, filter?: EventFilter): SseSubscriber {
    if (this.closing) throw new StreamClosedError();
    const subscriber = new SseSubscriber(this.log, sink, startSeq, {
      filter,
      catchUp: this.catchUp,
      keepaliveMs: this.options.keepaliveMs,
      flushTimeoutMs: this.options.flushTimeoutMs ?? DEFAULT_FLUSH_TIMEOUT_MS,
      onClose: (s) => {
        if (this.subscribers.delete(s)) this.closedBytes += s.bytesWritten;
      },
      onSkip: (count) => (this.skipped += count),
    });
    // The constructor closes at once when the client is already gone.
    if (!subscriber.isClosed) this.subscribers.add(subscriber);
    return subscriber;
  }

  /** End every stream after flushing the events admitted so far. Idempotent. */
  closeAll(): Promise<void> {
    this.closing ??= Promise.all([...this.subscribers].map((s) => s.end())).then(() => undefined);
    return this.closing;
  }
}
