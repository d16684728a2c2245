// Reconnect attempts after the CDP connection is lost (docs/events.md#telemetry-config-lifecycle-and-monitor-events): capped exponential backoff
// (250 ms doubling to 5 s); after 10 failures in a row the exhaustion is reported once, and
// attempts go on at the cap, so a later success is still reported. Pure timing logic: the attempt
// itself is a function given by the caller.

export const BACKOFF_INITIAL_MS = 250;
export const BACKOFF_MAX_MS = 5000;
export const ATTEMPTS_BEFORE_EXHAUSTED = 10;

export interface Backoff {
  initialMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: BACKOFF_INITIAL_MS, maxMs: BACKOFF_MAX_MS };

/** Delay before attempt `n` (1-based): 250, 500, 1000, 2000, 4000, 5000, 5000, ... */
export function backoffDelay(attempt: number, backoff: Backoff = DEFAULT_BACKOFF): number {
  return Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.max(0, attempt - 1));
}

export interface ReconnectorEvents {
  /** The attempt succeeded after `durationMs` since the loss. */
  reconnected(durationMs: number): void;
  /** `attempts` failed in a row (reported once per loss). */
  exhausted(attempts: number): void;
  /** One attempt failed (for logs). */
  attemptFailed?(attempt: number, error: Error): void;
}

export class Reconnector {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private attempt = 0;
  private lostAt = 0;
  private stopped = false;

  constructor(
    private readonly tryConnect: () => Promise<void>,
    private readonly events: ReconnectorEvents,
    private readonly now: () => number = () => performance.now(),
    private readonly backoff: Backoff = DEFAULT_BACKOFF,
  ) {}

  get isRunning(): boolean {
    return this.running;
  }

  /** Start attempting (no-op while already running). */
  start(): void {
    if (this.running || this.stopped) return;
    this.running = true;
    this.attempt = 0;
    this.lostAt = this.now();
    this.scheduleNext();
  }

  /** Stop for good (shutdown). */
  stop(): void {
    this.stopped = true;
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private scheduleNext(): void {
    const delay = backoffDelay(this.attempt + 1, this.backoff);
    this.timer = setTimeout(() => void this.runAttempt(), delay);
  }

  private async runAttempt(): Promise<void> {
    this.timer = undefined;
    if (this.stopped) return;
    this.attempt++;
    try {
      await this.tryConnect();
    } catch (err) {
      if (this.stopped) return;
      this.events.attemptFailed?.(this.attempt, err as Error);
      if (this.attempt === ATTEMPTS_BEFORE_EXHAUSTED) this.events.exhausted(this.attempt);
      this.scheduleNext();
      return;
    }
    if (this.stopped) return;
    this.running = false;
    this.events.reconnected(Math.round(this.now() - this.lostAt));
  }
}
