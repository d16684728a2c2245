// Page family (SPEC §6.4): navigations, DOMContentLoaded, load, tabs opened.

import type { Protocol } from 'devtools-protocol';
import type { TargetState } from './event-context.ts';
import type { FamilyHost, TelemetryFamily } from './family.ts';
import { translateFrameNavigated, translatePageTiming, translateTabOpened } from './page.ts';

export class PageFamily implements TelemetryFamily {
  private host!: FamilyHost;

  /** Tabs already announced with page_tab_opened (for the agent's lifetime). */
  constructor(private readonly announcedTabs: Set<string>) {}

  start(host: FamilyHost): void {
    this.host = host;
    host.handle('Page.domContentEventFired', (p, s) => this.onTiming('page_dom_content_loaded', 'Page.domContentEventFired', p.timestamp, s));
    host.handle('Page.loadEventFired', (p, s) => this.onTiming('page_load', 'Page.loadEventFired', p.timestamp, s));
  }

  frameNavigated(state: TargetState, frame: Protocol.Page.Frame): void {
    if (!this.host.isOn('page')) return;
    this.host.emit('page_navigation', this.host.clock.nowUs(), translateFrameNavigated(frame, state.target), false, 'Page.frameNavigated', state);
  }

  /** `Target.targetCreated` of any target, before it is attached. */
  targetCreated(info: Protocol.Target.TargetInfo): void {
    if (info.type !== 'page' || this.announcedTabs.has(info.targetId)) return;
    this.announcedTabs.add(info.targetId);
    if (!this.host.isOn('page')) return;
    const event = translateTabOpened(info);
    this.host.emit('page_tab_opened', this.host.clock.nowUs(), event, false, 'Target.targetCreated', { target_id: info.targetId, target_type: info.type });
  }

  dispose(): void {}

  private onTiming(type: 'page_dom_content_loaded' | 'page_load', method: string, timestamp: number, state: TargetState): void {
    if (!this.host.isOn('page')) return;
    const data = translatePageTiming(timestamp, this.host.tracker.contextOf(state));
    this.host.emit(type, this.host.clock.fromMonotonicSeconds(timestamp), data, false, method, state);
  }
}
