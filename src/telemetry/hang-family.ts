// Hung tabs (docs/events.md "Failure signals"): every tab's main thread is asked a trivial question
// (`Runtime.evaluate` of `0`, which runs on the renderer's main thread) once per threshold. An
// answer that does not come within the threshold gives page_unresponsive; the same probe's late
// answer gives page_responsive with how long the tab did not answer. No new probe is sent while one
// is unanswered, so a hung tab costs nothing more.
//
// Cost (docs/performance.md "Idle"): one round trip per tab per threshold (default 5 s), about
// 0.2 messages per second per tab; no timer runs while no tab exists.
//
// A JavaScript dialog (alert, confirm, ...) holds the main thread until it is answered, and so does
// a probe: while a dialog is open the tab is not reported unresponsive (the dialog is an event of
// its own). A crashed tab is not probed until its next document.

import type { Protocol } from 'devtools-protocol';
import { isTargetGone } from '../browser/cdp-errors.ts';
import type { TargetState } from './event-context.ts';
import type { FamilyHost, TelemetryFamily } from './family.ts';

interface TabProbe {
  state: TargetState;
  /** Next probe, or the unanswered probe's threshold timer. */
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
  private disposed = false;

  constructor(
    /** page_unresponsive after this many ms without an answer; also the probe period. 0: off. */
    private readonly thresholdMs: number,
  ) {}

  start(host: FamilyHost): void {
    this.host = host;
    if (this.thresholdMs <= 0) return;
    host.handle('Page.javascriptDialogOpening', (_p, s) => this.setDialog(s, true));
    host.handle('Page.javascriptDialogClosed', (_p, s) => this.setDialog(s, false));
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
    for (const probe of this.probes.values()) clearTimeout(probe.timer);
    this.probes.clear();
  }

  private watch(state: TargetState): void {
    const probe: TabProbe = { state, timer: undefined, sentAt: undefined, unresponsive: false, dialogOpen: false, crashed: false };
    this.probes.set(state.target.sessionId, probe);
    this.schedule(probe);
  }

  private unwatch(state: TargetState): void {
    const probe = this.probes.get(state.target.sessionId);
    if (!probe) return;
    clearTimeout(probe.timer);
    this.probes.delete(state.target.sessionId);
  }

  private schedule(probe: TabProbe): void {
    probe.timer = setTimeout(() => this.send(probe), this.thresholdMs);
    probe.timer.unref();
  }

  private isCurrent(probe: TabProbe): boolean {
    return !this.disposed && this.probes.get(probe.state.target.sessionId) === probe;
  }

  private send(probe: TabProbe): void {
    if (!this.isCurrent(probe)) return;
    const sentAt = performance.now();
    probe.sentAt = sentAt;
    probe.timer = setTimeout(() => this.overdue(probe), this.thresholdMs);
    probe.timer.unref();
    probe.state.target.send('Runtime.evaluate', PROBE).then(
      () => this.answered(probe),
      (err: unknown) => {
        if (isTargetGone(err, probe.state.target)) {
          clearTimeout(probe.timer);
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
    this.schedule(probe);
  }

  private setDialog(state: TargetState, open: boolean): void {
    const probe = this.probes.get(state.target.sessionId);
    if (probe) probe.dialogOpen = open;
  }
}
