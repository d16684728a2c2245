// Which tabs are loading: from a tab's main frame starting to load to its load event (or its main
// frame stopping loading without one: an error page, a 204, a download). One tracker, owned by the
// core and offered to the families (FamilyHost.loadingTabs): the page script's family holds a
// tab's LCP resolutions until its load ends, and the network family releases the tab's deferred
// bodies then. While any tab loads, the event log paces its fan-out with the longer
// --stream-load-pace-ms and the CDP connection reads in batches (--load-cdp-read-ms; docs/events.md
// "Delivery"). Emits nothing; needs only the Page domain, which the core enables on every tab
// whatever the categories.

import type { FamilyHost, LoadingTabs, TelemetryFamily } from './family.ts';
import { isTabMainFrame, type TargetState } from './event-context.ts';

export class LoadingTabsFamily implements TelemetryFamily, LoadingTabs {
  /** Session ids of the tabs loading now. */
  private readonly loading = new Set<string>();
  private readonly loadEndListeners: Array<(tabSessionId: string) => void> = [];

  /** `onChange(true)` when the first tab starts loading, `onChange(false)` when none is left. */
  constructor(private readonly onChange?: (loading: boolean) => void) {}

  start(host: FamilyHost): void {
    host.handle('Page.frameStartedLoading', (p, s) => {
      if (isTabMainFrame(s.target, p.frameId)) this.set(s.target.sessionId, true);
    });
    host.handle('Page.loadEventFired', (_p, s) => {
      if (s.target.type === 'page') this.loadEnded(s.target.sessionId);
    });
    host.handle('Page.frameStoppedLoading', (p, s) => {
      if (isTabMainFrame(s.target, p.frameId)) this.loadEnded(s.target.sessionId);
    });
  }

  isLoading(tabSessionId: string): boolean {
    return this.loading.has(tabSessionId);
  }

  /** Called at every end of a tab's load (its load event, or its main frame stopping loading). */
  onLoadEnd(listener: (tabSessionId: string) => void): void {
    this.loadEndListeners.push(listener);
  }

  targetDetached(state: TargetState): void {
    this.set(state.target.sessionId, false);
  }

  dispose(): void {
    this.loadEndListeners.length = 0;
    if (this.loading.size === 0) return;
    this.loading.clear();
    this.onChange?.(false);
  }

  private loadEnded(sessionId: string): void {
    this.set(sessionId, false);
    for (const listener of this.loadEndListeners) listener(sessionId);
  }

  private set(sessionId: string, loading: boolean): void {
    const before = this.loading.size;
    if (loading) this.loading.add(sessionId);
    else this.loading.delete(sessionId);
    const after = this.loading.size;
    if ((before === 0) !== (after === 0)) this.onChange?.(after > 0);
  }
}
