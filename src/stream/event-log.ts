// The event log (docs/events.md): the single producer of sequence numbers. Each admitted event is
// serialized once into its SSE frame; subscribers write those very bytes, so fan-out costs no
// serialization. Retention keeps the newest events within a count and a byte budget.
//
// Listeners hear once per tick that events were admitted (one process.nextTick for all of them,
// queued by the tick's first append), or, while the stream is busy, once per pace (a timer of
// paceMs after the first new event: the events of several CDP reads in one notification,
// docs/decisions.md). Subscribers that are caught up then all ask for the same run of frames;
// read() hands every one of them the same Buffer, so ten subscribers cost ten socket writes and no
// copy per event.
//
// Frames are written one after the other into slabs of memory of the log's own (never Node's
// shared Buffer pool, whose 8 KiB chunks are shared with every other small Buffer of the process:
// a retained frame would keep its whole chunk alive). A slab is never written twice; it is freed
// once the ring has evicted its last frame. The frames of one tick are usually adjacent in a slab,
// and their run is then a view of it, not a copy.

import type { TelemetryEvent } from '../../injected/schema.ts';
import { contextOf } from '../event-data.ts';
import { causeOf, matches, OPT_IN_TYPES, type EventFilter, type EventMeta } from './event-filter.ts';
import { envelopeBytesOf, envelopeFrameText } from './sse-frame.ts';
import { RunPool, type RunLease } from './run-pool.ts';

export interface EventLogOptions {
  /** Keep at most this many events (≥ 1). */
  maxEvents: number;
  /** Keep at most this many frame bytes; the newest event is kept even when larger. */
  maxBytes: number;
  /** The durable store behind the ring (docs/storage.md); absent: RAM only. */
  archive?: LogArchive;
  /**
   * Fan-out pacing (docs/events.md "Delivery"): while events keep coming (a notification within
   * the last BUSY_WINDOW_MS), listeners hear of new ones this many ms after the first of them
   * instead of at the end of its tick, so that the events of several socket reads go out as one
   * write per subscriber. 0 (the default): always at the end of the tick.
   */
  paceMs?: number;
  /**
   * The pace while a tab is loading (setLoading): the page competes with the agent for the cores
   * then, and fewer, larger writes cost the agent and its subscribers less CPU (docs/events.md
   * "Delivery"). 0 (the default): paceMs applies while loading too.
   */
  loadPaceMs?: number;
}

/** A stream that notified within this many ms is busy, and paced (EventLogOptions.paceMs). */
export const BUSY_WINDOW_MS = 50;

/**
 * What the log needs of the durable store: seqs continue after it, every admitted event goes to
 * it, and what the ring evicted is read back from it.
 */
export interface LogArchive {
  /** The log continues after this seq (every seq ever handed out for the session). */
  readonly resumeAfterSeq: number;
  /** Called before `seq` is handed out (keeps the store's reservation ahead). */
  reserveThrough(seq: number): void;
  /** `envelope`: the envelope's JSON bytes (a view of the frame the ring keeps). */
  append(seq: number, meta: EventMeta, envelope: Buffer): void;
  oldestRetainedSeq(): number | undefined;
  /**
   * The frames of stored events in [from, to] (matching `filter`) joined, at most `maxBytes` (or
   * one larger frame); `first` is the first seq in them, `next` where the reader continues.
   */
  readFrames(from: number, to: number, maxBytes: number, filter?: EventFilter): { bytes: Uint8Array | undefined; first: number | undefined; next: number };
}

/** A run of matching frames (possibly none) and where the reader continues. */
export interface MatchingRun {
  readonly next: number;
  readonly bytes: Buffer | undefined;
  /** Read from disk into the run pool: the reader's hold, released once it wrote the bytes (src/stream/run-pool.ts). */
  readonly lease?: RunLease;
}

/**
 * Called once at the end of a tick (process.nextTick) in which events were appended, or once per
 * pace while the stream is busy (EventLogOptions.paceMs). Must not
 * throw: it runs on the producer's path, and a throw would keep the others from hearing.
 */
export type AdmitListener = () => void;

/**
 * Called synchronously for each admitted event, with its seq and stored frame, on the producer's
 * path: an observer only queues (the durable store, the OTLP exporter) and must not throw.
 * `event` must not be modified.
 */
export type AppendObserver = (seq: number, event: TelemetryEvent, frame: Buffer) => void;

/** A run of consecutive frames, joined: what read() returns. */
export interface FrameRun {
  /** Seq of the first frame in `bytes`. */
  readonly from: number;
  /** Seq after the last frame in `bytes`. */
  readonly next: number;
  readonly bytes: Buffer;
  /** Runs read from disk into the run pool: holders of `bytes` retain and release it (src/stream/run-pool.ts). */
  readonly lease?: RunLease;
}

const EMPTY = Buffer.alloc(0);

/** read() joins at most this many bytes (a single larger frame is returned whole). */
export const MAX_RUN_BYTES = 64 * 1024;

// The ring starts small and doubles up to maxEvents, so a generous --ring-events does not cost
// its full slot array up front.
const INITIAL_CAPACITY = 1024;

/**
 * Runs read from the store kept for other readers at the same cursor (readers replaying history
 * together mostly read the same runs in turn); dropped by dropArchiveCache() when the last
 * catch-up reader leaves. They live in the run pool (src/stream/run-pool.ts), which the agent
 * keeps once a burst used it: at most this many runs of MAX_RUN_BYTES (8 MiB) and a quarter more
 * for runs still being written. Enough for the readers replaying at once to stay within reach of
 * each other as they drift apart (docs/events.md "Catching up from disk").
 */
export const ARCHIVE_RUNS_CACHED = 128;

/** A pool slot holds a run read from disk: MAX_RUN_BYTES of stored JSON and the frames' `id:`/`data:` lines around it. */
const RUN_SLOT_BYTES = MAX_RUN_BYTES + 16 * 1024;

/** Size of the slabs frames are written into. */
export const SLAB_BYTES = 128 * 1024;
/** A frame larger than this gets memory of its own (a slab never wastes more at its end). */
const OWN_MEMORY_ABOVE = SLAB_BYTES / 8;

export class EventLog {
  readonly maxEvents: number;
  readonly maxBytes: number;

  /** Circular buffer of frames; `head` is the slot of the oldest retained event. */
  private ring: Array<Buffer | undefined>;
  /** Per slot, what filters and the store need of the event. */
  private metas: Array<EventMeta | undefined>;
  private readonly archive: LogArchive | undefined;
  private head = 0;
  private count = 0;
  private bytes = 0;
  private lastSeq = 0;
  private evicted = 0;
  // Replaced (never mutated) on subscribe/unsubscribe, so dispatch iterates a stable snapshot
  // without copying on the hot path.
  private listeners: readonly AdmitListener[] = [];
  private observers: readonly AppendObserver[] = [];
  /** The notification is queued (end of tick, or the pacing timer). */
  private notifyQueued = false;
  private readonly paceMs: number;
  private readonly loadPaceMs: number;
  /** Some tab is loading (setLoading): loadPaceMs applies instead of paceMs. */
  private loading = false;
  /** performance.now() of the last notification (pacing). */
  private lastNotifyAt = -Infinity;
  /** The last read(): its arguments and result. */
  private lastRun: { from: number; to: number; run: FrameRun } | undefined;
  /** Runs read from the store, by their first seq asked for (ARCHIVE_RUNS_CACHED). */
  private archiveRuns = new Map<number, FrameRun>();
  // The cached runs, and as many again as a quarter of them being written after they left the cache.
  private readonly runPool = new RunPool(ARCHIVE_RUNS_CACHED + ARCHIVE_RUNS_CACHED / 4, RUN_SLOT_BYTES);
  /** The slab frames are being written into, and the bytes of it already used. */
  private slab: Buffer | undefined;
  private slabUsed = 0;

  constructor(options: EventLogOptions) {
    if (!Number.isSafeInteger(options.maxEvents) || options.maxEvents < 1) {
      throw new RangeError(`maxEvents must be a positive integer, got ${options.maxEvents}`);
    }
    if (!Number.isSafeInteger(options.maxBytes) || options.maxBytes < 1) {
      throw new RangeError(`maxBytes must be a positive integer, got ${options.maxBytes}`);
    }
    this.maxEvents = options.maxEvents;
    this.maxBytes = options.maxBytes;
    this.ring = new Array<Buffer | undefined>(Math.min(options.maxEvents, INITIAL_CAPACITY));
    this.metas = new Array<EventMeta | undefined>(this.ring.length);
    this.archive = options.archive;
    this.lastSeq = options.archive?.resumeAfterSeq ?? 0;
    this.paceMs = options.paceMs ?? 0;
    this.loadPaceMs = options.loadPaceMs ?? 0;
  }

  /** Whether some tab is loading now (EventLogOptions.loadPaceMs). */
  setLoading(loading: boolean): void {
    this.loading = loading;
  }

  /** Seq of the newest event; 0 before the first append. */
  get latestSeq(): number {
    return this.lastSeq;
  }

  /**
   * Seq of the oldest retained event, in the ring or behind it in the store; `latestSeq + 1` when
   * nothing is retained.
   */
  get oldestSeq(): number {
    const inRing = this.ringOldestSeq;
    const archived = this.archive?.oldestRetainedSeq();
    return archived !== undefined && archived < inRing ? archived : inRing;
  }

  /** Seq of the oldest event in the ring (RAM). */
  get ringOldestSeq(): number {
    return this.lastSeq - this.count + 1;
  }

  /** Number of retained events. */
  get size(): number {
    return this.count;
  }

  /** Frame bytes of the retained events. */
  get byteSize(): number {
    return this.bytes;
  }

  /** Events dropped by retention since start. */
  get evictedCount(): number {
    return this.evicted;
  }

  get listenerCount(): number {
    return this.listeners.length;
  }

  /** Admit an event: assign its seq, serialize the envelope once, retain, queue the notification. */
  append(event: TelemetryEvent): number {
    const seq = this.lastSeq + 1;
    this.archive?.reserveThrough(seq);
    const frame = this.store(envelopeFrameText(seq, event));
    const context = contextOf(event);
    const meta: EventMeta = {
      ts: event.ts,
      type: event.type,
      targetId: context?.target_id ?? event.source.metadata?.target_id,
      navSeq: context?.nav_seq,
      // The context read once for every field (contextOf is a switch over the event types).
      causedBy: causeOf(event, context),
      stepId: context?.step_id,
    };

    if (this.count === this.ring.length) {
      if (this.ring.length < this.maxEvents) this.grow();
      else this.evictOldest();
    }
    const slot = (this.head + this.count) % this.ring.length;
    this.ring[slot] = frame;
    this.metas[slot] = meta;
    this.count++;
    this.bytes += frame.length;
    this.lastSeq = seq;
    while (this.bytes > this.maxBytes && this.count > 1) this.evictOldest();

    this.archive?.append(seq, meta, envelopeBytesOf(frame));
    const observers = this.observers;
    for (let i = 0; i < observers.length; i++) observers[i]!(seq, event, frame);

    if (!this.notifyQueued && this.listeners.length > 0) this.queueNotify();
    return seq;
  }

  /** Observe every admitted event as it is appended; returns the function that stops it. */
  observeAppends(observer: AppendObserver): () => void {
    this.observers = [...this.observers, observer];
    return () => {
      this.observers = this.observers.filter((o) => o !== observer);
    };
  }

  /** The frame of `seq` in the ring, or undefined when it is not there. */
  frame(seq: number): Buffer | undefined {
    const offset = seq - this.ringOldestSeq;
    if (!Number.isInteger(offset) || offset < 0 || offset >= this.count) return undefined;
    return this.ring[(this.head + offset) % this.ring.length];
  }

  /** What the ring keeps of `seq` besides its frame, or undefined when it is not there. */
  meta(seq: number): EventMeta | undefined {
    const offset = seq - this.ringOldestSeq;
    if (!Number.isInteger(offset) || offset < 0 || offset >= this.count) return undefined;
    return this.metas[(this.head + offset) % this.ring.length];
  }

  /**
   * The frames from `from` through `to` that match `filter`, joined (at most MAX_RUN_BYTES, or one
   * larger frame), and the seq to continue from; from the store for seqs the ring no longer
   * holds. Undefined when `from` is retained nowhere.
   */
  readMatching(from: number, to: number, filter: EventFilter): MatchingRun | undefined {
    const ringOldest = this.ringOldestSeq;
    if (from < ringOldest) {
      const archived = this.archive?.oldestRetainedSeq();
      if (this.archive === undefined || archived === undefined || from < archived) return undefined;
      const { bytes, next } = this.archive.readFrames(from, Math.min(to, ringOldest - 1), MAX_RUN_BYTES, filter);
      return bytes !== undefined ? { next, ...this.runOf(bytes) } : { next, bytes: undefined };
    }
    const frames: Buffer[] = [];
    let size = 0;
    let seq = from;
    for (; seq <= to; seq++) {
      const meta = this.meta(seq);
      if (meta === undefined) break;
      if (!matches(filter, meta)) continue;
      const frame = this.frame(seq)!;
      if (frames.length > 0 && size + frame.length > MAX_RUN_BYTES) break;
      frames.push(frame);
      size += frame.length;
    }
    return { next: seq, bytes: frames.length === 0 ? undefined : frames.length === 1 ? frames[0] : Buffer.concat(frames, size) };
  }

  /**
   * The frames from `from` through `to` (inclusive, clamped to what is retained) that a reader
   * without a filter gets, as one Buffer of at most MAX_RUN_BYTES (always at least the first
   * frame). A single frame is the stored Buffer itself, frames adjacent in a slab are a view of it,
   * others are copied into memory of their own. The opt-in categories' frames (OPT_IN_TYPES) end a
   * run: a run that starts at them is empty and passes over them. Undefined when `from` is not
   * retained. The last run is cached: every subscriber at the same cursor gets the same Buffer.
   */
  read(from: number, to: number): FrameRun | undefined {
    const cached = this.lastRun;
    if (cached !== undefined && cached.from === from && cached.to === to) return cached.run;
    const first = this.frame(from);
    if (first === undefined) return from < this.ringOldestSeq ? this.readArchived(from, to) : undefined;
    if (this.isOptIn(from)) {
      let next = from + 1;
      while (next <= to && this.frame(next) !== undefined && this.isOptIn(next)) next++;
      const run: FrameRun = { from, next, bytes: EMPTY };
      this.lastRun = { from, to, run };
      return run;
    }
    // Measure the run first: the frames of one tick are adjacent in a slab, and need no copy.
    let size = first.length;
    let adjacent = true;
    let previous = first;
    let next = from + 1;
    for (; next <= to; next++) {
      const frame = this.frame(next);
      if (frame === undefined || size + frame.length > MAX_RUN_BYTES || this.isOptIn(next)) break;
      if (frame.buffer !== previous.buffer || frame.byteOffset !== previous.byteOffset + previous.length) adjacent = false;
      size += frame.length;
      previous = frame;
    }
    let bytes = first;
    if (next - from > 1 && adjacent) {
      bytes = Buffer.from(first.buffer, first.byteOffset, size);
    } else if (next - from > 1) {
      // Memory of its own, not Node's shared pool: the run lives for one write.
      bytes = Buffer.allocUnsafeSlow(size);
      let offset = 0;
      for (let seq = from; seq < next; seq++) offset += this.frame(seq)!.copy(bytes, offset);
    }
    const run: FrameRun = { from, next, bytes };
    this.lastRun = { from, to, run };
    return run;
  }

  /** An event of an opt-in category (a reader without a filter does not get it). */
  private isOptIn(seq: number): boolean {
    return OPT_IN_TYPES.has(this.meta(seq)!.type);
  }

  /**
   * Frames the ring no longer holds, from the store. A run holds every stored event from `from`
   * to its `next`, so it serves any later reader at `from` that reads at least that far.
   */
  private readArchived(from: number, to: number): FrameRun | undefined {
    const archived = this.archive?.oldestRetainedSeq();
    if (this.archive === undefined || archived === undefined || from < archived) return undefined;
    const upTo = Math.min(to, this.ringOldestSeq - 1);
    const cached = this.archiveRuns.get(from);
    if (cached !== undefined && cached.next - 1 <= upTo) return cached;
    const { bytes, first, next } = this.archive.readFrames(from, upTo, MAX_RUN_BYTES);
    // The oldest run leaves before the new one takes a slot, so a full cache does not run the pool dry.
    if (this.archiveRuns.size >= ARCHIVE_RUNS_CACHED) {
      const oldest = this.archiveRuns.keys().next().value!;
      this.archiveRuns.get(oldest)!.lease?.release();
      this.archiveRuns.delete(oldest);
    }
    // A hole in the stored seqs (a crash's lost tail, skipped reservations) is passed over.
    const run: FrameRun = bytes === undefined || first === undefined ? { from, next, bytes: EMPTY } : { from: first, next, ...this.runOf(bytes) };
    this.archiveRuns.get(from)?.lease?.release();
    this.archiveRuns.set(from, run);
    return run;
  }

  /** Rows from disk as frames, in a pool slot (src/stream/run-pool.ts); in memory of their own when no slot is free or they do not fit. */
  /** A run read from the store, copied into a slot of the run pool (or, larger than a slot, as it came). */
  private runOf(frames: Uint8Array): { bytes: Buffer; lease?: RunLease } {
    const slot = frames.length <= this.runPool.slotBytes ? this.runPool.acquire() : undefined;
    if (slot === undefined) return { bytes: Buffer.from(frames.buffer, frames.byteOffset, frames.length) };
    slot.bytes.set(frames);
    return { bytes: slot.bytes.subarray(0, frames.length), lease: slot.lease };
  }

  /** Forget the runs read from the store (no reader is catching up any more); their slots free once written. */
  dropArchiveCache(): void {
    for (const run of this.archiveRuns.values()) run.lease?.release();
    this.archiveRuns.clear();
  }

  /** Hear at the end of each tick that admitted events; returns the unsubscribe function (idempotent). */
  onAdmitted(listener: AdmitListener): () => void {
    this.listeners = [...this.listeners, listener];
    let subscribed = true;
    return () => {
      if (!subscribed) return;
      subscribed = false;
      const index = this.listeners.indexOf(listener);
      this.listeners = this.listeners.filter((_, i) => i !== index);
    };
  }

  private queueNotify(): void {
    this.notifyQueued = true;
    const pace = this.loading && this.loadPaceMs > 0 ? this.loadPaceMs : this.paceMs;
    if (pace > 0 && performance.now() - this.lastNotifyAt < BUSY_WINDOW_MS) setTimeout(this.notify, pace);
    else process.nextTick(this.notify);
  }

  private readonly notify = (): void => {
    this.notifyQueued = false;
    if (this.paceMs > 0 || this.loadPaceMs > 0) this.lastNotifyAt = performance.now();
    const listeners = this.listeners;
    for (let i = 0; i < listeners.length; i++) listeners[i]!();
  };

  /** Write a frame's text into the current slab (a new one when it does not fit) and return its bytes. */
  private store(text: string): Buffer {
    // A UTF-16 unit is at most 3 UTF-8 bytes: a small frame that surely fits is written without
    // measuring it first.
    const bound = text.length * 3;
    let slab = this.slab;
    if (slab === undefined || bound > slab.length - this.slabUsed || bound > OWN_MEMORY_ABOVE) {
      const length = Buffer.byteLength(text, 'utf8');
      if (length > OWN_MEMORY_ABOVE) {
        const own = Buffer.allocUnsafeSlow(length);
        own.write(text, 0, 'utf8');
        return own;
      }
      if (slab === undefined || length > slab.length - this.slabUsed) {
        slab = this.slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
        this.slabUsed = 0;
      }
    }
    const start = this.slabUsed;
    const written = slab.write(text, start, 'utf8');
    this.slabUsed = start + written;
    return slab.subarray(start, start + written);
  }

  private evictOldest(): void {
    const frame = this.ring[this.head]!;
    this.ring[this.head] = undefined;
    this.metas[this.head] = undefined;
    this.head = (this.head + 1) % this.ring.length;
    this.count--;
    this.bytes -= frame.length;
    this.evicted++;
  }

  private grow(): void {
    const capacity = Math.min(this.maxEvents, this.ring.length * 2);
    const next = new Array<Buffer | undefined>(capacity);
    const metas = new Array<EventMeta | undefined>(capacity);
    for (let i = 0; i < this.count; i++) {
      next[i] = this.ring[(this.head + i) % this.ring.length];
      metas[i] = this.metas[(this.head + i) % this.ring.length];
    }
    this.ring = next;
    this.metas = metas;
    this.head = 0;
  }
}
