// Tab crashes (docs/events.md "Failure signals"): `Target.targetCrashed` (browser session; it carries
// Chromium's termination status: crashed, killed, oom, ...) gives page_crashed for the tab; the
// tab's next committed document (a reload or a navigation in a new renderer) gives page_recovered.
// `Inspector.targetCrashed` says the same on the tab's own session but needs `Inspector.enable`
// on every tab and carries no status, so it is not used.

import type { Protocol } from 'devtools-protocol';
import type { TargetState } from './event-context.ts';
import type { FamilyHost, TelemetryFamily } from './family.ts';

export class TabCrashFamily implements TelemetryFamily {
  private host!: FamilyHost;
  private dispose_: (() => void) | undefined;
  /** Crashed tabs by target id: when (performance.now()). */
  private readonly crashed = new Map<string, number>();

  constructor(
    /** Told of every crash, so that other families stop waiting on that tab. */
    private readonly onCrash: (state: TargetState) => void = () => undefined,
  ) {}

  start(host: FamilyHost): void {
    this.host = host;
    this.dispose_ = host.connection.on('Target.targetCrashed', (params) => this.onCrashed(params));
  }

  private onCrashed(params: Protocol.Target.TargetCrashedEvent): void {
    let tab: TargetState | undefined;
    for (const state of this.host.tracker.all()) {
      if (state.target.targetId === params.targetId && state.target.type === 'page') tab = state;
    }
    if (tab === undefined) return;
    this.crashed.set(params.targetId, performance.now());
    this.onCrash(tab);
    if (!this.host.admits('page')) return;
    const ctx = this.host.tracker.contextOf(tab);
    const data = { ...ctx, status: params.status, error_code: params.errorCode };
    this.host.emit('page_crashed', this.host.clock.nowUs(), data, { method: 'Target.targetCrashed', origin: tab });
  }

  frameNavigated(state: TargetState, _frame: Protocol.Page.Frame, isTabMainFrame: boolean): void {
    if (!isTabMainFrame) return;
    const since = this.crashed.get(state.target.targetId);
    if (since === undefined) return;
    this.crashed.delete(state.target.targetId);
    if (!this.host.admits('page')) return;
    const data = { ...this.host.tracker.contextOf(state), down_ms: Math.round(performance.now() - since) };
    this.host.emit('page_recovered', this.host.clock.nowUs(), data, { method: 'Page.frameNavigated', origin: state });
  }

  targetDetached(state: TargetState): void {
    this.crashed.delete(state.target.targetId);
  }

  dispose(): void {
    this.dispose_?.();
    this.crashed.clear();
  }
}
