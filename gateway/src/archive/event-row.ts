// One archived event: what the archive keeps of an envelope the agent sent (docs/gateway.md
// "Storage"). The envelope on the wire is `{"seq":<seq>,"event":<event>}` (src/stream/sse-frame.ts
// writes it so); only the event's JSON is kept, byte for byte, with the columns the filters and
// the counts use, and the envelope is rebuilt around it when read: the same bytes come back.

import { assertNever, EVENT_TYPES, type EventMeta, type EventType } from 'browser-telemetry-agent/events';

/** `archive_events.kind`: what GET /browsers counts. */
export const EVENT_KIND = { other: 0, error: 1, failedRequest: 2 } as const;
export type EventKind = (typeof EVENT_KIND)[keyof typeof EVENT_KIND];

export interface ArchivedEvent {
  seq: number;
  /** Unix µs. */
  ts: number;
  /** The type as the agent sent it (a newer agent's types are kept too, and match no filter). */
  type: string;
  targetId: string | null;
  navSeq: number | null;
  kind: EventKind;
  /** The event's JSON text exactly as in the envelope. */
  eventJson: string;
}

const KNOWN_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES);

/** A type of this build's schema (a set: every archived event asks). */
function isKnownType(type: string): type is EventType {
  return KNOWN_TYPES.has(type);
}

/** An envelope the archive cannot keep (not JSON, no seq, no event): skipped and counted. */
export class MalformedEnvelope extends Error {
  override name = 'MalformedEnvelope';
}

interface WireEvent {
  ts?: unknown;
  type?: unknown;
  source?: { metadata?: { target_id?: unknown } };
  data?: { target_id?: unknown; nav_seq?: unknown; status?: unknown; canceled?: unknown };
}

/**
 * The archived form of one envelope's JSON text. The event's text is cut out of the envelope
 * when the envelope has the agent's layout (always, from this repository's agents); otherwise it
 * is serialized again from the parsed value.
 */
export function archivedEvent(envelopeJson: string): ArchivedEvent {
  let envelope: { seq?: unknown; event?: WireEvent };
  try {
    envelope = JSON.parse(envelopeJson) as typeof envelope;
  } catch {
    throw new MalformedEnvelope('the envelope is not JSON');
  }
  const { seq, event } = envelope ?? {};
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) throw new MalformedEnvelope('the envelope has no seq');
  if (typeof event !== 'object' || event === null || Array.isArray(event)) throw new MalformedEnvelope('the envelope has no event');
  const prefix = `{"seq":${seq},"event":`;
  const eventJson = envelopeJson.startsWith(prefix) && envelopeJson.endsWith('}') ? envelopeJson.slice(prefix.length, -1) : JSON.stringify(event);
  const type = typeof event.type === 'string' ? event.type : 'unknown';
  const data = typeof event.data === 'object' && event.data !== null ? event.data : undefined;
  const targetId = data?.target_id ?? event.source?.metadata?.target_id;
  const navSeq = data?.nav_seq;
  return {
    seq,
    ts: typeof event.ts === 'number' && Number.isFinite(event.ts) ? Math.trunc(event.ts) : 0,
    type,
    targetId: typeof targetId === 'string' ? targetId : null,
    navSeq: typeof navSeq === 'number' && Number.isSafeInteger(navSeq) ? navSeq : null,
    kind: kindOf(type, data),
    eventJson,
  };
}

function kindOf(type: string, data: WireEvent['data']): EventKind {
  // A newer agent's type counts as neither.
  if (!isKnownType(type)) return EVENT_KIND.other;
  switch (type) {
    case 'console_error':
      return EVENT_KIND.error;
    case 'network_loading_failed':
      // A canceled load is the page's own doing (navigated away, aborted fetch), not a failure.
      return data?.canceled === true ? EVENT_KIND.other : EVENT_KIND.failedRequest;
    case 'network_response':
      return typeof data?.status === 'number' && data.status >= 400 ? EVENT_KIND.failedRequest : EVENT_KIND.other;
    // Counted as neither an error nor a failed request.
    case 'console_log':
    case 'network_request':
    case 'network_idle':
    case 'network_download_started':
    case 'network_download_progress':
    case 'network_download_finished':
    case 'network_websocket_opened':
    case 'network_websocket_frame':
    case 'network_websocket_closed':
    case 'network_eventsource_opened':
    case 'network_eventsource_message':
    case 'page_navigation':
    case 'page_dom_content_loaded':
    case 'page_load':
    case 'page_tab_opened':
    case 'page_layout_shift':
    case 'page_lcp':
    case 'page_layout_settled':
    case 'page_navigation_settled':
    case 'page_dialog_opened':
    case 'page_dialog_closed':
    case 'page_file_chooser_opened':
    case 'page_web_vitals':
    case 'page_crashed':
    case 'page_recovered':
    case 'page_unresponsive':
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
    case 'service_crashed':
    case 'system_oom_kill':
    case 'live_view_connect':
    case 'live_view_disconnect':
    case 'cdp_connect':
    case 'cdp_disconnect':
    case 'cdp_command':
    case 'api_call':
    case 'computer_action':
    case 'step':
      return EVENT_KIND.other;
    default:
      return assertNever(type);
  }
}

/** The envelope's JSON text of an archived event: `{"seq":<seq>,"event":<event>}`. */
export function envelopeJson(seq: number, eventJson: string): string {
  return `{"seq":${seq},"event":${eventJson}}`;
}

/** The SSE frame of an archived event, as the agent writes it (src/stream/sse-frame.ts). */
export function eventFrame(seq: number, eventJson: string): string {
  return `id: ${seq}\ndata: {"seq":${seq},"event":${eventJson}}\n\n`;
}

/** The filter metadata of an archived event (for matching it in memory, like the agent's log). */
export function metaOf(event: ArchivedEvent): EventMeta | undefined {
  const type = event.type;
  if (!isKnownType(type)) return undefined;
  return { ts: event.ts, type, targetId: event.targetId ?? undefined, navSeq: event.navSeq ?? undefined };
}
