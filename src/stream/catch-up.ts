// Catch-up readers (docs/events.md "Catching up from disk"): streams whose cursor is behind the RAM
// ring read history from the durable store. A disk read is synchronous (SQLite), so a reader that
// read until its socket pushed back would hold the event loop for as long as the kernel kept
// accepting bytes: with hundreds of them, the live path, /healthz and the request timeouts all
// waited behind the replay.
//
// The scheduler runs catch-up work off the caller's path, in turns (one per event-loop turn, via
// setImmediate, so I/O, the live fan-out and other requests run between turns), each spending at
// most a fixed time budget, shared round-robin by the readers that are ready (not waiting for
// their socket to drain): one read of at most one run (MAX_RUN_BYTES) per reader per round. At
// most `maxActive` readers replay at once; later ones wait in a queue, in order, and are admitted
// as earlier ones catch up or leave; past `maxQueued` waiting, a new replay is refused
// (canAdmit). When no reader is active any more, `onIdle` runs (the log drops its read cache).

/** A reader that reads history from disk, one step at a time. */
export interface CatchUpReader {
  /**
   * Read and write one run of history. Afterwards the reader calls request() again when it is
   * still behind and can write more, release() when it caught up or closed, and nothing while it
   * waits for its socket to drain.
   */
  catchUpStep(): void;
}

export interface CatchUpOptions {
  /** Readers replaying from disk at once. */
  maxActive: number;
  /** Readers waiting for a replay slot; more are refused. */
  maxQueued: number;
  /** Time one turn may spend on catch-up reads. */
  turnBudgetMs: number;
  /** Called when the last active reader is released. */
  onIdle?: () => void;
}

export const DEFAULT_CATCH_UP: Omit<CatchUpOptions, 'onIdle'> = {
  maxActive: 32,
  maxQueued: 2000,
  turnBudgetMs: 4,
};

/** A replay past the queue's cap: answered 503 before the stream opens. */
export class CatchUpFullError extends Error {
  override name = 'CatchUpFullError';
  readonly code = 'browser_unavailable';
  readonly status = 503;

  constructor(active: number, queued: number) {
    super(`too many streams are replaying history from disk (${active} replaying, ${queued} waiting); retry later`);
  }
}

const now = (): number => globalThis.performance.now();

export class CatchUpScheduler {
  private readonly active = new Set<CatchUpReader>();
  /** Waiting for a slot, oldest first. */
  private queued: CatchUpReader[] = [];
  private readonly queuedSet = new Set<CatchUpReader>();
  /** Active readers that want a step, in round-robin order. */
  private ready: CatchUpReader[] = [];
  private readonly readySet = new Set<CatchUpReader>();
  private turn: NodeJS.Immediate | undefined;
  private steps = 0;

  constructor(private readonly options: CatchUpOptions) {}

  get activeCount(): number {
    return this.active.size;
  }

  get queuedCount(): number {
    return this.queued.length;
  }

  /** Reads performed so far (for tests and metrics). */
  get stepCount(): number {
    return this.steps;
  }

  /** Whether one more replay may start (immediately or queued). */
  canAdmit(): boolean {
    return this.active.size < this.options.maxActive || this.queued.length < this.options.maxQueued;
  }

  /** Throws CatchUpFullError when no more replay may start. */
  checkAdmit(): void {
    if (!this.canAdmit()) throw new CatchUpFullError(this.active.size, this.queued.length);
  }

  /** The reader is behind and can write: give it a step in a coming turn (a slot first, or a place in the queue). */
  request(reader: CatchUpReader): void {
    if (this.active.has(reader)) {
      if (!this.readySet.has(reader)) {
        this.readySet.add(reader);
        this.ready.push(reader);
      }
      this.schedule();
      return;
    }
    if (this.queuedSet.has(reader)) return;
    if (this.active.size < this.options.maxActive) {
      this.active.add(reader);
      this.request(reader);
    } else {
      this.queued.push(reader);
      this.queuedSet.add(reader);
    }
  }

  /** The reader caught up, or left: its slot goes to the oldest waiting reader. */
  release(reader: CatchUpReader): void {
    if (this.readySet.delete(reader)) this.ready = this.ready.filter((r) => r !== reader);
    if (!this.active.delete(reader)) {
      if (this.queuedSet.delete(reader)) this.queued = this.queued.filter((r) => r !== reader);
      return;
    }
    const next = this.queued.shift();
    if (next !== undefined) {
      this.queuedSet.delete(next);
      this.request(next);
    } else if (this.active.size === 0) this.options.onIdle?.();
  }

  /** Stop the pending turn (the session ends). */
  close(): void {
    if (this.turn !== undefined) clearImmediate(this.turn);
    this.turn = undefined;
  }

  private schedule(): void {
    if (this.turn === undefined && this.ready.length > 0) this.turn = setImmediate(this.runTurn);
  }

  private readonly runTurn = (): void => {
    this.turn = undefined;
    const deadline = now() + this.options.turnBudgetMs;
    // One round at a time: every ready reader gets its step before any gets a second one.
    while (this.ready.length > 0 && now() < deadline) {
      const round = this.ready;
      this.ready = [];
      let i = 0;
      for (; i < round.length && now() < deadline; i++) {
        const reader = round[i]!;
        this.readySet.delete(reader);
        this.steps++;
        reader.catchUpStep();
      }
      // Those the budget did not reach go first in the next turn.
      if (i < round.length) this.ready = [...round.slice(i), ...this.ready];
    }
    this.schedule();
  };
}
