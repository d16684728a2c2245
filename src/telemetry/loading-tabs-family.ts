// Which tabs are loading (docs/events.md "Delivery"): from a tab's main frame starting to load to
// its load event (or its main frame stopping loading without one: an error page, a 204, a
// download). While any is, the event log paces its fan-out with the longer --stream-load-pace-ms:
// the page and the agent compete for the cores then, and fewer, larger writes cost the agent and
// its subscribers less CPU. Emits nothing; needs only the Page domain, which the core enables on
// every tab whatever the categories.

import type { FamilyHost, TelemetryFamily } from './family.ts';
import type { TargetState } from './event-context.ts';

export class LoadingTabsFamily implements TelemetryFamily {
  /** Session ids of the tabs loading now. */
  private readonly loading = new Set<string>();

  /** `onChange(true)` when the first tab starts loading, `onChange(false)` when none is left. */
  constructor(private readonly onChange: (loading: boolean) => void) {}

  start(host: FamilyHost): void {
    host.handle('Page.frameStartedLoading', (p, s) => {
      if (isTabMainFrame(s, p.frameId)) this.set(s.target.sessionId, true);
    });
    host.handle('Page.loadEventFired', (_p, s) => {
      if (s.target.type === 'page') this.set(s.target.sessionId, false);
    });
    host.handle('Page.frameStoppedLoading', (p, s) => {
      if (isTabMainFrame(s, p.frameId)) this.set(s.target.sessionId, false);
    });
  }

  targetDetached(state: TargetState): void {
    this.set(state.target.sessionId, false);
  }

  dispose(): void {
    if (this.loading.size === 0) return;
    this.loading.clear();
    this.onChange(false);
  }

  private set(sessionId: string, loading: boolean): void {
    const before = this.loading.size;
    if (loading) this.loading.add(sessionId);
    else this.loading.delete(sessionId);
    const after = this.loading.size;
    if ((before === 0) !== (after === 0)) this.onChange(after > 0);
  }
}

function isTabMainFrame(state: TargetState, frameId: string): boolean {
  return state.target.type === 'page' && frameId === state.target.targetId;
}
