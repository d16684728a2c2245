// Event timestamps (docs/events.md#common-fields). Runtime events carry epoch milliseconds; Page and Network events
// carry seconds on the browser's monotonic clock. On Linux that clock is CLOCK_MONOTONIC, the
// same one behind Node's process.hrtime, so `epoch - monotonic` measured here converts them
// (agrees within ~1 ms, docs/chromium.md "Network"). Network's `wallTime`/`timestamp` pairs refine
// the offset when they arrive, which also covers a browser whose monotonic clock differs.

/** A converted timestamp further than this from the agent's own clock is not trusted. */
const MAX_SKEW_US = 60_000_000;

export class BrowserClock {
  /** Unix µs minus monotonic µs. */
  private offsetUs: number;
  /** performance.timeOrigin in µs (the getter is not free, and the value never changes). */
  private readonly originUs = performance.timeOrigin * 1000;

  constructor() {
    this.offsetUs = BrowserClock.localOffsetUs();
  }

  /** Unix microseconds now. */
  nowUs(): number {
    return Math.round(this.originUs + performance.now() * 1000);
  }

  /** Epoch milliseconds (Runtime events) → integer Unix microseconds. */
  fromEpochMs(ms: number): number {
    return Math.round(ms * 1000);
  }

  /** Monotonic seconds (Page/Network events) → integer Unix microseconds. */
  fromMonotonicSeconds(seconds: number): number {
    const us = Math.round(seconds * 1_000_000 + this.offsetUs);
    const now = this.nowUs();
    return Math.abs(us - now) > MAX_SKEW_US ? now : us;
  }

  /** Refine the offset from a pair that names the same instant on both clocks. */
  calibrate(wallTimeSeconds: number, monotonicSeconds: number): void {
    this.offsetUs = Math.round((wallTimeSeconds - monotonicSeconds) * 1_000_000);
  }

  private static localOffsetUs(): number {
    const monotonicUs = Number(process.hrtime.bigint() / 1000n);
    const epochUs = Math.round(performance.timeOrigin * 1000 + performance.now() * 1000);
    return epochUs - monotonicUs;
  }
}
