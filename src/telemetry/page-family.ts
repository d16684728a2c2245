// Page family (docs/events.md#types): navigations, DOMContentLoaded, load, tabs opened, and the per-tab
// settle machines (docs/events.md#computed-events) that turn DOMContentLoaded, load and the page script's layout
// shifts into page_layout_settled and page_navigation_settled.

import type { Protocol } from 'devtools-protocol';
import type { TargetState } from './event-context.ts';
import type { FamilyHost, TelemetryFamily } from './family.ts';
import { LayoutSettleMachine, systemScheduler, type Scheduler } from './layout-settle.ts';
import { NavigationSettleMachine } from './navigation-settle.ts';
import { translateFrameNavigated, translatePageTiming, translateTabOpened } from './page.ts';

export class PageFamily implements TelemetryFamily {
  private host!: FamilyHost;
  /** Per tab (page target session id): its settle machines. */
  private readonly settles = new Map<string, TabSettle>();

  /** Tabs already announced with page_tab_opened (for the agent's lifetime). */
  constructor(
    private readonly announcedTabs: Set<string>,
    private readonly scheduler: Scheduler = systemScheduler,
    /** Told of every page_navigation_settled emitted (the snapshot family's settled snapshot). */
    private readonly onNavigationSettled: (tab: TargetState) => void = () => undefined,
  ) {}

  start(host: FamilyHost): void {
    this.host = host;
    host.handle('Page.domContentEventFired', (p, s) => this.onTiming('page_dom_content_loaded', 'Page.domContentEventFired', p.timestamp, s));
    host.handle('Page.loadEventFired', (p, s) => this.onTiming('page_load', 'Page.loadEventFired', p.timestamp, s));
  }

  frameNavigated(state: TargetState, frame: Protocol.Page.Frame, isTabMainFrame: boolean): void {
    // A new top-level navigation resets the tab's machines; their pending timers become stale.
    if (isTabMainFrame) this.settles.get(state.target.sessionId)?.navigate(state.navSeq);
    if (!this.host.admits('page')) return;
    this.host.emit('page_navigation', this.host.clock.nowUs(), translateFrameNavigated(frame, state.target), { method: 'Page.frameNavigated', origin: state });
  }

  /** `Target.targetCreated` of any target, before it is attached. */
  targetCreated(info: Protocol.Target.TargetInfo): void {
    if (info.type !== 'page' || this.announcedTabs.has(info.targetId)) return;
    this.announcedTabs.add(info.targetId);
    if (!this.host.admits('page')) return;
    const event = translateTabOpened(info);
    this.host.emit('page_tab_opened', this.host.clock.nowUs(), event, {
      method: 'Target.targetCreated',
      origin: { target_id: info.targetId, target_type: info.type },
    });
  }

  /** A page_layout_shift reported by any frame of the tab that contains `state`'s target. */
  layoutShift(state: TargetState): void {
    const tab = state.target.tab && this.host.tracker.get(state.target.tab.sessionId);
    if (tab) this.settleOf(tab).layout.layoutShift(tab.navSeq);
  }

  targetDetached(state: TargetState): void {
    this.settles.get(state.target.sessionId)?.dispose();
    this.settles.delete(state.target.sessionId);
  }

  dispose(): void {
    for (const settle of this.settles.values()) settle.dispose();
    this.settles.clear();
  }

  private onTiming(type: 'page_dom_content_loaded' | 'page_load', method: string, timestamp: number, state: TargetState): void {
    if (!this.host.admits('page')) return;
    const data = translatePageTiming(timestamp, this.host.tracker.contextOf(state));
    this.host.emit(type, this.host.clock.fromMonotonicSeconds(timestamp), data, { method, origin: state });
    // The tab's own document only: an out-of-process iframe's load is reported on its session.
    if (state.target.type !== 'page') return;
    const settle = this.settleOf(state);
    if (type === 'page_dom_content_loaded') settle.navigation.domContentLoaded(state.navSeq);
    else settle.layout.load(state.navSeq);
  }

  private settleOf(tab: TargetState): TabSettle {
    let settle = this.settles.get(tab.target.sessionId);
    if (!settle) {
      settle = new TabSettle(tab.navSeq, this.scheduler, (type) => this.emitSettled(type, tab));
      this.settles.set(tab.target.sessionId, settle);
    }
    return settle;
  }

  private emitSettled(type: 'page_layout_settled' | 'page_navigation_settled', tab: TargetState): void {
    if (tab.target.isDetached || !this.host.admits('page')) return;
    this.host.emit(type, this.host.clock.nowUs(), this.host.tracker.contextOf(tab));
    if (type === 'page_navigation_settled') this.onNavigationSettled(tab);
  }
}

/** One tab's settle machines: layout settled feeds navigation settled. */
class TabSettle {
  readonly layout: LayoutSettleMachine;
  readonly navigation: NavigationSettleMachine;

  constructor(navSeq: number, scheduler: Scheduler, emit: (type: 'page_layout_settled' | 'page_navigation_settled') => void) {
    this.navigation = new NavigationSettleMachine(() => emit('page_navigation_settled'), navSeq);
    this.layout = new LayoutSettleMachine(
      (navigation) => {
        emit('page_layout_settled');
        this.navigation.layoutSettled(navigation);
      },
      scheduler,
      navSeq,
    );
  }

  navigate(navSeq: number): void {
    this.layout.navigate(navSeq);
    this.navigation.navigate(navSeq);
  }

  dispose(): void {
    this.layout.dispose();
    this.navigation.dispose();
  }
}
