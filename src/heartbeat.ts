// One timer for the agent's periodic work (docs/performance.md "Idle"). An idle agent's cost is its
// wake-ups: the browser's health probe (every second), the kernel log's poll (every 5 s) and the
// hang probe of active tabs (every second) each on a timer of its own wake the process at their
// own moments. On one shared beat they run in the same wake-up. The beat runs only while a job
// is subscribed, and never keeps the process alive. The beats belong to one agent (Heartbeats):
// two agents in one process never share one, and a job that throws is reported, not a reason to
// skip the other jobs of its beat.

interface Subscription {
  every: number;
  /** The beat count it joined at: it runs `every` beats later, then every `every` beats. */
  joined: number;
  job: () => void;
}

export class Heartbeat {
  private readonly subscriptions = new Set<Subscription>();
  private timer: NodeJS.Timeout | undefined;
  private beats = 0;

  constructor(
    readonly periodMs: number,
    /** Told of a job that threw; the beat goes on with the next job. */
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Runs `job` on every `every`th beat from now until the returned function is called. */
  every(every: number, job: () => void): () => void {
    const subscription: Subscription = { every: Math.max(1, Math.floor(every)), joined: this.beats, job };
    this.subscriptions.add(subscription);
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.beat(), this.periodMs);
      this.timer.unref();
    }
    return () => {
      this.subscriptions.delete(subscription);
      if (this.subscriptions.size === 0 && this.timer !== undefined) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
  }

  get running(): boolean {
    return this.timer !== undefined;
  }

  private beat(): void {
    this.beats++;
    // A job may unsubscribe (itself or another) while the beat runs: iterate over a copy.
    for (const subscription of [...this.subscriptions]) {
      if (!this.subscriptions.has(subscription) || (this.beats - subscription.joined) % subscription.every !== 0) continue;
      try {
        subscription.job();
      } catch (err) {
        this.onError(err);
      }
    }
  }
}

/** One agent's beats, one per period: its parts that ask for the same period share one timer. */
export class Heartbeats {
  private readonly beats = new Map<number, Heartbeat>();

  /** `onError`: told of a job that threw (the agent logs it). */
  constructor(private readonly onError: (error: unknown) => void) {}

  /** The beat of `periodMs`. */
  of(periodMs: number): Heartbeat {
    let beat = this.beats.get(periodMs);
    if (!beat) {
      beat = new Heartbeat(periodMs, this.onError);
      this.beats.set(periodMs, beat);
    }
    return beat;
  }
}
