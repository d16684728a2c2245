// One SSE consumer: one HTTP response and a cursor into the event log (docs/events.md "Delivery").
//
// The subscriber holds no queue of its own. It pulls frames from the log by seq and writes them
// while the socket accepts them; when write() reports backpressure it stops and waits for
// 'drain'. It pumps when the log says that events were admitted (EventLog.onAdmitted: at the end
// of the tick, or while the stream is busy once per pace, docs/decisions.md): the events admitted
// since go out as one write, shared with every other caught-up subscriber (EventLog.read). A subscriber that
// stalls therefore retains nothing beyond the log (plus the one run the socket buffered), costs
// the producer one cheap check per tick, and never delays anyone else. If its cursor falls out of
// the log it continues from the oldest retained event, and the client sees the gap in `seq`.

import type { CatchUpReader, CatchUpScheduler } from './catch-up.ts';
import type { EventFilter } from './event-filter.ts';
import type { EventLog } from './event-log.ts';
import type { RunLease } from './run-pool.ts';
import { KEEPALIVE_FRAME } from './sse-frame.ts';

// The global `performance` (not node:perf_hooks' binding) so fake timers in tests can drive it.
const now = (): number => globalThis.performance.now();

/** What the subscriber needs of a response: satisfied by http.ServerResponse and stream.Writable. */
export interface SseSink {
  /** `done` runs once the chunk was handed to the kernel, or the write failed. */
  write(chunk: Buffer, done?: (error?: Error | null) => void): boolean;
  end(): unknown;
  destroy(error?: Error): unknown;
  on(event: 'drain' | 'close' | 'finish' | 'error', listener: () => void): unknown;
  off(event: 'drain' | 'close' | 'finish' | 'error', listener: () => void): unknown;
  readonly destroyed: boolean;
  readonly writableEnded: boolean;
}

export interface SseSubscriberOptions {
  /** Write a keepalive comment after this long without any frame written. */
  keepaliveMs: number;
  /** end(): how long to wait for a slow client to take the remaining frames before giving up. */
  flushTimeoutMs?: number;
  /** Called once when the subscriber is finished, whatever the reason. */
  onClose?: (subscriber: SseSubscriber) => void;
  /** Called with the number of events skipped each time the cursor falls out of the log. */
  onSkip?: (count: number) => void;
  /** Only events matching this are written (docs/events.md "Filters"); seq ids keep their holes. */
  filter?: EventFilter;
  /**
   * Reads of history the ring no longer holds (from the durable store) go through this scheduler,
   * paced and shared with the other catch-up readers (docs/events.md "Catching up from disk");
   * absent: they are read inline.
   */
  catchUp?: CatchUpScheduler;
}

export const DEFAULT_FLUSH_TIMEOUT_MS = 2000;

type State = 'open' | 'ending' | 'closed';

export class SseSubscriber implements CatchUpReader {
  private state: State = 'open';
  /** Seq of the next frame to write. */
  private cursor: number;
  /** Set while the sink refuses more data; cleared by 'drain'. */
  private blocked = false;
  private lastWriteAt = now();
  private skipped = 0;
  private written = 0;
  /** While ending: the last seq to deliver (what was admitted when end() was called). */
  private endSeq = 0;
  private keepaliveTimer: NodeJS.Timeout | undefined;
  private flushDeadline: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private ended: Promise<void> | undefined;
  private resolveEnded: (() => void) | undefined;

  private readonly keepaliveMs: number;
  private readonly flushTimeoutMs: number;

  constructor(
    private readonly log: EventLog,
    private readonly sink: SseSink,
    startSeq: number,
    private readonly options: SseSubscriberOptions,
  ) {
    this.cursor = startSeq;
    this.keepaliveMs = options.keepaliveMs;
    this.flushTimeoutMs = options.flushTimeoutMs ?? DEFAULT_FLUSH_TIMEOUT_MS;
    // The client may have gone before the subscriber exists; then there is nothing to own.
    if (sink.destroyed || sink.writableEnded) {
      this.state = 'closed';
      options.onClose?.(this);
      return;
    }
    sink.on('drain', this.onDrain);
    sink.on('close', this.onSinkGone);
    sink.on('error', this.onSinkGone);
    sink.on('finish', this.onSinkGone);
    this.unsubscribe = log.onAdmitted(this.onAdmitted);
    this.armKeepalive(this.keepaliveMs);
    this.pump();
  }

  /** Seq of the next frame this subscriber will write. */
  get nextSeq(): number {
    return this.cursor;
  }

  /** True while waiting for the client to drain its socket. */
  get isBlocked(): boolean {
    return this.blocked;
  }

  get isClosed(): boolean {
    return this.state === 'closed';
  }

  /** Bytes handed to the socket (frames and keepalives). */
  get bytesWritten(): number {
    return this.written;
  }

  /** Events this subscriber missed because it fell behind the log's retention. */
  get skippedEvents(): number {
    return this.skipped;
  }

  /**
   * End the stream: write every event admitted so far (waiting for drains, at most
   * flushTimeoutMs in total, then the connection is dropped), then end the response.
   */
  end(): Promise<void> {
    if (this.ended) return this.ended;
    this.ended = new Promise<void>((resolve) => (this.resolveEnded = resolve));
    if (this.state === 'closed') {
      this.resolveEnded!();
      return this.ended;
    }
    this.state = 'ending';
    this.endSeq = this.log.latestSeq;
    this.releaseLog();
    this.clearKeepalive();
    this.flushDeadline = setTimeout(this.onFlushTimeout, this.flushTimeoutMs);
    this.flushDeadline.unref();
    this.pump();
    return this.ended;
  }

  /** Drop the connection at once, without flushing. */
  destroy(): void {
    if (this.state === 'closed') return;
    this.sink.destroy();
    this.close();
  }

  private readonly onAdmitted = (): void => {
    this.pump();
  };

  private readonly onDrain = (): void => {
    this.blocked = false;
    this.pump();
  };

  private readonly onSinkGone = (): void => {
    this.close();
  };

  private readonly onFlushTimeout = (): void => {
    this.flushDeadline = undefined;
    this.destroy();
  };

  private readonly onKeepaliveTimer = (): void => {
    this.keepaliveTimer = undefined;
    if (this.state !== 'open') return;
    const idle = now() - this.lastWriteAt;
    if (idle < this.keepaliveMs) {
      this.armKeepalive(this.keepaliveMs - idle);
      return;
    }
    // A blocked socket already has bytes in flight; a keepalive would only queue behind them.
    if (!this.blocked) this.write(KEEPALIVE_FRAME);
    if (this.state === 'open') this.armKeepalive(this.keepaliveMs);
  };

  /** True while the next frame to write is on disk only (behind the ring, retained by the store). */
  private get onDiskOnly(): boolean {
    const ringOldest = this.log.ringOldestSeq;
    return this.cursor < ringOldest && this.log.oldestSeq < ringOldest;
  }

  private get lastToWrite(): number {
    return this.state === 'ending' ? this.endSeq : this.log.latestSeq;
  }

  /** One read from disk, in a turn of the catch-up scheduler (CatchUpReader). */
  catchUpStep(): void {
    if (this.state === 'closed' || this.blocked) return;
    const last = this.lastToWrite;
    const step = this.cursor <= last && this.onDiskOnly ? this.writeOneRun(last) : 'nothing';
    if (step === 'wait' || this.isClosed || this.blocked) return;
    if (step === 'more' && this.cursor <= last && this.onDiskOnly) {
      this.options.catchUp!.request(this);
      return;
    }
    this.options.catchUp!.release(this);
    this.pump();
  }

  /** Write frames from the cursor until caught up or the sink pushes back. */
  private pump(): void {
    if (this.state === 'closed' || this.blocked) return;
    const last = this.lastToWrite;
    while (this.cursor <= last) {
      if (this.options.catchUp !== undefined && this.onDiskOnly) {
        this.options.catchUp.request(this);
        return;
      }
      const step = this.writeOneRun(last);
      if (step === 'wait') return;
      if (step === 'nothing') break;
    }
    if (this.state === 'ending') this.finish();
  }

  /**
   * Write the next run of frames, or pass over what left retention. `wait`: the sink pushed back
   * or closed; `nothing`: nothing more is retained up to `last`.
   */
  private writeOneRun(last: number): 'more' | 'wait' | 'nothing' {
    const filter = this.options.filter;
    if (filter !== undefined) {
      const matching = this.log.readMatching(this.cursor, last, filter);
      if (matching === undefined) return this.skipToOldest(last) ? 'more' : 'nothing';
      this.cursor = matching.next;
      const accepted = matching.bytes === undefined || this.write(matching.bytes, matching.lease);
      matching.lease?.release();
      return accepted ? 'more' : 'wait';
    }
    let run = this.log.read(this.cursor, last);
    if (run === undefined) {
      if (!this.skipToOldest(last)) return 'nothing';
      run = this.log.read(this.cursor, last);
      if (run === undefined) return 'nothing';
    }
    this.cursor = run.next;
    return run.bytes.length === 0 || this.write(run.bytes, run.lease) ? 'more' : 'wait';
  }

  /** Returns true when the sink can take more. */
  private write(frame: Buffer, lease?: RunLease): boolean {
    this.lastWriteAt = now();
    let accepted: boolean;
    try {
      if (lease === undefined) accepted = this.sink.write(frame);
      else {
        // The run's pool slot stays held until the socket is done with these bytes (src/stream/run-pool.ts).
        lease.retain();
        accepted = this.sink.write(frame, lease.release);
      }
    } catch {
      lease?.release();
      // A sink that throws is broken; this runs on the producer's path, so contain it here.
      this.destroy();
      return false;
    }
    this.written += frame.length;
    if (!accepted) this.blocked = true;
    return accepted && this.state !== 'closed';
  }

  /**
   * The cursor left the log while this client was slow: jump to the oldest retained event.
   * False when there is nothing to jump to.
   */
  private skipToOldest(last: number): boolean {
    const oldest = this.log.oldestSeq;
    if (oldest > last || oldest <= this.cursor) return false;
    this.skip(oldest - this.cursor);
    return true;
  }

  private skip(count: number): void {
    this.cursor += count;
    this.skipped += count;
    this.options.onSkip?.(count);
  }

  private finish(): void {
    // 'finish' (all bytes handed to the OS) or 'close' completes the subscriber via onSinkGone.
    if (!this.sink.writableEnded) this.sink.end();
  }

  private close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.options.catchUp?.release(this);
    this.releaseLog();
    this.clearKeepalive();
    if (this.flushDeadline) clearTimeout(this.flushDeadline);
    this.flushDeadline = undefined;
    this.sink.off('drain', this.onDrain);
    this.sink.off('close', this.onSinkGone);
    this.sink.off('error', this.onSinkGone);
    this.sink.off('finish', this.onSinkGone);
    this.options.onClose?.(this);
    this.resolveEnded?.();
  }

  private releaseLog(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  private armKeepalive(delayMs: number): void {
    this.keepaliveTimer = setTimeout(this.onKeepaliveTimer, delayMs);
    // The socket keeps the process alive while the stream is open; the timer need not.
    this.keepaliveTimer.unref();
  }

  private clearKeepalive(): void {
    if (this.keepaliveTimer) clearTimeout(this.keepaliveTimer);
    this.keepaliveTimer = undefined;
  }
}
