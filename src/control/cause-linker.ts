// caused_by (docs/events.md "caused_by"): stamps the events an action caused with its action id.
// Pure bookkeeping over the events on their way to the log; the actions are opened by the CDP
// proxy and the computer executor.
//
// Rules, per tab:
// - An opening action (a navigation command, a mouse press, Enter, a computer action) opens a
//   window in its tab and closes the tab's previous one.
// - While a window is open, every event of the tab gets its action id, up to and including the
//   first page_navigation_settled of a navigation that began after the action.
// - A request keeps the action of its start: its response or failure carries the same id.
// - Initiator chain: a request started by a script that one of the action's requests loaded is the
//   action's too, also after the window closed (and over a newer window).
// - An effect of an action that carries a `step_id` (docs/events.md "Steps") carries it too, as
//   the last field of its data (the step filter's SQL form relies on it: src/stream/event-query.ts).

import type { EventType, TelemetryEvent } from '../../injected/schema.ts';
import type { EventSink } from '../telemetry/monitor.ts';

/** How many scripts and in-flight requests per tab are remembered for the chain (oldest dropped). */
const MAX_REMEMBERED = 512;

/** Event types never linked: the cause side itself, and the agent's monitor events. */
const UNLINKED: ReadonlySet<EventType> = new Set<EventType>([
  'cdp_connect',
  'cdp_disconnect',
  'cdp_command',
  'api_call',
  'computer_action',
  'step',
  'monitor_screenshot',
  'monitor_disconnected',
  'monitor_reconnected',
  'monitor_reconnect_failed',
  'monitor_init_failed',
]);

/** An action, as its effects name it: one object per action, shared by everything it caused. */
interface Cause {
  actionId: string;
  stepId: string | undefined;
}

interface Window {
  cause: Cause;
  /** The tab's nav_seq when the action began; a settle of a later navigation closes the window. */
  navSeq: number | undefined;
}

interface TabState {
  window: Window | undefined;
  /** Latest nav_seq seen in the tab's events. */
  navSeq: number | undefined;
  /** Script URL → the action whose request loaded it. */
  scripts: Map<string, Cause>;
  /** CDP request id → the action of its request. */
  requests: Map<string, Cause>;
}

interface LinkableData {
  caused_by?: string;
  step_id?: string;
  target_id?: string;
  nav_seq?: number;
  opener_id?: string;
  request_id?: string;
  resource_type?: string;
  initiator_url?: string;
  url?: string;
  frame_id?: string;
  parent_frame_id?: string;
}

/** How many targets' latest nav_seq is remembered (oldest dropped). */
const MAX_TARGETS = 4096;

export class CauseLinker {
  private readonly tabs = new Map<string, TabState>();
  /** Latest nav_seq of every target seen, also before its first action. */
  private readonly navSeqs = new Map<string, number>();

  /** `next`, with every event stamped on its way there. */
  linking(next: EventSink): EventSink {
    return {
      append: (event) => {
        this.link(event);
        return next.append(event);
      },
    };
  }

  /** An opening action began in `targetId`'s tab; `stepId`: the step its caller marked last. */
  open(targetId: string, actionId: string, stepId?: string): void {
    const tab = this.tab(targetId);
    tab.window = { cause: { actionId, stepId }, navSeq: tab.navSeq ?? this.navSeqs.get(targetId) };
  }

  /** The tab is gone. */
  forget(targetId: string): void {
    this.tabs.delete(targetId);
    this.navSeqs.delete(targetId);
  }

  /** Stamp `event` (before it is admitted) when an action caused it. */
  link(event: TelemetryEvent): void {
    if (UNLINKED.has(event.type)) return;
    const data = event.data as LinkableData | undefined;
    if (data === undefined) return;
    // A tab opened by another: the opener's window.
    const tabId = event.type === 'page_tab_opened' ? data.opener_id : data.target_id;
    if (tabId === undefined) return;
    if (typeof data.nav_seq === 'number' && this.navSeqs.get(tabId) !== data.nav_seq) {
      this.navSeqs.delete(tabId);
      this.navSeqs.set(tabId, data.nav_seq);
      if (this.navSeqs.size > MAX_TARGETS) this.navSeqs.delete(this.navSeqs.keys().next().value!);
    }
    const tab = this.tabs.get(tabId);
    if (tab === undefined) return;
    if (typeof data.nav_seq === 'number') tab.navSeq = data.nav_seq;
    const cause = this.causeOf(event.type, data, tab);
    if (cause !== undefined) {
      data.caused_by = cause.actionId;
      if (cause.stepId !== undefined) data.step_id = cause.stepId;
    }
    this.remember(event.type, data, tab, cause);
    if (event.type === 'page_navigation_settled' && tab.window !== undefined) {
      const opened = tab.window.navSeq;
      if (typeof data.nav_seq === 'number' && (opened === undefined || data.nav_seq > opened)) tab.window = undefined;
    }
  }

  private causeOf(type: EventType, data: LinkableData, tab: TabState): Cause | undefined {
    if ((type === 'network_response' || type === 'network_loading_failed') && data.request_id !== undefined) {
      const own = tab.requests.get(data.request_id);
      if (own !== undefined) return own;
    }
    if (type === 'network_request' && data.initiator_url !== undefined) {
      const chained = tab.scripts.get(data.initiator_url);
      if (chained !== undefined) return chained;
    }
    return tab.window?.cause;
  }

  private remember(type: EventType, data: LinkableData, tab: TabState, cause: Cause | undefined): void {
    if (type === 'page_navigation' && data.parent_frame_id === undefined) {
      // A new document: its scripts are new ones.
      tab.scripts.clear();
    }
    if (data.request_id === undefined) return;
    if (type === 'network_request') {
      if (cause === undefined) return;
      bounded(tab.requests, data.request_id, cause);
      if (data.resource_type === 'Script' && data.url !== undefined) bounded(tab.scripts, data.url, cause);
    } else if (type === 'network_response' || type === 'network_loading_failed') {
      tab.requests.delete(data.request_id);
    }
  }

  private tab(targetId: string): TabState {
    let tab = this.tabs.get(targetId);
    if (tab === undefined) {
      tab = { window: undefined, navSeq: undefined, scripts: new Map(), requests: new Map() };
      this.tabs.set(targetId, tab);
      if (this.tabs.size > MAX_TARGETS) this.tabs.delete(this.tabs.keys().next().value!);
    }
    return tab;
  }
}

function bounded(map: Map<string, Cause>, key: string, value: Cause): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_REMEMBERED) map.delete(map.keys().next().value!);
}
