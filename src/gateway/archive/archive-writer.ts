// The archive's write path (docs/gateway.md "Storage"): followers queue events here and one
// writer commits them in batches, every FLUSH_INTERVAL_MS or as soon as a batch is full, one
// transaction at a time, all sessions together. A failed write (the database down) keeps the
// batch and retries; meanwhile the queue grows to its bound and then followers stop reading
// from their agents (backpressure: the agents keep the events in their logs and send them when
// the follower reads again). Nothing queued is ever dropped; a crash loses the queue, which the
// followers of the next start read again from the agents (they resume at the archived seq).

import type { Logger } from 'pino';
import type { ArchiveStore } from './archive-store.ts';
import type { ArchivedEvent } from './event-row.ts';

export const FLUSH_INTERVAL_MS = 100;
/** Rows per transaction at most. */
export const MAX_BATCH_ROWS = 2000;
/** Queued rows beyond which followers pause their agents' streams. */
export const QUEUE_HIGH_WATER = 20_000;
const RETRY_AFTER_FAILURE_MS = 1000;

export interface QueuedEvent {
  sessionKey: number;
  event: ArchivedEvent;
}

export interface ArchiveWriterOptions {
  log: Logger;
  flushIntervalMs?: number;
  maxBatchRows?: number;
  queueHighWater?: number;
  /** Called after each commit with its rows (benchmarks measure the archive's lag with it). */
  onCommitted?: (rows: readonly QueuedEvent[], committedAt: number) => void;
}

export class ArchiveWriter {
  private queue: QueuedEvent[] = [];
  /** Rows of the batch being written (back at the head of the queue if the write fails). */
  private inFlight = 0;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private failing = false;
  private closed = false;
  private readonly drainWaiters = new Set<() => void>();
  /** Newest seq committed per session by this writer. */
  private readonly committed = new Map<number, number>();
  private readonly commitWaiters = new Set<{ sessionKey: number; seq: number; resolve: () => void }>();
  private readonly flushIntervalMs: number;
  private readonly maxBatchRows: number;
  private readonly queueHighWater: number;
  /** Totals for logs and tests. */
  committedEvents = 0;
  failedWrites = 0;

  constructor(
    private readonly store: ArchiveStore,
    private readonly options: ArchiveWriterOptions,
  ) {
    this.flushIntervalMs = options.flushIntervalMs ?? FLUSH_INTERVAL_MS;
    this.maxBatchRows = options.maxBatchRows ?? MAX_BATCH_ROWS;
    this.queueHighWater = options.queueHighWater ?? QUEUE_HIGH_WATER;
  }

  /** Rows waiting to be committed. */
  get queued(): number {
    return this.queue.length + this.inFlight;
  }

  /** Whether followers should stop reading until `whenDrained`. */
  get saturated(): boolean {
    return this.queued >= this.queueHighWater;
  }

  enqueue(sessionKey: number, event: ArchivedEvent): void {
    if (this.closed) return;
    this.queue.push({ sessionKey, event });
    if (this.queue.length >= this.maxBatchRows) this.startWrite();
    else this.schedule(this.flushIntervalMs);
  }

  /** Calls `resume` once the queue is below its bound again. */
  whenDrained(resume: () => void): void {
    if (!this.saturated) resume();
    else this.drainWaiters.add(resume);
  }

  /** Resolves when `seq` of the session (or a later one) is committed by this writer. */
  committedThrough(sessionKey: number, seq: number): Promise<void> {
    if ((this.committed.get(sessionKey) ?? 0) >= seq) return Promise.resolve();
    return new Promise((resolve) => this.commitWaiters.add({ sessionKey, seq, resolve }));
  }

  /** Commits everything queued now; rejects when a write fails. */
  async flush(): Promise<void> {
    while (this.writing || this.queue.length > 0) {
      if (!this.writing) this.startWrite();
      await this.writing;
      if (this.failing) throw new Error('the archive could not be written');
    }
  }

  /** Commits what is queued (no retry when the database fails), then takes nothing more. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush().catch(() => undefined);
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const resume of this.drainWaiters) resume();
    this.drainWaiters.clear();
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.writing || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.startWrite();
    }, delayMs);
    this.timer.unref();
  }

  private startWrite(): void {
    if (this.writing || this.queue.length === 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.queue.length <= this.maxBatchRows ? this.queue : this.queue.slice(0, this.maxBatchRows);
    this.queue = batch === this.queue ? [] : this.queue.slice(batch.length);
    this.inFlight = batch.length;
    this.writing = this.write(batch).finally(() => {
      this.writing = undefined;
      if (this.closed) return;
      if (this.queue.length >= this.maxBatchRows && !this.failing) this.startWrite();
      else if (this.queue.length > 0) this.schedule(this.failing ? RETRY_AFTER_FAILURE_MS : this.flushIntervalMs);
    });
  }

  private async write(batch: QueuedEvent[]): Promise<void> {
    try {
      const results = await this.store.insert(batch);
      this.inFlight = 0;
      const at = Date.now();
      this.committedEvents += batch.length;
      for (const { sessionKey, maxSeq } of results) {
        if ((this.committed.get(sessionKey) ?? 0) < maxSeq) this.committed.set(sessionKey, maxSeq);
      }
      if (this.failing) {
        this.failing = false;
        this.options.log.info({ queued: this.queued }, 'archive writes resumed');
      }
      this.options.onCommitted?.(batch, at);
      this.settleWaiters();
    } catch (err) {
      // The batch goes back to the head of the queue, in order, and is tried again.
      this.queue = batch.concat(this.queue);
      this.inFlight = 0;
      this.failedWrites++;
      if (!this.failing) {
        this.failing = true;
        this.options.log.error({ err, queued: this.queued }, 'archive write failed: retrying, followers pause once the queue is full');
      }
    }
  }

  private settleWaiters(): void {
    for (const waiter of this.commitWaiters) {
      if ((this.committed.get(waiter.sessionKey) ?? 0) >= waiter.seq) {
        this.commitWaiters.delete(waiter);
        waiter.resolve();
      }
    }
    if (!this.saturated && this.drainWaiters.size > 0) {
      const waiting = [...this.drainWaiters];
      this.drainWaiters.clear();
      for (const resume of waiting) resume();
    }
  }

  /** Forgets a session's commit mark (its follower is gone). */
  forget(sessionKey: number): void {
    this.committed.delete(sessionKey);
  }
}
