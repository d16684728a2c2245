// When response bodies are asked of Chromium (docs/network.md "When bodies are fetched"). Each
// `Network.getResponseBody` is a command relayed by the browser process and answered from a copy
// of the body, and an event the agent then builds and writes: work that competes with a page
// load for the machine's cores. So a body is fetched while its tab is loading only when it cannot
// wait, and otherwise once the tab's load event has fired, or once the tab went quiet.
//
// Waiting is safe because the network family asks Chromium for durable bodies
// (`Network.configureDurableMessages`): the browser process keeps a copy that outlives the
// document, so a body can be fetched after its page navigated away. A session whose durable
// storage could not be configured keeps its bodies in the renderer, which drops them when the
// session's root frame starts a new document: those bodies cannot wait past that.
//
// One queue per tab, fed by the network family. A deferred body is fetched:
// - when the tab's load event fires (pages that navigate on at their load event get their bodies
//   asked for then, while every frame's session still exists);
// - after the load, when none of the tab's requests has been in flight for BODY_QUIET_MS (a
//   single-page app's bursts of requests are not interrupted by the fetches of their bodies);
// - at once (urgent, past the fetch queue's concurrency) when it is not durable and the document
//   that holds it is about to be replaced;
// - when the tab's deferred bodies pass MAX_DEFERRED_BYTES (Chromium evicts the oldest bodies
//   beyond its buffer; a body lost that way is counted, not an error);
// - MAX_DEFER_MS after the tab's first deferred body at the latest (a page that never goes quiet,
//   such as one polling every 200 ms, still gets its bodies).
// Pure state over injected timers, like network-idle.ts; no timer runs while nothing is deferred.

import { SYSTEM_TIMERS, type IdleTimers } from './network-idle.ts';

export const BODY_QUIET_MS = 100;
export const MAX_DEFER_MS = 5000;
export const MAX_DEFERRED_BYTES = 16 * 1024 * 1024;

/** One body waiting to be fetched. */
export interface DeferredBody {
  /** The session it will be fetched on (it is dropped when that session ends). */
  readonly sessionId: string;
  /** The root frame of that session: its next document replaces the body's. */
  readonly rootFrameId: string;
  /** Decoded size, as known from `dataReceived`. */
  readonly bytes: number;
  /** Kept by the browser process: it survives the next document of its session. */
  readonly durable: boolean;
  /** Fetch it now; `urgent`: ahead of the fetch queue's concurrency. */
  run(urgent: boolean): void;
  /** It can no longer be fetched (its session is gone): settle without a body. */
  drop(): void;
}

export interface BodyScheduleOptions {
  timers?: IdleTimers;
  quietMs?: number;
  maxDeferMs?: number;
  maxDeferredBytes?: number;
}

class TabBodies {
  /** Between a main-frame document request and the tab's load event. */
  loading = false;
  /** Requests of the tab (its frames and dedicated workers) started and not finished. */
  active = 0;
  queue: DeferredBody[] = [];
  bytes = 0;
  quietTimer: unknown = undefined;
  maxTimer: unknown = undefined;
}

export class BodySchedule {
  private readonly tabs = new Map<string, TabBodies>();
  private readonly timers: IdleTimers;
  private readonly quietMs: number;
  private readonly maxDeferMs: number;
  private readonly maxDeferredBytes: number;

  constructor(options: BodyScheduleOptions = {}) {
    this.timers = options.timers ?? SYSTEM_TIMERS;
    this.quietMs = options.quietMs ?? BODY_QUIET_MS;
    this.maxDeferMs = options.maxDeferMs ?? MAX_DEFER_MS;
    this.maxDeferredBytes = options.maxDeferredBytes ?? MAX_DEFERRED_BYTES;
  }

  /** Bodies waiting, all tabs. */
  get deferredCount(): number {
    let n = 0;
    for (const tab of this.tabs.values()) n += tab.queue.length;
    return n;
  }

  requestStarted(tab: string): void {
    const t = this.tabOf(tab);
    t.active++;
    this.disarmQuiet(t);
  }

  requestEnded(tab: string): void {
    const t = this.tabs.get(tab);
    if (t === undefined || t.active === 0) return;
    t.active--;
    this.armQuiet(t);
  }

  /**
   * A document request for `frameId` started: the bodies of the session whose root frame it is
   * cannot wait unless durable (the renderer drops them). A main-frame request starts the tab's
   * load.
   */
  documentRequested(tab: string, frameId: string, isTabMainFrame: boolean): void {
    const t = this.tabOf(tab);
    const doomed = (b: DeferredBody) => !b.durable && b.rootFrameId === frameId;
    if (t.queue.some(doomed)) {
      const urgent = t.queue.filter(doomed);
      this.remove(t, doomed);
      for (const body of urgent) body.run(true);
    }
    if (isTabMainFrame) {
      t.loading = true;
      this.disarmQuiet(t);
    }
  }

  /** The tab's main frame fired its load event (or stopped loading without one). */
  loaded(tab: string): void {
    const t = this.tabs.get(tab);
    if (t === undefined || !t.loading) return;
    t.loading = false;
    if (t.queue.length > 0) this.release(t);
  }

  /** Fetch `body` once its tab is loaded and quiet (see the module comment). */
  defer(tab: string, body: DeferredBody): void {
    const t = this.tabOf(tab);
    t.queue.push(body);
    t.bytes += body.bytes;
    if (t.maxTimer === undefined) t.maxTimer = this.timers.set(() => this.release(t), this.maxDeferMs);
    while (t.bytes > this.maxDeferredBytes && t.queue.length > 0) {
      const oldest = t.queue.shift()!;
      t.bytes -= oldest.bytes;
      oldest.run(false);
    }
    this.armQuiet(t);
  }

  /** A session detached: its bodies can no longer be fetched. */
  dropSession(sessionId: string): void {
    for (const t of this.tabs.values()) {
      const dropped = t.queue.filter((b) => b.sessionId === sessionId);
      if (dropped.length === 0) continue;
      this.remove(t, (b) => b.sessionId === sessionId);
      for (const body of dropped) body.drop();
    }
  }

  /** The tab is gone (or its network category was turned off). */
  forgetTab(tab: string): void {
    const t = this.tabs.get(tab);
    if (t === undefined) return;
    this.tabs.delete(tab);
    this.clearTimers(t);
    const dropped = t.queue;
    t.queue = [];
    for (const body of dropped) body.drop();
  }

  dispose(): void {
    for (const tab of [...this.tabs.keys()]) this.forgetTab(tab);
  }

  private tabOf(tab: string): TabBodies {
    let t = this.tabs.get(tab);
    if (t === undefined) {
      t = new TabBodies();
      this.tabs.set(tab, t);
    }
    return t;
  }

  /** Armed only while bodies wait, the tab is loaded and nothing is in flight. */
  private armQuiet(t: TabBodies): void {
    if (t.queue.length === 0 || t.loading || t.active > 0 || t.quietTimer !== undefined) return;
    t.quietTimer = this.timers.set(() => {
      t.quietTimer = undefined;
      if (!t.loading && t.active === 0) this.release(t);
    }, this.quietMs);
  }

  private disarmQuiet(t: TabBodies): void {
    if (t.quietTimer === undefined) return;
    this.timers.clear(t.quietTimer);
    t.quietTimer = undefined;
  }

  private release(t: TabBodies): void {
    this.clearTimers(t);
    const bodies = t.queue;
    t.queue = [];
    t.bytes = 0;
    for (const body of bodies) body.run(false);
  }

  private remove(t: TabBodies, which: (b: DeferredBody) => boolean): void {
    t.queue = t.queue.filter((b) => {
      if (!which(b)) return true;
      t.bytes -= b.bytes;
      return false;
    });
    if (t.queue.length === 0) this.clearTimers(t);
  }

  private clearTimers(t: TabBodies): void {
    this.disarmQuiet(t);
    if (t.maxTimer !== undefined) this.timers.clear(t.maxTimer);
    t.maxTimer = undefined;
  }
}
