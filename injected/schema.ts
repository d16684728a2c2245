// The telemetry event schema (SPEC §6), shared by the agent (src/) and the page script (injected/)
// so that the two sides cannot drift. Types only, plus the small constant tables both sides need.

export const CATEGORIES = ['console', 'network', 'page', 'interaction'] as const;
export type Category = (typeof CATEGORIES)[number];

/** CDP target type, verbatim (SPEC §6.2). */
export type TargetType =
  | 'page'
  | 'iframe'
  | 'worker'
  | 'service_worker'
  | 'shared_worker'
  | 'background_page'
  | 'other'
  | (string & {});

/** Event context composed into `data` (SPEC §6.2); each field only when known. */
export interface EventContext {
  session_id?: string;
  target_id?: string;
  target_type?: TargetType;
  frame_id?: string;
  loader_id?: string;
  url?: string;
  nav_seq?: number;
}

/** CDP's Runtime.StackTrace shape, kept as is (SPEC §6.4). */
export interface StackTrace {
  description?: string;
  callFrames: Array<{
    functionName: string;
    scriptId: string;
    url: string;
    lineNumber: number;
    columnNumber: number;
  }>;
  parent?: StackTrace;
}

export interface ConsoleLogData extends EventContext {
  level: string;
  text: string;
  args: string[];
  stack_trace?: StackTrace;
}

export interface ConsoleErrorData extends EventContext {
  text: string;
  level?: 'error';
  args?: string[];
  line?: number;
  column?: number;
  source_url?: string;
  stack_trace?: StackTrace;
}

export interface PageNavigationData {
  url: string;
  frame_id: string;
  parent_frame_id?: string;
  loader_id: string;
  session_id?: string;
  target_id?: string;
  target_type?: TargetType;
}

export interface PageTimingData extends EventContext {
  cdp_timestamp: number;
}

export interface PageTabOpenedData {
  target_id: string;
  target_type: TargetType;
  url: string;
  title: string;
  opener_id?: string;
}

export interface MonitorData {
  reason?: string;
  reconnect_duration_ms?: number;
  attempts?: number;
  step?: string;
  error?: string;
  png?: string;
}

/** Map from event type to the shape of its `data`. */
export interface EventDataByType {
  console_log: ConsoleLogData;
  console_error: ConsoleErrorData;
  page_navigation: PageNavigationData;
  page_dom_content_loaded: PageTimingData;
  page_load: PageTimingData;
  page_tab_opened: PageTabOpenedData;
  network_request: EventContext & Record<string, unknown>;
  network_response: EventContext & Record<string, unknown>;
  network_loading_failed: EventContext & Record<string, unknown>;
  network_idle: EventContext;
  page_layout_shift: EventContext & Record<string, unknown>;
  page_lcp: EventContext & Record<string, unknown>;
  page_layout_settled: EventContext;
  page_navigation_settled: EventContext;
  interaction_click: EventContext & Record<string, unknown>;
  interaction_key: EventContext & Record<string, unknown>;
  interaction_scroll_settled: EventContext & Record<string, unknown>;
  monitor_screenshot: MonitorData;
  monitor_disconnected: MonitorData;
  monitor_reconnected: MonitorData;
  monitor_reconnect_failed: MonitorData;
  monitor_init_failed: MonitorData;
}

export type EventType = keyof EventDataByType;

/** Which category gates an event type; `null` = monitor events, emitted whenever telemetry is on. */
export const EVENT_CATEGORY: Record<EventType, Category | null> = {
  console_log: 'console',
  console_error: 'console',
  network_request: 'network',
  network_response: 'network',
  network_loading_failed: 'network',
  network_idle: 'network',
  page_navigation: 'page',
  page_dom_content_loaded: 'page',
  page_load: 'page',
  page_tab_opened: 'page',
  page_layout_shift: 'page',
  page_lcp: 'page',
  page_layout_settled: 'page',
  page_navigation_settled: 'page',
  interaction_click: 'interaction',
  interaction_key: 'interaction',
  interaction_scroll_settled: 'interaction',
  monitor_screenshot: null,
  monitor_disconnected: null,
  monitor_reconnected: null,
  monitor_reconnect_failed: null,
  monitor_init_failed: null,
};

export interface EventSource {
  kind: 'cdp' | 'agent';
  /** The CDP method that caused the event. */
  event?: string;
  metadata?: { cdp_session_id?: string; target_id?: string; target_type?: string };
}

/** One telemetry event (SPEC §6.1). No other top-level fields. */
export interface TelemetryEvent<T extends EventType = EventType> {
  /** Unix microseconds. */
  ts: number;
  type: T;
  source: EventSource;
  data?: EventDataByType[T];
  truncated?: true;
}

export interface Envelope {
  seq: number;
  event: TelemetryEvent;
}
