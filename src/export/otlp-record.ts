// One telemetry event → one OpenTelemetry log record (docs/export.md "Log records"). Pure: the
// exporter calls it in its batch step, never on the event log's path. To change how one event
// type is exported, change its row in SEMCONV_FIELDS, HEADER_ATTRIBUTE or its case in headlineOf.

import type { Resource } from '@opentelemetry/resources';
import type { ReadableLogRecord } from '@opentelemetry/sdk-logs';
import { assertNever } from '../assert-never.ts';
import { contextOf } from '../event-data.ts';
import { EVENT_TYPE_CATEGORY, type EventType, type HeaderMap, type StackTrace, type TelemetryEvent } from '../../injected/schema.ts';

type Attributes = ReadableLogRecord['attributes'];
type AttributeValue = Attributes[string];
type SeverityNumber = NonNullable<ReadableLogRecord['severityNumber']>;
export type InstrumentationScope = ReadableLogRecord['instrumentationScope'];

/** Severity numbers of the OpenTelemetry log data model (INFO 9, WARN 13, ERROR 17). */
// eslint-disable-next-line @typescript-eslint/no-unsafe-enum-assignment -- the data model's number; @opentelemetry/api-logs is not a direct dependency
const INFO = { number: 9 as SeverityNumber, text: 'INFO' };
// eslint-disable-next-line @typescript-eslint/no-unsafe-enum-assignment -- the data model's number; @opentelemetry/api-logs is not a direct dependency
const WARN = { number: 13 as SeverityNumber, text: 'WARN' };
// eslint-disable-next-line @typescript-eslint/no-unsafe-enum-assignment -- the data model's number; @opentelemetry/api-logs is not a direct dependency
const ERROR = { number: 17 as SeverityNumber, text: 'ERROR' };

/** Attributes of our own: `bta.*`; the rest of `data` goes under DATA_PREFIX. */
export const DATA_PREFIX = 'bta.data.';

/**
 * `data` fields exported under an OpenTelemetry semantic-convention name instead of DATA_PREFIX.
 * `url` is the request's URL only in network events (elsewhere it is the document's).
 */
const SEMCONV_FIELDS: Partial<Record<EventType, Record<string, string>>> = {
  network_request: { url: 'url.full', method: 'http.request.method' },
  network_response: { url: 'url.full', method: 'http.request.method', status: 'http.response.status_code' },
  network_loading_failed: { url: 'url.full', error_text: 'error.type' },
  // Failure signals (docs/export.md "Failure signals").
  service_crashed: { pid: 'process.pid', exit_code: 'process.exit.code' },
  system_oom_kill: { pid: 'process.pid', process_name: 'process.executable.name' },
  live_view_connect: { session_id: 'bta.live_view.session_id' },
  live_view_disconnect: { session_id: 'bta.live_view.session_id' },
  // Dialogs, downloads, WebSockets, EventSource (docs/export.md "Log records").
  network_download_started: { url: 'url.full' },
  network_websocket_opened: { url: 'url.full', status: 'http.response.status_code' },
  network_websocket_frame: { url: 'url.full' },
  network_websocket_closed: { url: 'url.full' },
  network_eventsource_opened: { url: 'url.full', status: 'http.response.status_code' },
  network_eventsource_message: { url: 'url.full' },
};

/** Events whose `data.headers` become `http.{request,response}.header.<lowercase name>` (string[]). */
const HEADER_ATTRIBUTE: Partial<Record<EventType, string>> = {
  network_request: 'http.request.header.',
  network_response: 'http.response.header.',
  network_websocket_opened: 'http.response.header.',
  network_eventsource_opened: 'http.response.header.',
};

/**
 * The `data.text` that is the record's body, and so not repeated as `bta.data.text`; nor is
 * `data.args` when it is that text alone (a console call with one string argument).
 */
function bodyTextOf(event: TelemetryEvent): string | undefined {
  return event.type === 'console_log' || event.type === 'console_error' ? event.data?.text : undefined;
}

/** The methods semconv knows; any other is `_OTHER`, with the method in http.request.method_original. */
const KNOWN_METHODS = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'QUERY', 'TRACE']);

/** The record of one event; `seq` is its event log seq, `exportSeq` its place among the exported. */
export function toLogRecord(seq: number, exportSeq: number, event: TelemetryEvent, resource: Resource, scope: InstrumentationScope): ReadableLogRecord {
  const time = hrTimeFromMicros(event.ts);
  const attributes = attributesOf(seq, exportSeq, event);
  const { severity, body } = headlineOf(event, attributes);
  return {
    hrTime: time,
    // The agent observes an event as it happens: there is no later "observed" moment to report.
    hrTimeObserved: time,
    severityNumber: severity.number,
    severityText: severity.text,
    body,
    eventName: event.type,
    resource,
    instrumentationScope: scope,
    attributes,
    droppedAttributesCount: 0,
  };
}

/** Unix microseconds → [seconds, nanoseconds]. */
export function hrTimeFromMicros(ts: number): [number, number] {
  const micros = Math.round(ts);
  const seconds = Math.floor(micros / 1_000_000);
  return [seconds, (micros - seconds * 1_000_000) * 1000];
}

function attributesOf(seq: number, exportSeq: number, event: TelemetryEvent): Attributes {
  const source = event.source;
  const attributes: Attributes = {
    'bta.seq': seq,
    'bta.export.seq': exportSeq,
    'bta.category': EVENT_TYPE_CATEGORY[event.type] ?? 'monitor',
    'bta.source.kind': source.kind,
  };
  if (source.event !== undefined) attributes['bta.source.event'] = source.event;
  const data = event.data;
  const targetId = contextOf(event)?.target_id;
  // The target's metadata, unless data carries the same context (target_id, target_type, session_id).
  if (source.metadata !== undefined && (targetId === undefined || targetId !== source.metadata.target_id)) {
    attributes['bta.source.metadata'] = source.metadata;
  }
  if (event.truncated === true) attributes['bta.truncated'] = true;
  if (data === undefined) return attributes;
  const semconv = SEMCONV_FIELDS[event.type];
  const headerPrefix = HEADER_ATTRIBUTE[event.type];
  const bodyText = bodyTextOf(event);
  for (const field in data) {
    // Every field of any type's data, read alike: the attributes are named from the field.
    const value: unknown = Reflect.get(data, field);
    if (value === undefined) continue;
    const name = semconv?.[field];
    if (bodyText !== undefined && (field === 'text' || (field === 'args' && isJustText(value, bodyText)))) continue;
    else if (field === 'stack_trace') attributes['code.stacktrace'] = stackText(value as StackTrace);
    else if (name === 'http.request.method') setMethod(attributes, text(value));
    else if (name === 'url.full') attributes[name] = redactCredentials(text(value));
    else if (name !== undefined) attributes[name] = value as AttributeValue;
    else if (field === 'headers' && headerPrefix !== undefined) setHeaders(attributes, headerPrefix, value as HeaderMap);
    // Objects and arrays keep their structure: OTLP log attributes take any value (kvlist, array).
    else attributes[dataKey(field)] = value as AttributeValue;
  }
  return attributes;
}

/** `args` that say no more than the text: one string, equal to it. */
function isJustText(args: unknown, text: unknown): boolean {
  return Array.isArray(args) && args.length === 1 && args[0] === text;
}

function setMethod(attributes: Attributes, method: string): void {
  if (KNOWN_METHODS.has(method)) {
    attributes['http.request.method'] = method;
  } else {
    attributes['http.request.method'] = '_OTHER';
    attributes['http.request.method_original'] = method;
  }
}

/**
 * A CDP stack trace as V8 prints one (`    at fn (url:line:column)`, 1-based), the way semconv's
 * code.stacktrace wants it; an async parent's frames follow a `    --- <description> ---` line.
 */
export function stackText(stack: StackTrace): string {
  let out = '';
  for (let part: StackTrace | undefined = stack; part !== undefined; part = part.parent) {
    if (part !== stack) out += `\n    --- ${part.description ?? 'async'} ---`;
    for (const frame of part.callFrames) {
      const where = `${frame.url || '<anonymous>'}:${frame.lineNumber + 1}:${frame.columnNumber + 1}`;
      out += `${out === '' ? '' : '\n'}    at ${frame.functionName === '' ? where : `${frame.functionName} (${where})`}`;
    }
  }
  return out;
}

/** CDP joins the values of a repeated header with `\n`; semconv wants one array item per value. */
function setHeaders(attributes: Attributes, prefix: string, headers: HeaderMap): void {
  for (const name in headers) {
    const value = headers[name]!;
    attributes[headerKey(prefix, name)] = value.includes('\n') ? value.split('\n') : [value];
  }
}

/** url.full MUST NOT carry credentials (semconv): user and password become REDACTED. */
function redactCredentials(url: string): string {
  const at = url.indexOf('@');
  if (at === -1) return url;
  try {
    const parsed = new URL(url);
    if (parsed.username === '' && parsed.password === '') return url;
    if (parsed.username !== '') parsed.username = 'REDACTED';
    if (parsed.password !== '') parsed.password = 'REDACTED';
    return parsed.href;
  } catch {
    return url;
  }
}

interface Headline {
  severity: typeof INFO;
  /** The log line a backend shows: the message, or what the request was; else the event type. */
  body: string;
}

/** The record's severity and body: one case per event type. */
function headlineOf(event: TelemetryEvent, attributes: Attributes): Headline {
  const url = attributes['url.full'];
  switch (event.type) {
    case 'console_log':
      // CDP's console type for console.warn.
      return { severity: event.data?.level === 'warning' ? WARN : INFO, body: text(event.data?.text ?? '') };
    case 'console_error':
      return { severity: ERROR, body: text(event.data?.text ?? '') };
    case 'network_request':
      return { severity: INFO, body: `${text(attributes['http.request.method_original'] ?? attributes['http.request.method'])} ${text(url)}` };
    case 'network_response': {
      const method = attributes['http.request.method_original'] ?? attributes['http.request.method'];
      return { severity: INFO, body: `${text(event.data?.status)} ${method === undefined ? '' : `${text(method)} `}${text(url)}` };
    }
    case 'network_loading_failed':
      return { severity: WARN, body: `${text(event.data?.error_text)} ${text(url)}` };
    case 'page_navigation':
    case 'page_tab_opened':
      return { severity: INFO, body: text(event.data?.url ?? event.type) };
    case 'service_crashed': {
      const data = event.data;
      const how = [data?.phase, data?.pid === undefined ? undefined : `pid ${text(data.pid)}`, data?.signal ?? data?.exit_code];
      const body = `${text(data?.service_name)} crashed (${how
        .filter((part) => part !== undefined)
        .map(text)
        .join(', ')})`;
      return { severity: ERROR, body };
    }
    case 'system_oom_kill':
      return { severity: ERROR, body: `OOM kill: ${text(event.data?.process_name)} (pid ${text(event.data?.pid)}, ${text(event.data?.rss_kb)} kB)` };
    case 'page_crashed':
      return { severity: ERROR, body: `tab crashed (${text(event.data?.status)}) ${text(event.data?.url ?? '')}`.trimEnd() };
    case 'page_unresponsive':
      return { severity: WARN, body: event.type };
    case 'page_dialog_opened':
      return { severity: INFO, body: `${text(event.data?.dialog_type)}: ${text(event.data?.message)}` };
    case 'network_download_started':
      return { severity: INFO, body: `download ${text(event.data?.suggested_filename)} ${text(url)}` };
    case 'step':
      return { severity: INFO, body: `step: ${text(event.data?.name)}` };
    case 'network_download_finished':
      return { severity: event.data?.state === 'completed' ? INFO : WARN, body: event.type };
    // INFO, and the type's name says it all.
    case 'network_idle':
    case 'network_download_progress':
    case 'network_websocket_opened':
    case 'network_websocket_frame':
    case 'network_websocket_closed':
    case 'network_eventsource_opened':
    case 'network_eventsource_message':
    case 'page_dom_content_loaded':
    case 'page_load':
    case 'page_layout_shift':
    case 'page_lcp':
    case 'page_layout_settled':
    case 'page_navigation_settled':
    case 'page_dialog_closed':
    case 'page_file_chooser_opened':
    case 'page_web_vitals':
    case 'page_recovered':
    case 'page_responsive':
    case 'page_long_task':
    case 'interaction_click':
    case 'interaction_key':
    case 'interaction_scroll_settled':
    case 'monitor_screenshot':
    case 'monitor_disconnected':
    case 'monitor_reconnected':
    case 'monitor_reconnect_failed':
    case 'monitor_init_failed':
    case 'replay_started':
    case 'replay_stopped':
    case 'live_view_connect':
    case 'live_view_disconnect':
    case 'cdp_connect':
    case 'cdp_disconnect':
    case 'cdp_command':
    case 'api_call':
    case 'computer_action':
      return { severity: INFO, body: event.type };
    default:
      return assertNever(event);
  }
}

/** A value from the event's data as a template literal prints it (the fields read here are strings or numbers). */
function text(value: unknown): string {
  return String(value);
}

// Attribute names are built once per field or header name, not once per event: the names repeat.
const MAX_CACHED_NAMES = 4096;
const dataKeys = new Map<string, string>();
/** Per prefix (request, response): header name as CDP gives it → attribute name. */
const headerKeys = new Map<string, Map<string, string>>();

function dataKey(field: string): string {
  let key = dataKeys.get(field);
  if (key === undefined) {
    key = DATA_PREFIX + field;
    if (dataKeys.size < MAX_CACHED_NAMES) dataKeys.set(field, key);
  }
  return key;
}

function headerKey(prefix: string, name: string): string {
  let names = headerKeys.get(prefix);
  if (names === undefined) headerKeys.set(prefix, (names = new Map<string, string>()));
  let key = names.get(name);
  if (key === undefined) {
    key = prefix + name.toLowerCase();
    if (names.size < MAX_CACHED_NAMES) names.set(name, key);
  }
  return key;
}
