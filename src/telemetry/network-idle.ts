// network_idle (docs/events.md#computed-events) as a pure state machine over an injected timer: one per tab, fed with
// the starts and ends of the requests that count (the tab's own, its out-of-process iframes' and
// its dedicated workers'; EventSource and WebSocket are left out by the caller).

/** The timer functions the machine runs on (setTimeout/clearTimeout by default). */
export interface IdleTimers {
  set(callback: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const NETWORK_QUIET_MS = 500;

/** setTimeout/clearTimeout, unref'd; also the body schedule's (body-schedule.ts). */
export const SYSTEM_TIMERS: IdleTimers = {
  set(callback, ms) {
    const handle = setTimeout(callback, ms);
    // A pending quiet timer must not keep the process alive.
    handle.unref();
    return handle;
  },
  clear(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

export interface NetworkIdleOptions {
  /** Called once per quiet period with the nav_seq the period belongs to. */
  onIdle(navSeq: number): void;
  /** The tab's nav_seq when the machine is created. */
  navSeq?: number;
  quietMs?: number;
  timers?: IdleTimers;
}

/**
 * In flight = requests started and not yet ended. When that reaches zero a quiet timer of 500 ms
 * is armed; any new request cancels it; on expiry `onIdle` fires. The timer is armed only when
 * the count drops to zero (or on a navigation with nothing in flight), so it fires once per quiet
 * period and again after each later burst. Every timer belongs to the nav_seq it was armed in
 * and is ignored if it fires after a navigation.
 */
export class NetworkIdleMachine {
  private readonly inFlight = new Set<string>();
  private readonly quietMs: number;
  private readonly timers: IdleTimers;
  private readonly onIdle: (navSeq: number) => void;
  private epoch: number;
  private timer: unknown;
  private armed = false;
  /** Identifies the latest arming: a timer that outlived its arming is ignored. */
  private armToken = 0;
  private disposed = false;

  constructor(options: NetworkIdleOptions) {
    // eslint-disable-next-line @typescript-eslint/unbound-method -- a callback option, called as a plain function
    this.onIdle = options.onIdle;
    this.epoch = options.navSeq ?? 0;
    this.quietMs = options.quietMs ?? NETWORK_QUIET_MS;
    this.timers = options.timers ?? SYSTEM_TIMERS;
  }

  /** The nav_seq the machine is counting for. */
  get navSeq(): number {
    return this.epoch;
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  get isArmed(): boolean {
    return this.armed;
  }

  /** A request started (a redirect hop of a request already in flight changes nothing). */
  requestStarted(requestId: string): void {
    if (this.disposed || this.inFlight.has(requestId)) return;
    this.inFlight.add(requestId);
    this.disarm();
  }

  /** A request finished or failed. Unknown ids (not counted, or dropped by a navigation) are ignored. */
  requestEnded(requestId: string): void {
    if (this.disposed || !this.inFlight.delete(requestId)) return;
    if (this.inFlight.size === 0) this.arm();
  }

  /**
   * The tab's main frame committed a new document: a new quiet period begins for `navSeq`.
   * Requests the previous documents left in flight stop counting (Chromium never reports the end
   * of the requests an old document leaves behind); the new document's own request, already in
   * flight while its HTML arrives, keeps counting, so idle cannot fire before the HTML is in.
   */
  reset(navSeq: number, documentRequestId?: string): void {
    if (this.disposed) return;
    this.disarm();
    this.epoch = navSeq;
    const keepDocument = documentRequestId !== undefined && this.inFlight.has(documentRequestId);
    this.inFlight.clear();
    if (keepDocument) this.inFlight.add(documentRequestId);
    else this.arm();
  }

  dispose(): void {
    this.disarm();
    this.inFlight.clear();
    this.disposed = true;
  }

  private arm(): void {
    this.disarm();
    const epoch = this.epoch;
    const token = ++this.armToken;
    this.armed = true;
    this.timer = this.timers.set(() => this.expire(token, epoch), this.quietMs);
  }

  private disarm(): void {
    if (!this.armed) return;
    this.armed = false;
    this.timers.clear(this.timer);
    this.timer = undefined;
  }

  private expire(token: number, epoch: number): void {
    // A timer from before a navigation (or one a clear did not stop) dies with its nav_seq.
    if (this.disposed || !this.armed || token !== this.armToken || epoch !== this.epoch || this.inFlight.size > 0) return;
    this.armed = false;
    this.timer = undefined;
    this.onIdle(epoch);
  }
}
