// The event log (SPEC §5): the single producer of sequence numbers. Each admitted event is
// serialized once into its SSE frame; subscribers write those very bytes, so fan-out costs no
// serialization. Retention keeps the newest events within a count and a byte budget.
//
// Listeners hear once per tick that events were admitted (one process.nextTick for all of them,
// queued by the tick's first append: no timer, no wait). Subscribers that are caught up then all
// ask for the same run of frames (the events admitted in that tick); read() hands every one of them
// the same Buffer, so ten subscribers cost ten socket writes and no copy per event.
//
// Frames are written one after the other into slabs of memory of the log's own (never Node's
// shared Buffer pool, whose 8 KiB chunks are shared with every other small Buffer of the process:
// a retained frame would keep its whole chunk alive). A slab is never written twice; it is freed
// once the ring has evicted its last frame. The frames of one tick are usually adjacent in a slab,
// and their run is then a view of it, not a copy.

import type { TelemetryEvent } from '../../injected/schema.ts';
import { envelopeFrameText } from './sse-frame.ts';

export interface EventLogOptions {
  /** Keep at most this many events (≥ 1). */
  maxEvents: number;
  /** Keep at most this many frame bytes; the newest event is kept even when larger. */
  maxBytes: number;
}

/**
 * Called once at the end of a tick (process.nextTick) in which events were appended. Must not
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
}

/** read() joins at most this many bytes (a single larger frame is returned whole). */
export const MAX_RUN_BYTES = 64 * 1024;

// The ring starts small and doubles up to maxEvents, so a generous --ring-events does not cost
// its full slot array up front.
const INITIAL_CAPACITY = 1024;

/** Size of the slabs frames are written into. */
export const SLAB_BYTES = 128 * 1024;
/** A frame larger than this gets memory of its own (a slab never wastes more at its end). */
const OWN_MEMORY_ABOVE = SLAB_BYTES / 8;

export class EventLog {
  readonly maxEvents: number;
  readonly maxBytes: number;

  /** Circular buffer of frames; `head` is the slot of the oldest retained event. */
  private ring: Array<Buffer | undefined>;
  private head = 0;
  private count = 0;
  private bytes = 0;
  private lastSeq = 0;
  private evicted = 0;
  // Replaced (never mutated) on subscribe/unsubscribe, so dispatch iterates a stable snapshot
  // without copying on the hot path.
  private listeners: readonly AdmitListener[] = [];
  private observers: readonly AppendObserver[] = [];
  /** The end-of-tick notification is queued. */
  private notifyQueued = false;
  /** The last read(): its arguments and result. */
  private lastRun: { from: number; to: number; run: FrameRun } | undefined;
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
  }

  /** Seq of the newest event; 0 before the first append. */
  get latestSeq(): number {
    return this.lastSeq;
  }

  /** Seq of the oldest retained event; `latestSeq + 1` when nothing is retained. */
  get oldestSeq(): number {
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
    const frame = this.store(envelopeFrameText(seq, event));

    if (this.count === this.ring.length) {
      if (this.ring.length < this.maxEvents) this.grow();
      else this.evictOldest();
    }
    this.ring[(this.head + this.count) % this.ring.length] = frame;
    this.count++;
    this.bytes += frame.length;
    this.lastSeq = seq;
    while (this.bytes > this.maxBytes && this.count > 1) this.evictOldest();

    const observers = this.observers;
    for (let i = 0; i < observers.length; i++) observers[i]!(seq, event, frame);

    if (!this.notifyQueued && this.listeners.length > 0) {
      this.notifyQueued = true;
      process.nextTick(this.notify);
    }
    return seq;
  }

  /** Observe every admitted event as it is appended; returns the function that stops it. */
  observeAppends(observer: AppendObserver): () => void {
    this.observers = [...this.observers, observer];
    return () => {
      this.observers = this.observers.filter((o) => o !== observer);
    };
  }

  /** The stored frame of `seq`, or undefined when it is not retained. */
  frame(seq: number): Buffer | undefined {
    const offset = seq - this.oldestSeq;
    if (!Number.isInteger(offset) || offset < 0 || offset >= this.count) return undefined;
    return this.ring[(this.head + offset) % this.ring.length];
  }

  /**
   * The frames from `from` through `to` (inclusive, clamped to what is retained), as one Buffer of
   * at most MAX_RUN_BYTES (always at least the first frame). A single frame is the stored Buffer
   * itself, frames adjacent in a slab are a view of it, others are copied into memory of their own.
   * Undefined when `from` is not retained. The last run is cached: every subscriber at the same
   * cursor gets the same Buffer.
   */
  read(from: number, to: number): FrameRun | undefined {
    const cached = this.lastRun;
    if (cached !== undefined && cached.from === from && cached.to === to) return cached.run;
    const first = this.frame(from);
    if (first === undefined) return undefined;
    // Measure the run first: the frames of one tick are adjacent in a slab, and need no copy.
    let size = first.length;
    let adjacent = true;
    let previous = first;
    let next = from + 1;
    for (; next <= to; next++) {
      const frame = this.frame(next);
      if (frame === undefined || size + frame.length > MAX_RUN_BYTES) break;
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

  private readonly notify = (): void => {
    this.notifyQueued = false;
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
    this.head = (this.head + 1) % this.ring.length;
    this.count--;
    this.bytes -= frame.length;
    this.evicted++;
  }

  private grow(): void {
    const capacity = Math.min(this.maxEvents, this.ring.length * 2);
    const next = new Array<Buffer | undefined>(capacity);
    for (let i = 0; i < this.count; i++) next[i] = this.ring[(this.head + i) % this.ring.length];
    this.ring = next;
    this.head = 0;
  }
}
