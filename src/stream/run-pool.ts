// Memory for the runs catch-up readers read from disk (docs/events.md "Catching up from disk",
// docs/operations.md "Catch-up readers under load"). A burst of readers replaying history reads
// thousands of 64 KiB runs; each in memory of its own was garbage outside V8's heap once written,
// freed only by a full collection that an idle agent never triggers, and then left in malloc's
// heap as holes it did not give back: the agent rested 85 MB higher after the burst. The runs are
// instead written into slots of one buffer, reserved once and reused: the memory a burst uses is
// at most the pool, whatever the number of readers, and it is the same memory for the next burst.
//
// A slot is held by the log's cache of runs and by every socket write of it not yet handed to
// the kernel (a write's callback releases it); it is free again when nothing holds it.

/** A run's claim on its slot: retain() per holder, release() once per retain (and once for the pool's own). */
export class RunLease {
  private holds = 1;

  constructor(
    private readonly pool: RunPool,
    readonly slot: number,
  ) {}

  retain(): void {
    this.holds++;
  }

  /** Idempotent past zero: a late second release of the last hold is ignored. */
  release = (): void => {
    if (this.holds === 0) return;
    if (--this.holds === 0) this.pool.free(this.slot);
  };
}

export class RunPool {
  private memory: Buffer | undefined;
  private readonly freeSlots: number[] = [];
  private used = 0;

  constructor(
    readonly slots: number,
    readonly slotBytes: number,
  ) {}

  /** Slots in use (for tests). */
  get inUse(): number {
    return this.used - this.freeSlots.length;
  }

  /** A free slot's memory and its lease, or undefined when every slot is held. */
  acquire(): { bytes: Buffer; lease: RunLease } | undefined {
    let slot = this.freeSlots.pop();
    if (slot === undefined) {
      if (this.used === this.slots) return undefined;
      slot = this.used++;
    }
    // One reservation for every slot, made on first use: pages are resident only once written.
    this.memory ??= Buffer.allocUnsafeSlow(this.slots * this.slotBytes);
    return { bytes: this.memory.subarray(slot * this.slotBytes, (slot + 1) * this.slotBytes), lease: new RunLease(this, slot) };
  }

  free(slot: number): void {
    this.freeSlots.push(slot);
  }
}
