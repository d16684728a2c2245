// The archive's write path (docs/gateway.md "Storage"): followers queue events here and the writer
// commits them in batches, every FLUSH_INTERVAL_MS or as soon as a batch is full. Sessions are
// spread over lanes (sessionKey modulo the lane count), each committing one transaction at a
// time, so a session's events are committed in seq order while several sessions' batches commit
// at once: PostgreSQL takes them on several connections (and cores); SQLite, one writer anyway,
// has one lane. A failed write (the database down) keeps the batch and retries; meanwhile the
// queue grows to its bound and then followers stop reading from their agents (backpressure: the
// agents keep the events in their logs and send them when the follower reads again). Nothing
// queued is ever dropped; a crash loses the queue, which the followers of the next start read
// again from the agents (they resume at the archived seq).

import type { Logger } from 'pino';
import type { ArchiveStore } from './archive-store.ts';
import type { ArchivedEvent } from './event-row.ts';

export const FLUSH_INTERVAL_MS = 100;
/** Rows per transaction at most. */
export const MAX_BATCH_ROWS = 2000;
/** Queued rows (all lanes) beyond which followers pause their agents' streams. */
export const QUEUE_HIGH_WATER = 20_000;
const RETRY_AFTER_FAILURE_MS = 1000;

export interface QueuedEvent {
  sessionKey: number;
  event: ArchivedEvent;
}

export interface ArchiveWriterOptions {
  log: Logger;
  /** Transactions in flight at once, each for its own sessions (default 1). */
  lanes?: number;
  flushIntervalMs?: number;
  maxBatchRows?: number;
  queueHighWater?: number;
  /** Called after each commit with its rows (benchmarks measure the archive's lag with it). */
  onCommitted?: (rows: readonly QueuedEvent[], committedAt: number) => void;
}

/** One sequence of transactions: the sessions whose key falls on it, in order. */
class Lane {
  queue: QueuedEvent[] = [];
  /** Rows of the batch being written (back at the head of the queue if the write fails). */
  inFlight = 0;
  timer: NodeJS.Timeout | undefined;
  writing: Promise<void> | undefined;
  failing = false;
}

export class ArchiveWriter {
  private readonly lanes: Lane[];
  private closed = false;
  /** Queued rows a failed commit at close() left behind, dropped. */
  droppedOnClose = 0;
  private failingLog = false;
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
    this.lanes = Array.from({ length: Math.max(1, options.lanes ?? 1) }, () => new Lane());
    this.flushIntervalMs = options.flushIntervalMs ?? FLUSH_INTERVAL_MS;
    this.maxBatchRows = options.maxBatchRows ?? MAX_BATCH_ROWS;
    this.queueHighWater = options.queueHighWater ?? QUEUE_HIGH_WATER;
  }

  /** Rows waiting to be committed. */
  get queued(): number {
    let n = 0;
    for (const lane of this.lanes) n += lane.queue.length + lane.inFlight;
    return n;
  }

  /** Whether followers should stop reading until `whenDrained`. */
  get saturated(): boolean {
    return this.queued >= this.queueHighWater;
  }

  enqueue(sessionKey: number, event: ArchivedEvent): void {
    if (this.closed) return;
    const lane = this.lanes[sessionKey % this.lanes.length]!;
    lane.queue.push({ sessionKey, event });
    if (lane.queue.length >= this.maxBatchRows) this.startWrite(lane);
    else this.schedule(lane, this.flushIntervalMs);
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
    await Promise.all(this.lanes.map((lane) => this.flushLane(lane)));
  }

  /**
   * Commits what is queued (no retry when the database fails), then takes nothing more. Rows the
   * failed commit leaves are dropped, counted in `droppedOnClose` and logged: the followers of the
   * next start read them again from the agents.
   */
  async close(): Promise<void> {
    for (const lane of this.lanes) {
      if (lane.timer) clearTimeout(lane.timer);
      lane.timer = undefined;
    }
    await this.flush().catch((err: unknown) => {
      const dropped = this.queued;
      this.droppedOnClose += dropped;
      this.options.log.error({ err, dropped }, 'archive writer closed with rows it could not commit; they are dropped');
    });
    this.closed = true;
    for (const lane of this.lanes) {
      if (lane.timer) clearTimeout(lane.timer);
      lane.timer = undefined;
    }
    for (const resume of this.drainWaiters) resume();
    this.drainWaiters.clear();
  }

  /** Forgets a session's commit mark (its follower is gone). */
  forget(sessionKey: number): void {
    this.committed.delete(sessionKey);
  }

  private async flushLane(lane: Lane): Promise<void> {
    while (lane.writing || lane.queue.length > 0) {
      if (!lane.writing) this.startWrite(lane);
      await lane.writing;
      if (lane.failing) throw new Error('the archive could not be written');
    }
  }

  private schedule(lane: Lane, delayMs: number): void {
    if (lane.timer || lane.writing || this.closed) return;
    lane.timer = setTimeout(() => {
      lane.timer = undefined;
      this.startWrite(lane);
    }, delayMs);
    lane.timer.unref();
  }

  private startWrite(lane: Lane): void {
    if (lane.writing || lane.queue.length === 0) return;
    if (lane.timer) clearTimeout(lane.timer);
    lane.timer = undefined;
    const batch = lane.queue.length <= this.maxBatchRows ? lane.queue : lane.queue.slice(0, this.maxBatchRows);
    lane.queue = batch === lane.queue ? [] : lane.queue.slice(batch.length);
    lane.inFlight = batch.length;
    lane.writing = this.write(lane, batch).finally(() => {
      lane.writing = undefined;
      if (this.closed) return;
      if (lane.queue.length >= this.maxBatchRows && !lane.failing) this.startWrite(lane);
      else if (lane.queue.length > 0) this.schedule(lane, lane.failing ? RETRY_AFTER_FAILURE_MS : this.flushIntervalMs);
    });
  }

  private async write(lane: Lane, batch: QueuedEvent[]): Promise<void> {
    try {
      const results = await this.store.inserts.insert(batch);
      lane.inFlight = 0;
      lane.failing = false;
      const at = Date.now();
      this.committedEvents += batch.length;
      for (const { sessionKey, maxSeq } of results) {
        if ((this.committed.get(sessionKey) ?? 0) < maxSeq) this.committed.set(sessionKey, maxSeq);
      }
      if (this.failingLog && this.lanes.every((l) => !l.failing)) {
        this.failingLog = false;
        this.options.log.info({ queued: this.queued }, 'archive writes resumed');
      }
      this.options.onCommitted?.(batch, at);
      this.settleWaiters();
    } catch (err) {
      // The batch goes back to the head of its lane, in order, and is tried again.
      lane.queue = batch.concat(lane.queue);
      lane.inFlight = 0;
      lane.failing = true;
      this.failedWrites++;
      if (!this.failingLog) {
        this.failingLog = true;
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
}
