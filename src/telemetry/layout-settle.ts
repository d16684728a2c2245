// page_layout_settled (docs/events.md#computed-events) as a pure state machine over an injected scheduler: armed 1 s
// after the tab's page_load, re-armed to 1 s by every layout shift after load, fires once per
// navigation. Every input names the navigation (the tab's nav_seq) it belongs to; inputs and
// timers of another navigation are ignored, so a timer that fires after a reset does nothing.

/** Timers, injected so tests can drive them (fake timers or a hand-run queue). */
export interface Scheduler {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Node's timers, unref'd: a pending settle never keeps the process alive. */
export const systemScheduler: Scheduler = {
  setTimeout(callback, ms) {
    const timer = setTimeout(callback, ms);
    (timer as { unref?: () => void }).unref?.();
    return timer;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

export const LAYOUT_SETTLE_MS = 1000;

export class LayoutSettleMachine {
  private navigation: number;
  private loaded = false;
  private fired = false;
  private timer: unknown;
  /** Identifies the latest arming; an older timer that still fires is stale. */
  private arming = 0;

  constructor(
    private readonly onSettled: (navigation: number) => void,
    private readonly scheduler: Scheduler = systemScheduler,
    navigation = 0,
  ) {
    this.navigation = navigation;
  }

  /** A new top-level navigation: forget everything of the previous one. */
  navigate(navigation: number): void {
    this.cancel();
    this.navigation = navigation;
    this.loaded = false;
    this.fired = false;
  }

  load(navigation: number): void {
    if (navigation !== this.navigation || this.fired) return;
    this.loaded = true;
    this.arm();
  }

  /** A layout shift of the tab; before load it changes nothing. */
  layoutShift(navigation: number): void {
    if (navigation !== this.navigation || !this.loaded || this.fired) return;
    this.arm();
  }

  dispose(): void {
    this.cancel();
    this.fired = true;
  }

  private arm(): void {
    this.cancel();
    const arming = ++this.arming;
    const navigation = this.navigation;
    this.timer = this.scheduler.setTimeout(() => this.expire(arming, navigation), LAYOUT_SETTLE_MS);
  }

  private expire(arming: number, navigation: number): void {
    if (arming !== this.arming || navigation !== this.navigation || this.fired) return;
    this.timer = undefined;
    this.fired = true;
    this.onSettled(navigation);
  }

  private cancel(): void {
    this.arming++;
    if (this.timer !== undefined) this.scheduler.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
