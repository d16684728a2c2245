// The telemetry event schema (docs/events.md), shared by the agent (src/) and the page script (injected/)
// so that the two sides cannot drift. Types only, plus the small constant tables both sides need.

export const CATEGORIES = ['console', 'network', 'page', 'interaction'] as const;
export type Category = (typeof CATEGORIES)[number];

/**
 * The operational categories of the official client. `system` (service_crashed, system_oom_kill)
 * and `connection` (live_view_*) have events from this agent; `control` and `captcha` none.
 */
export const OPERATIONAL_CATEGORIES = ['control', 'connection', 'system', 'captcha'] as const;
export type OperationalCategory = (typeof OPERATIONAL_CATEGORIES)[number];

/** CDP target type, verbatim (docs/events.md#the-event-context). */
export type TargetType = 'page' | 'iframe' | 'worker' | 'service_worker' | 'shared_worker' | 'background_page' | 'other' | (string & {});

/** Event context composed into `data` (docs/events.md#the-event-context); each field only when known. */
export interface EventContext {
  /** The action this event is an effect of (docs/events.md "caused_by"); absent when none. */
  caused_by?: string;
  /** The step of that action (docs/events.md "Steps"); absent when none. */
  step_id?: string;
  session_id?: string;
  target_id?: string;
  target_type?: TargetType;
  frame_id?: string;
  loader_id?: string;
  url?: string;
  nav_seq?: number;
}

/** CDP's Runtime.StackTrace shape, kept as is (docs/events.md#types). */
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
  caused_by?: string;
  step_id?: string;
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
  caused_by?: string;
  step_id?: string;
  target_id: string;
  target_type: TargetType;
  url: string;
  title: string;
  opener_id?: string;
}

/** page_layout_shift (docs/events.md#types): one PerformanceObserver `layout-shift` entry. */
export interface PageLayoutShiftData extends EventContext {
  /** The frame whose document shifted (the reporting frame). */
  source_frame_id: string;
  /** Entry start time: ms since the document's time origin. */
  time: number;
  /** Always 0 (layout shifts are instants). */
  duration: 0;
  layout_shift_details: { value: number; had_recent_input: boolean };
}

/** page_lcp (docs/events.md#types): one PerformanceObserver `largest-contentful-paint` entry. */
export interface PageLcpData extends EventContext {
  source_frame_id: string;
  /** Entry start time: ms since the document's time origin. */
  time: number;
  lcp_details: {
    /** ms since the time origin; 0 for a cross-origin image without Timing-Allow-Origin. */
    render_time: number;
    /** ms since the time origin; 0 for text. */
    load_time: number;
    /** Painted area in CSS px². */
    size: number;
    /** The element's id attribute ('' when it has none). */
    element_id: string;
    /** The image URL ('' for text). */
    url: string;
    /** Backend DOM node id of the element; absent when it left the DOM before it was resolved. */
    node_id?: number;
  };
}

export interface InteractionClickData extends EventContext {
  /** Viewport CSS px of the frame's own viewport, integers. */
  x: number;
  y: number;
  selector: string;
  /** Uppercase tag name. */
  tag: string;
  /** Trimmed visible text, at most 200 chars; empty for form fields. */
  text: string;
}

export interface InteractionKeyData extends EventContext {
  /** KeyboardEvent.key */
  key: string;
  /** Selector of the focused element. */
  selector: string;
  tag: string;
}

export interface InteractionScrollSettledData extends EventContext {
  from_x: number;
  from_y: number;
  to_x: number;
  to_y: number;
  target_selector: string;
}

/** Header name → value, as CDP gives them (several values of one header joined by `\n`). */
export type HeaderMap = Record<string, string>;

/** `network_request` (docs/events.md#types): context taken at request time, `url` = the request URL. */
export interface NetworkRequestData extends EventContext {
  request_id: string;
  method: string;
  document_url: string;
  headers: HeaderMap;
  /** CDP `Network.ResourceType` verbatim (`Document`, `Fetch`, `XHR`, `Image`, ...). */
  resource_type?: string;
  /** CDP `Network.Initiator.type` verbatim (`parser`, `script`, `other`, ...). */
  initiator_type: string;
  /** Extension: the URL of the script or document that started the request, when CDP names one. */
  initiator_url?: string;
  /** The request body as text, when the request has one. */
  post_data?: string;
  /** Present (true) on a redirect hop. */
  is_redirect?: true;
  /** The URL redirected from; only with `is_redirect`. */
  redirect_url?: string;
  /** Extension (docs/export.md "HAR"): the redirect answer of the previous hop; only with `is_redirect`. */
  redirect_response?: NetworkRedirectResponse;
}

/**
 * CDP's `Network.ResourceTiming`, an extension field (docs/export.md "HAR"): milliseconds relative
 * to when the network stack began the request; -1 for a phase that did not happen (a reused
 * connection has no dns, connect or ssl).
 */
export interface NetworkTiming {
  /** When the network stack began the request: ms relative to the event's `ts` (negative: before it); absent when unknown. */
  request_time_offset?: number;
  proxy_start: number;
  proxy_end: number;
  dns_start: number;
  dns_end: number;
  connect_start: number;
  connect_end: number;
  ssl_start: number;
  ssl_end: number;
  worker_start: number;
  worker_ready: number;
  send_start: number;
  send_end: number;
  receive_headers_start?: number;
  receive_headers_end: number;
}

/** How a response came over the network, when CDP tells (extension fields, docs/export.md "HAR"). */
export interface NetworkTransferData {
  /** The server's IP address (CDP `remoteIPAddress`). */
  remote_ip_address?: string;
  remote_port?: number;
  /** As Chromium names it: `http/1.1`, `h2`, `h3`, `data`, `blob`, ... */
  protocol?: string;
  /** CDP `connectionId`. */
  connection_id?: number;
  from_disk_cache?: true;
  from_service_worker?: true;
  timing?: NetworkTiming;
}

/** The 3xx answer that ended a redirect hop (CDP `redirectResponse`). */
export interface NetworkRedirectResponse extends NetworkTransferData {
  status: number;
  status_text: string;
  headers: HeaderMap;
}

/** `network_response` (docs/events.md#types): sent when loading finished; context of the request. */
export interface NetworkResponseData extends EventContext, NetworkTransferData {
  request_id: string;
  /** Absent only when the request began before the agent attached. */
  method?: string;
  status: number;
  status_text: string;
  headers: HeaderMap;
  mime_type: string;
  resource_type?: string;
  /** Textual MIME types only (docs/events.md#truncation-limits). */
  body?: string;
  /** Extension: `base64` when `body` holds the bytes base64-encoded (a non-textual MIME type the body policy admits). */
  body_encoding?: 'base64';
  /** Extension: bytes received for the request over the network, headers included (CDP `loadingFinished.encodedDataLength`). */
  encoded_data_length?: number;
  /** Extension: bytes of the decoded body (the sum of CDP `dataReceived.dataLength`). */
  data_length?: number;
}

/** `network_loading_failed` (docs/events.md#types). */
export interface NetworkLoadingFailedData extends EventContext {
  request_id: string;
  error_text: string;
  canceled: boolean;
  /** Absent when the request began before the agent attached (partial context). */
  resource_type?: string;
}

export interface MonitorData {
  reason?: string;
  reconnect_duration_ms?: number;
  attempts?: number;
  step?: string;
  error?: string;
  png?: string;
}

// ---- dialogs, file choosers, downloads, WebSockets and EventSource, Web Vitals ============
// (docs/events.md "Dialogs and file choosers", "Downloads", "WebSockets and EventSource", "Web Vitals")

/** `page_dialog_opened`: a JavaScript dialog blocks its page until someone answers it. */
export interface PageDialogOpenedData extends EventContext {
  /** CDP `Page.DialogType`. */
  dialog_type: 'alert' | 'confirm' | 'prompt' | 'beforeunload';
  message: string;
  /** The frame that opened it (its URL is `url`). */
  dialog_frame_id: string;
  /** `prompt()`'s default value. */
  default_prompt?: string;
  /** Chromium has a handler of its own for it (a headful browser shows it to the user). */
  has_browser_handler: boolean;
}

/**
 * `page_dialog_closed`. `closed_by` says who answered as far as the agent can tell
 * (docs/events.md "Dialogs and file choosers"): the agent itself never answers.
 */
export interface PageDialogClosedData extends EventContext {
  dialog_type?: PageDialogOpenedData['dialog_type'];
  accepted: boolean;
  /** What a prompt() was answered with (only for an accepted prompt). */
  user_input?: string;
  /** How long the dialog was open, ms. */
  open_ms?: number;
  closed_by: 'cdp_client' | 'unknown';
}

/** `page_file_chooser_opened` (CDP `Page.fileChooserOpened`, no interception). */
export interface PageFileChooserOpenedData extends EventContext {
  chooser_frame_id: string;
  mode: 'selectSingle' | 'selectMultiple';
  /** Backend DOM node id of the `<input type=file>`, when there is one. */
  node_id?: number;
}

/** `network_download_started` (CDP `Browser.downloadWillBegin`). `url` is the download's URL. */
export interface NetworkDownloadStartedData extends EventContext {
  guid: string;
  suggested_filename: string;
  /** From the response that became the download, when the agent saw it. */
  mime_type?: string;
}

/** `network_download_progress`: at most one a second per download. */
export interface NetworkDownloadProgressData extends EventContext {
  guid: string;
  received_bytes: number;
  /** 0 when the server did not say. */
  total_bytes: number;
}

/** `network_download_finished`. */
export interface NetworkDownloadFinishedData extends EventContext {
  guid: string;
  /** Chromium's CDP states; it has no `interrupted` one (docs/events.md "Downloads"). */
  state: 'completed' | 'canceled';
  received_bytes: number;
  total_bytes: number;
  /** Where the file was written (completed only, when Chromium says). */
  file_path?: string;
  suggested_filename?: string;
}

/** `network_websocket_opened`: the handshake's answer. `url` is the socket's URL. */
export interface NetworkWebSocketOpenedData extends EventContext {
  request_id: string;
  status: number;
  status_text: string;
  request_headers: HeaderMap;
  headers: HeaderMap;
}

/** `network_websocket_frame`: one frame sent or received. */
export interface NetworkWebSocketFrameData extends EventContext {
  request_id: string;
  direction: 'sent' | 'received';
  /** WebSocket opcode: 1 text, 2 binary (others as Chromium reports them). */
  opcode: number;
  /** Payload bytes (UTF-8 bytes of a text frame). */
  size: number;
  /** Text payload, or base64 of a binary one, when the body policy admits it; cut to its max_bytes. */
  payload?: string;
  payload_encoding?: 'base64';
}

/** `network_websocket_closed`. */
export interface NetworkWebSocketClosedData extends EventContext {
  request_id: string;
  /** Close code and reason: only when a close frame was reported (Chromium reports none: docs/events.md). */
  code?: number;
  reason?: string;
  /** Frames of this socket dropped by the frame rate limit. */
  dropped_frames?: number;
}

/** `network_eventsource_opened`: the stream's response headers. `url` is the stream's URL. */
export interface NetworkEventSourceOpenedData extends EventContext {
  request_id: string;
  status: number;
  status_text: string;
  headers: HeaderMap;
}

/** `network_eventsource_message`: one message received (CDP `Network.eventSourceMessageReceived`). */
export interface NetworkEventSourceMessageData extends EventContext {
  request_id: string;
  event_name: string;
  event_id: string;
  /** UTF-8 bytes of the data. */
  size: number;
  /** The message's data, when the body policy admits it; cut to its max_bytes. */
  data?: string;
}

/** The attribution of one Web Vitals metric's element: a selector and tag (docs/events.md "Web Vitals"). */
export interface WebVitalsElement {
  selector: string;
  tag: string;
}

/**
 * `page_web_vitals`: one per top-level document, when it is first hidden, when its tab navigates
 * to another document or closes, or at the session's end. Values as Google's web-vitals library computes them (ms; CLS unitless); a metric absent
 * when the page produced none (no input: no INP).
 */
export interface PageWebVitalsData extends EventContext {
  /** Why it was sent: `hidden` (visibility), `navigated` (the tab left the document), `tab_closed`, `session_end`. */
  reason: 'hidden' | 'navigated' | 'tab_closed' | 'session_end';
  ttfb?: number;
  fcp?: number;
  lcp?: { value: number; element?: WebVitalsElement; url?: string };
  cls?: { value: number; largest_shift_element?: WebVitalsElement; largest_shift_time?: number };
  inp?: {
    value: number;
    event_type: string;
    target?: WebVitalsElement;
    input_delay: number;
    processing_duration: number;
    presentation_delay: number;
    /** Interactions seen (the p98 rule picks among them). */
    interaction_count: number;
  };
}

/**
 * The page script's form of page_web_vitals (the agent adds the context): a snapshot of the
 * document's metrics, sent shortly after they change (`snapshot`) and at once when it is hidden.
 */
export interface WebVitalsReport extends Omit<PageWebVitalsData, keyof EventContext | 'reason'> {
  type: 'page_web_vitals';
  reason: 'snapshot' | 'hidden';
}

/** The event types of this block: data shapes. */
export interface SessionTroubleEventData {
  page_dialog_opened: PageDialogOpenedData;
  page_dialog_closed: PageDialogClosedData;
  page_file_chooser_opened: PageFileChooserOpenedData;
  network_download_started: NetworkDownloadStartedData;
  network_download_progress: NetworkDownloadProgressData;
  network_download_finished: NetworkDownloadFinishedData;
  network_websocket_opened: NetworkWebSocketOpenedData;
  network_websocket_frame: NetworkWebSocketFrameData;
  network_websocket_closed: NetworkWebSocketClosedData;
  network_eventsource_opened: NetworkEventSourceOpenedData;
  network_eventsource_message: NetworkEventSourceMessageData;
  page_web_vitals: PageWebVitalsData;
}

const SESSION_TROUBLE_CATEGORY: Record<keyof SessionTroubleEventData, Category> = {
  page_dialog_opened: 'page',
  page_dialog_closed: 'page',
  page_file_chooser_opened: 'page',
  network_download_started: 'network',
  network_download_progress: 'network',
  network_download_finished: 'network',
  network_websocket_opened: 'network',
  network_websocket_frame: 'network',
  network_websocket_closed: 'network',
  network_eventsource_opened: 'network',
  network_eventsource_message: 'network',
  page_web_vitals: 'page',
};

// ---- replays (docs/replay.md "Events") ----------------------------------------------------------
// When a recording of the screen ran: extension types of the agent's own (category `monitor`,
// emitted whenever telemetry is on), so the stream and the history say when a replay covers them.

/** Why a recording ended (docs/replay.md "Events"). */
export type ReplayStopReason = 'requested' | 'max_duration' | 'max_size' | 'session_deleted' | 'shutdown' | 'encoder_failed' | 'interrupted';

/** `replay_started`: a recording began; video time 0 is this event's `ts`. */
export interface ReplayStartedData {
  replay_id: string;
  /** Most frames per second recorded. */
  framerate: number;
  /** The recording ends by itself after this many seconds, when set. */
  max_duration_in_seconds?: number;
  /** `video/mp4` (H.264) or `video/webm` (VP8). */
  mime_type: string;
}

/** `replay_stopped`: a recording ended (its `ts` is the end of the video) and its file is final. */
export interface ReplayStoppedData {
  replay_id: string;
  reason: ReplayStopReason;
  /** Video time covered, from replay_started's `ts` to this event's. */
  duration_ms: number;
  /** Size of the file, bytes. */
  size_bytes: number;
  /**
   * Frames written (the browser's paints, at most `framerate` a second, and the keepalive
   * repeats); absent for `interrupted` (the count ended with the agent that recorded).
   */
  frames?: number;
  /** Frames dropped because the encoder fell behind. */
  dropped_frames?: number;
  /** encoder_failed, interrupted: what happened. */
  error?: string;
}

/** The event types of this block: data shapes. */
export interface ReplayEventData {
  replay_started: ReplayStartedData;
  replay_stopped: ReplayStoppedData;
}

const REPLAY_CATEGORY: Record<keyof ReplayEventData, null> = {
  replay_started: null,
  replay_stopped: null,
};

// ---- control and connection events: the cause side (docs/events.md "Control events") ----------------
// What automation clients and API callers made the browser do. Every control event carries an
// `action_id`; the events it caused carry `caused_by` with that id.

/** The categories of the cause side, as the official client names them. */
export type ControlCategory = 'control' | 'connection';

/** Why a proxied CDP client's connection ended (the official client's values). */
export type CdpDisconnectReason = 'client_close' | 'upstream_changed' | 'upstream_error' | 'context_cancelled';

/** cdp_connect: a client opened the agent's CDP endpoint (extension fields; the official type has no data). */
export interface CdpConnectData {
  /** Pairs it with its cdp_disconnect. */
  connection_id: string;
  /** `browser`, or `page` for a client of one target's endpoint. */
  endpoint: 'browser' | 'page';
  target_id?: string;
}

export interface CdpDisconnectData {
  duration_ms: number;
  /** CDP messages relayed in either direction. */
  message_count: number;
  reason: CdpDisconnectReason;
  /** Extension: pairs it with its cdp_connect. */
  connection_id: string;
  /** Extension: why the proxy ended it, when it did (`slow_client`, `shutdown`, `session_deleted`). */
  detail?: string;
}

/** Fields every control event carries (self-describing: start in `ts`, duration, target, outcome). */
export interface ControlData {
  action_id: string;
  /** The tab (or other target) the action acted on, when it acted on one. */
  target_id?: string;
  duration_ms: number;
  outcome: 'ok' | 'error';
  /** The error text, with outcome `error`. */
  error?: string;
  /** The step its caller marked last (docs/events.md "Steps"); always the last field of `data`. */
  step_id?: string;
}

/** The input shape of an action: never typed characters, only their count. */
export interface InputShape {
  /** CDP's input event type (`mousePressed`, `keyDown`, `mouseWheel`, ...). */
  event_type?: string;
  x?: number;
  y?: number;
  button?: string;
  click_count?: number;
  delta_x?: number;
  delta_y?: number;
  /** Characters typed or inserted (the characters themselves are never recorded). */
  text_length?: number;
  /** A key that commands the page (Enter, Tab, Escape, Backspace, Delete, arrows, Home, End, PageUp, PageDown, modifiers, F1-F24); never a printable key. */
  key?: string;
  /** CDP modifier bit mask (Alt 1, Ctrl 2, Meta 4, Shift 8). */
  modifiers?: number;
}

/** cdp_command: one recorded command of a proxied client (docs/events.md "cdp_command"). */
export interface CdpCommandData extends ControlData, InputShape {
  method: string;
  connection_id: string;
  session_id?: string;
  /** The navigation's URL: only with `--control-include-urls`. */
  url?: string;
  /** Page.captureScreenshot's format. */
  format?: string;
}

/** api_call: one call of the agent's API that acts on the browser. */
export interface ApiCallData extends ControlData {
  /** The OpenAPI operationId. */
  operation_id: string;
  /** Also the response's X-Request-Id header. */
  request_id: string;
  status: number;
}

/** computer_action: one action of a computer batch (extension type: the official client has none). */
export interface ComputerActionData extends ControlData, InputShape {
  /** The batch action's type (`click_mouse`, `type_text`, ...). */
  action: string;
  /** Its index in the batch. */
  index: number;
  /** The batch's api_call request id. */
  request_id: string;
}

/** How a step was marked (docs/events.md "Steps"). */
export type StepVia = 'http' | 'cdp' | 'mcp';

/**
 * step: the automation's own story (docs/events.md "Steps"): a named step that its caller's
 * following actions, and what they caused, carry as `step_id`.
 */
export interface StepData {
  name: string;
  /** The caller's own data (a JSON object of at most 16 KB). */
  data?: Record<string, unknown>;
  /** The step it belongs to. */
  parent_id?: string;
  via: StepVia;
  /** Whose actions it covers: `token:<hash>` (an agent token), `key:<id>` (an API key through the gateway), or a CDP `connection_id`. */
  caller: string;
  /** The CDP connection it was marked on (via `cdp`). */
  connection_id?: string;
  /** Last, as on every event that carries it (docs/events.md "Steps"). */
  step_id: string;
}

/** Map from event type to the shape of its `data`. */
export interface EventDataByType extends SessionTroubleEventData, ReplayEventData {
  console_log: ConsoleLogData;
  console_error: ConsoleErrorData;
  page_navigation: PageNavigationData;
  page_dom_content_loaded: PageTimingData;
  page_load: PageTimingData;
  page_tab_opened: PageTabOpenedData;
  network_request: NetworkRequestData;
  network_response: NetworkResponseData;
  network_loading_failed: NetworkLoadingFailedData;
  network_idle: EventContext;
  page_layout_shift: PageLayoutShiftData;
  page_lcp: PageLcpData;
  page_layout_settled: EventContext;
  page_navigation_settled: EventContext;
  interaction_click: InteractionClickData;
  interaction_key: InteractionKeyData;
  interaction_scroll_settled: InteractionScrollSettledData;
  monitor_screenshot: MonitorData;
  monitor_disconnected: MonitorData;
  monitor_reconnected: MonitorData;
  monitor_reconnect_failed: MonitorData;
  monitor_init_failed: MonitorData;
  // ---- failure signals and live view (docs/events.md "Failure signals"): see the block below ----
  service_crashed: ServiceCrashedData;
  system_oom_kill: SystemOomKillData;
  page_crashed: PageCrashedData;
  page_recovered: PageRecoveredData;
  page_unresponsive: PageUnresponsiveData;
  page_responsive: PageResponsiveData;
  page_long_task: PageLongTaskData;
  live_view_connect: LiveViewConnectData;
  live_view_disconnect: LiveViewDisconnectData;
  cdp_connect: CdpConnectData;
  cdp_disconnect: CdpDisconnectData;
  cdp_command: CdpCommandData;
  api_call: ApiCallData;
  computer_action: ComputerActionData;
  step: StepData;
}

export type EventType = keyof EventDataByType;

/** Which category gates an event type; `null` = monitor events, emitted whenever telemetry is on. */
export const EVENT_CATEGORY: Record<EventType, Category | OperationalCategory | null> = {
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
  ...SESSION_TROUBLE_CATEGORY,
  ...REPLAY_CATEGORY,
  // failure signals and live view (docs/events.md "Failure signals")
  service_crashed: 'system',
  system_oom_kill: 'system',
  page_crashed: 'page',
  page_recovered: 'page',
  page_unresponsive: 'page',
  page_responsive: 'page',
  page_long_task: 'page',
  live_view_connect: 'connection',
  live_view_disconnect: 'connection',
  cdp_connect: 'connection',
  cdp_disconnect: 'connection',
  cdp_command: 'control',
  api_call: 'control',
  computer_action: 'control',
  step: 'control',
};

/**
 * The category every event carries on the wire (`event.category`), as the official client's types
 * name them: the four configurable ones, `screenshot` for monitor_screenshot, `monitor` for the
 * other monitor events (docs/events.md "category").
 */
export const EVENT_CATEGORIES = ['console', 'network', 'page', 'interaction', 'monitor', 'screenshot', ...OPERATIONAL_CATEGORIES] as const;
export type EventCategory = (typeof EVENT_CATEGORIES)[number];

export const EVENT_TYPE_CATEGORY: Record<EventType, EventCategory> = Object.fromEntries(
  Object.entries(EVENT_CATEGORY).map(([type, category]) => [type, category ?? (type === 'monitor_screenshot' ? 'screenshot' : 'monitor')]),
) as Record<EventType, EventCategory>;

export interface EventSource {
  /** `kernel_api`: the agent's own API and its CDP proxy (control and connection events). */
  kind: 'cdp' | 'agent' | 'kernel_api';
  /** The CDP method that caused the event. */
  event?: string;
  metadata?: { cdp_session_id?: string; target_id?: string; target_type?: string };
}

/**
 * One event of type `K` (docs/events.md#common-fields). On the wire it also carries `category`
 * (written from EVENT_TYPE_CATEGORY when the frame is made; the agent's own objects need not hold it).
 */
export interface EventOfType<K extends EventType> {
  /** Unix microseconds. */
  ts: number;
  type: K;
  category?: EventCategory;
  source: EventSource;
  data?: EventDataByType[K];
  truncated?: true;
}

/**
 * One telemetry event: the union of `EventOfType<K>` over the types `T` (all by default), tagged by
 * `type`, so `switch (event.type)` narrows `data` to that type's shape (docs/architecture.md
 * "Add an event type"). Distributive, so that `TelemetryEvent<T>` of a type parameter `T` is
 * still a `TelemetryEvent` (a type guard `e is TelemetryEvent<T>` holds).
 */
export type TelemetryEvent<T extends EventType = EventType> = T extends EventType ? EventOfType<T> : never;

// ---- failure signals and live view (docs/events.md "Failure signals") --------
// `service_crashed`, `system_oom_kill`, `live_view_connect` and `live_view_disconnect` have the
// official client's shapes (`@onkernel/sdk` BrowserServiceCrashedEvent, ...); fields marked
// "extension" are this agent's additions.

/** `service_crashed`: a process the agent depends on exited unexpectedly, or its relaunch was given up. */
export interface ServiceCrashedData {
  /** `chromium` (the embedded browser) or `browser-telemetry-agent` (a previous agent of this session). */
  service_name: string;
  /** startup: died before it was healthy; running: died after; gave_up: relaunch attempts exhausted. */
  phase: 'startup' | 'running' | 'gave_up';
  /** Absent for gave_up. */
  pid?: number;
  /** Extension: the exit code, when the process exited by itself. */
  exit_code?: number;
  /** Extension: the signal that ended it (`SIGKILL`, ...). */
  signal?: string;
  /** Extension (gave_up): failed relaunch attempts so far; attempts go on at the backoff cap. */
  attempts?: number;
  /** Extension (an earlier agent): seq of the last event it stored. */
  last_seq?: number;
}

/** One row of the kernel's task table at an OOM kill. */
export interface OomTopTask {
  pid: number;
  name: string;
  rss_kb: number;
}

/** `system_oom_kill`: the kernel OOM killer ended a process (from /dev/kmsg). */
export interface SystemOomKillData {
  pid: number;
  process_name: string;
  rss_kb: number;
  constraint?: 'none' | 'memcg' | 'cpuset' | 'memory_policy';
  mem_free_kb?: number;
  mem_total_kb?: number;
  top_tasks?: OomTopTask[];
  trigger_pid?: number;
  trigger_process_name?: string;
  /** Extension: the memory cgroup whose limit was hit (constraint memcg). */
  oom_memcg?: string;
  /** Extension: the killed process is the embedded browser or one of its helpers (renderer, GPU, ...). */
  browser_process?: true;
}

/** Chromium's renderer termination status, verbatim (`crashed`, `killed`, `oom`, ...). */
export type RendererTerminationStatus = 'crashed' | 'killed' | 'oom' | 'abnormal' | (string & {});

/** `page_crashed`: a tab's renderer crashed or was killed. */
export interface PageCrashedData extends EventContext {
  status: RendererTerminationStatus;
  /** Chromium's termination code (exit code or signal number). */
  error_code?: number;
}

/** `page_recovered`: a crashed tab shows a document again (reloaded or navigated). */
export interface PageRecoveredData extends EventContext {
  /** From page_crashed to the new document's commit. */
  down_ms: number;
}

/** `page_unresponsive`: a tab's main thread did not answer within the threshold. */
export interface PageUnresponsiveData extends EventContext {
  threshold_ms: number;
}

/** `page_responsive`: the tab's main thread answered again. */
export interface PageResponsiveData extends EventContext {
  /** How long it did not answer: from the unanswered probe to its answer. */
  unresponsive_ms: number;
}

/** What a long task is attributed to: the browsing context container (PerformanceLongTaskTiming.attribution). */
export interface LongTaskAttribution {
  /** `self`, `same-origin-ancestor`, `cross-origin-descendant`, `unknown`, ... */
  name: string;
  container_type?: string;
  container_src?: string;
  container_id?: string;
  container_name?: string;
}

/** A script that ran in the long animation frame around a long task (PerformanceScriptTiming). */
export interface LongTaskScript {
  /** `user-callback`, `event-listener`, `resolve-promise`, `reject-promise`, `classic-script`, `module-script`. */
  invoker_type: string;
  /** `setTimeout`, `BUTTON#go.onclick`, the script URL, ... */
  invoker: string;
  source_url: string;
  source_function_name: string;
  source_char_position: number;
  /** ms */
  duration: number;
}

/** `page_long_task`: one main-thread task at least the configured long (page script, PerformanceObserver `longtask`). */
export interface PageLongTaskData extends EventContext {
  source_frame_id: string;
  /** Task start: ms since the document's time origin. */
  time: number;
  /** ms */
  duration: number;
  attribution: LongTaskAttribution[];
  /** Scripts of the long animation frame that holds the task, longest first (up to 5). */
  scripts?: LongTaskScript[];
}

/** `live_view_connect`: a viewer opened this session's live viewer. */
export interface LiveViewConnectData {
  /** The viewer session id (one per viewer page; its reconnects keep it). */
  session_id: string;
}

/** `live_view_disconnect`: the viewer left. */
export interface LiveViewDisconnectData {
  session_id: string;
  duration_ms: number;
}

// ---- end of the failure signals block ------------------------------------------------------------

export interface Envelope {
  seq: number;
  event: TelemetryEvent;
}

// ---- the injected page script's reports (docs/page-script.md) --------------------------------------------
// The page script runs in an isolated world and reports through a CDP binding. Each report is one
// JSON object; the agent validates it against these shapes and limits before building an event,
// and adds the context (target, frame, loader, url, nav_seq) itself.

/** What the agent passes to the page script when it is injected. */
export interface PageScriptOptions {
  /** Name of the binding to report through (exposed only in the script's isolated world). */
  binding: string;
  /** Install the click, key and scroll listeners (category `interaction`). */
  interaction: boolean;
  /** Install the layout-shift and LCP observers (category `page`). */
  page: boolean;
  /**
   * Report performance entries from before the script ran (a document that existed before the
   * agent attached). False when a category was just turned on: what happened while it was off
   * is not reported.
   */
  history: boolean;
  /** Report tasks at least this long (ms) as page_long_task; 0: no long-task observer. */
  longTaskMs?: number;
}

/** Property of the isolated world's global object holding the installed script (one per world). */
export const PAGE_SCRIPT_GLOBAL = '__browserTelemetryAgent';

/** Sizes the agent accepts in a report; the page script keeps within them. */
export const PAGE_SCRIPT_LIMITS = {
  /** One serialized report. */
  payloadChars: 32_768,
  selectorChars: 8_192,
  /** Click text (docs/events.md: at most 200 chars). */
  textChars: 200,
  keyChars: 64,
  tagChars: 256,
  /** LCP image URL; longer ones (data: URLs) are cut and the event marked truncated. */
  urlChars: 4_096,
  elementIdChars: 1_024,
} as const;

export interface ClickReport {
  type: 'interaction_click';
  x: number;
  y: number;
  selector: string;
  tag: string;
  text: string;
}

export interface KeyReport {
  type: 'interaction_key';
  key: string;
  selector: string;
  tag: string;
}

export interface ScrollSettledReport {
  type: 'interaction_scroll_settled';
  from_x: number;
  from_y: number;
  to_x: number;
  to_y: number;
  target_selector: string;
}

export interface LayoutShiftReport {
  type: 'page_layout_shift';
  time: number;
  value: number;
  had_recent_input: boolean;
}

export interface LcpReport {
  type: 'page_lcp';
  time: number;
  render_time: number;
  load_time: number;
  size: number;
  element_id: string;
  url: string;
  /** Handle of the LCP element kept by the script, for the agent to resolve to a backend node id. */
  element_ref?: number;
  /** The URL was cut to PAGE_SCRIPT_LIMITS.urlChars. */
  truncated?: true;
}

/** A long task (docs/page-script.md "Long tasks"). */
export interface LongTaskReport {
  type: 'page_long_task';
  time: number;
  duration: number;
  attribution: LongTaskAttribution[];
  scripts?: LongTaskScript[];
}

export type PageScriptReport = ClickReport | KeyReport | ScrollSettledReport | LayoutShiftReport | LcpReport | WebVitalsReport | LongTaskReport;
export type PageScriptReportType = PageScriptReport['type'];
