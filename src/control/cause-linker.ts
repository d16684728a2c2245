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
import { contextOf } from '../event-data.ts';
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
  'replay_started',
  'replay_stopped',
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
    const context = contextOf(event);
    if (context === undefined) return;
    // A tab opened by another: the opener's window.
    const tabId = event.type === 'page_tab_opened' ? event.data?.opener_id : context.target_id;
    if (tabId === undefined) return;
    const navSeq = context.nav_seq;
    if (typeof navSeq === 'number' && this.navSeqs.get(tabId) !== navSeq) {
      this.navSeqs.delete(tabId);
      this.navSeqs.set(tabId, navSeq);
      if (this.navSeqs.size > MAX_TARGETS) this.navSeqs.delete(this.navSeqs.keys().next().value!);
    }
    const tab = this.tabs.get(tabId);
    if (tab === undefined) return;
    if (typeof navSeq === 'number') tab.navSeq = navSeq;
    const cause = this.causeOf(event, tab);
    if (cause !== undefined) {
      context.caused_by = cause.actionId;
      if (cause.stepId !== undefined) context.step_id = cause.stepId;
    }
    this.remember(event, tab, cause);
    if (event.type === 'page_navigation_settled' && tab.window !== undefined) {
      const opened = tab.window.navSeq;
      if (typeof navSeq === 'number' && (opened === undefined || navSeq > opened)) tab.window = undefined;
    }
  }

  private causeOf(event: TelemetryEvent, tab: TabState): Cause | undefined {
    if ((event.type === 'network_response' || event.type === 'network_loading_failed') && event.data?.request_id !== undefined) {
      const own = tab.requests.get(event.data.request_id);
      if (own !== undefined) return own;
    }
    if (event.type === 'network_request' && event.data?.initiator_url !== undefined) {
      const chained = tab.scripts.get(event.data.initiator_url);
      if (chained !== undefined) return chained;
    }
    return tab.window?.cause;
  }

  private remember(event: TelemetryEvent, tab: TabState, cause: Cause | undefined): void {
    if (event.data === undefined) return;
    if (event.type === 'page_navigation' && event.data.parent_frame_id === undefined) {
      // A new document: its scripts are new ones.
      tab.scripts.clear();
    } else if (event.type === 'network_request') {
      const data = event.data;
      if (cause === undefined || data.request_id === undefined) return;
      bounded(tab.requests, data.request_id, cause);
      if (data.resource_type === 'Script' && data.url !== undefined) bounded(tab.scripts, data.url, cause);
    } else if ((event.type === 'network_response' || event.type === 'network_loading_failed') && event.data.request_id !== undefined) {
      tab.requests.delete(event.data.request_id);
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
