// The OTLP export's bounded queue (docs/export.md "Queue, retry, drops"): the events waiting for
// the receiver, oldest first, bounded by a count and by their frames' bytes. The event log's
// observer pushes here on the producer's path, so push() allocates nothing per event: parallel
// arrays, and a head index instead of shifting them.
//
// When the queue is full the newest event is refused (the caller counts the drop): the events
// already queued, and the batch in flight, are never given up for newer ones, so a receiver that
// comes back gets everything up to the moment the bound was reached.

import type { TelemetryEvent } from '../../injected/schema.ts';

/** Compact the arrays once this many slots before the head are spent (and they are half of it). */
const COMPACT_AFTER = 1024;

export class OtlpQueue {
  private seqs: number[] = [];
  private exportSeqs: number[] = [];
  private events: Array<TelemetryEvent | undefined> = [];
  private sizes: number[] = [];
  private head = 0;
  private bytes = 0;

  constructor(
    readonly maxEvents: number,
    readonly maxBytes: number,
  ) {}

  /** Events queued. */
  get length(): number {
    return this.seqs.length - this.head;
  }

  /** Frame bytes of the queued events. */
  get byteSize(): number {
    return this.bytes;
  }

  /**
   * Queue an event unless the queue is full; false when it was refused. An event larger than
   * maxBytes is queued when the queue is empty: an event of any size can be exported.
   */
  push(seq: number, exportSeq: number, event: TelemetryEvent, size: number): boolean {
    const length = this.seqs.length - this.head;
    if (length >= this.maxEvents || (length > 0 && this.bytes + size > this.maxBytes)) return false;
    this.seqs.push(seq);
    this.exportSeqs.push(exportSeq);
    this.events.push(event);
    this.sizes.push(size);
    this.bytes += size;
    return true;
  }

  /** Event log seq of the i-th queued event (0 = the oldest). */
  seqAt(i: number): number {
    return this.seqs[this.head + i]!;
  }

  exportSeqAt(i: number): number {
    return this.exportSeqs[this.head + i]!;
  }

  eventAt(i: number): TelemetryEvent {
    return this.events[this.head + i]!;
  }

  /** Remove the n oldest events (exported, or given up). */
  drop(n: number): void {
    const end = this.head + Math.min(n, this.length);
    for (let i = this.head; i < end; i++) {
      this.bytes -= this.sizes[i]!;
      // Let the event be collected now, not at the next compaction.
      this.events[i] = undefined;
    }
    this.head = end;
    if (this.head === this.seqs.length) {
      this.seqs.length = this.exportSeqs.length = this.events.length = this.sizes.length = 0;
      this.head = 0;
    } else if (this.head >= COMPACT_AFTER && this.head * 2 >= this.seqs.length) {
      this.seqs.splice(0, this.head);
      this.exportSeqs.splice(0, this.head);
      this.events.splice(0, this.head);
      this.sizes.splice(0, this.head);
      this.head = 0;
    }
  }
}
