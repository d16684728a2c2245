// Hung tabs (docs/events.md "Failure signals"): an active tab's main thread is asked a trivial
// question (`Runtime.evaluate` of `0`, which waits for the renderer's main thread; commands such as
// `DOM.getDocument` are answered while a script runs) once a second. One timer serves every tab, the
// agent's shared beat (src/heartbeat.ts) that also runs the browser's health probe: each beat
// probes all the active tabs with no probe unanswered, so active tabs cost the agent no wake-up of
// their own (docs/performance.md "Idle"). An answer that does not come
// within the threshold gives page_unresponsive; the same probe's late answer gives page_responsive
// with how long the tab did not answer. No new probe is sent while one is unanswered, so a hung
// tab costs nothing more.
//
// Only tabs that showed activity in the last 30 s are probed: a navigation, a load, console
// output, a page script report (an interaction), a request. A tab that does nothing is not asked
// anything, so idle tabs cost no wake-up at all (docs/performance.md "Idle"); the price is that a
// script started by a timer in a tab quiet for 30 s is not watched until the tab shows activity.
//
// A JavaScript dialog (alert, confirm, ...) holds the main thread until it is answered, and so does
// a probe: while a dialog is open the tab is not reported unresponsive (the dialog is an event of
// its own). A crashed tab is not probed until its next document.

import type { Protocol } from 'devtools-protocol';
import type { Heartbeats } from '../heartbeat.ts';
import { isTargetGone } from '../browser/cdp-errors.ts';
import type { TargetState } from './event-context.ts';
import type { FamilyHost, TelemetryFamily } from './family.ts';

/** Probe period of an active tab: a hang of the threshold plus this is always seen. */
export const HANG_PROBE_PERIOD_MS = 1000;
/** How long after its last activity a tab is still probed. */
export const HANG_ACTIVE_WINDOW_MS = 30_000;

/** CDP events that tell a tab (or a frame or worker in it) is doing something. */
const ACTIVITY_EVENTS = [
  'Page.frameNavigated',
  'Page.navigatedWithinDocument',
  'Page.domContentEventFired',
  'Page.loadEventFired',
  'Runtime.consoleAPICalled',
  'Runtime.exceptionThrown',
  'Runtime.bindingCalled',
  'Network.requestWillBeSent',
] as const;

interface TabProbe {
  state: TargetState;
  /** performance.now() of the tab's last activity. */
  lastActivity: number;
  /** The unanswered probe's threshold timer. */
  timer: NodeJS.Timeout | undefined;
  /** performance.now() when the unanswered probe was sent. */
  sentAt: number | undefined;
  unresponsive: boolean;
  dialogOpen: boolean;
  crashed: boolean;
}

const PROBE = { expression: '0', silent: true, returnByValue: true } as const;

export class HangFamily implements TelemetryFamily {
  private host!: FamilyHost;
  private readonly probes = new Map<string, TabProbe>();
  /** Unsubscribes from the beat; set only while some tab is active. */
  private stopBeat: (() => void) | undefined;
  private disposed = false;

  constructor(
    /** page_unresponsive after this many ms without an answer; also the probe period. 0: off. */
    private readonly thresholdMs: number,
    /** The agent's beats: the probes run on its 1 s beat. */
    private readonly heartbeats: Heartbeats,
  ) {}

  start(host: FamilyHost): void {
    this.host = host;
    if (this.thresholdMs <= 0) return;
    host.handle('Page.javascriptDialogOpening', (_p, s) => this.setDialog(s, true));
    host.handle('Page.javascriptDialogClosed', (_p, s) => this.setDialog(s, false));
    for (const event of ACTIVITY_EVENTS) host.handle(event, (_p, s) => this.markActive(s));
  }

  /** Something happened in the tab of `state`: probe it (again) for the next 30 s. */
  private markActive(state: TargetState): void {
    const tab = state.target.tab ?? state.target;
    const probe = this.probes.get(tab.sessionId);
    if (!probe) return;
    probe.lastActivity = performance.now();
    this.schedule();
  }

  setUpTarget(state: TargetState): Array<Promise<unknown>> {
    if (this.thresholdMs > 0 && state.target.type === 'page' && this.host.isOn('page')) this.watch(state);
    return [];
  }

  reconfigure(state: TargetState): Array<Promise<unknown>> {
    if (this.thresholdMs <= 0 || state.target.type !== 'page') return [];
    const on = this.host.isOn('page');
    if (on && !this.probes.has(state.target.sessionId)) this.watch(state);
    else if (!on) this.unwatch(state);
    return [];
  }

  /** The tab's renderer crashed: its probe will fail; no hang is reported until its next document. */
  tabCrashed(state: TargetState): void {
    const probe = this.probes.get(state.target.sessionId);
    if (probe) probe.crashed = true;
  }

  frameNavigated(state: TargetState, _frame: Protocol.Page.Frame, isTabMainFrame: boolean): void {
    const probe = this.probes.get(state.target.sessionId);
    if (probe && isTabMainFrame) probe.crashed = false;
  }

  targetDetached(state: TargetState): void {
    this.unwatch(state);
  }

  dispose(): void {
    this.disposed = true;
    this.stopBeat?.();
    this.stopBeat = undefined;
    for (const probe of this.probes.values()) clearTimeout(probe.timer);
    this.probes.clear();
  }

  private watch(state: TargetState): void {
    const probe: TabProbe = {
      state,
      lastActivity: performance.now(),
      timer: undefined,
      sentAt: undefined,
      unresponsive: false,
      dialogOpen: false,
      crashed: false,
    };
    this.probes.set(state.target.sessionId, probe);
    this.schedule();
  }

  private unwatch(state: TargetState): void {
    const probe = this.probes.get(state.target.sessionId);
    if (!probe) return;
    clearTimeout(probe.timer);
    this.probes.delete(state.target.sessionId);
  }

  /** Joins the beat unless it is on it. */
  private schedule(): void {
    if (this.stopBeat !== undefined || this.disposed) return;
    this.stopBeat = this.heartbeats.of(HANG_PROBE_PERIOD_MS).every(1, () => this.probeActiveTabs());
  }

  private isCurrent(probe: TabProbe): boolean {
    return !this.disposed && this.probes.get(probe.state.target.sessionId) === probe;
  }

  /**
   * One beat: every tab active within the window and not waiting for an answer is probed. The
   * family stays on the beat while it probed a tab; a tab waiting for an answer joins it again
   * when the answer comes. When no tab is active it leaves the beat until the next activity.
   */
  private probeActiveTabs(): void {
    if (this.disposed) return;
    const now = performance.now();
    let probed = false;
    for (const probe of this.probes.values()) {
      // Quiet for the whole window: no more probes until its next activity.
      if (probe.sentAt !== undefined || now - probe.lastActivity > HANG_ACTIVE_WINDOW_MS) continue;
      probed = true;
      this.send(probe, now);
    }
    if (!probed) {
      this.stopBeat?.();
      this.stopBeat = undefined;
    }
  }

  private send(probe: TabProbe, sentAt: number): void {
    probe.sentAt = sentAt;
    probe.timer = setTimeout(() => this.overdue(probe), this.thresholdMs);
    probe.timer.unref();
    probe.state.target.send('Runtime.evaluate', PROBE).then(
      () => this.answered(probe),
      (err: unknown) => {
        if (isTargetGone(err, probe.state.target)) {
          clearTimeout(probe.timer);
          if (this.isCurrent(probe)) this.probes.delete(probe.state.target.sessionId);
          return;
        }
        // An error answer (a crashed renderer, a context being replaced) is an answer too.
        this.answered(probe);
      },
    );
  }

  private overdue(probe: TabProbe): void {
    if (!this.isCurrent(probe) || probe.sentAt === undefined) return;
    probe.timer = undefined;
    if (probe.dialogOpen || probe.crashed || !this.host.admits('page')) return;
    probe.unresponsive = true;
    const state = probe.state;
    this.host.emit('page_unresponsive', this.host.clock.nowUs(), { ...this.host.tracker.contextOf(state), threshold_ms: this.thresholdMs }, { origin: state });
  }

  private answered(probe: TabProbe): void {
    if (!this.isCurrent(probe) || probe.sentAt === undefined) return;
    clearTimeout(probe.timer);
    probe.timer = undefined;
    const took = performance.now() - probe.sentAt;
    probe.sentAt = undefined;
    if (probe.unresponsive) {
      probe.unresponsive = false;
      const state = probe.state;
      if (this.host.admits('page')) {
        this.host.emit(
          'page_responsive',
          this.host.clock.nowUs(),
          { ...this.host.tracker.contextOf(state), unresponsive_ms: Math.round(took) },
          { origin: state },
        );
      }
    }
    this.schedule();
  }

  private setDialog(state: TargetState, open: boolean): void {
    const probe = this.probes.get(state.target.sessionId);
    if (probe) probe.dialogOpen = open;
  }
}
