// WebSockets and EventSource (docs/events.md "WebSockets and EventSource"): network_websocket_opened,
// network_websocket_frame, network_websocket_closed, network_eventsource_opened and
// network_eventsource_message, from the Network domain the network family enables.
//
// Frames and messages go through a token bucket per socket (burst SOCKET_FRAME_BURST, then
// SOCKET_FRAMES_PER_SECOND): a chatty socket cannot flood the log; what it drops is counted in
// `bta_events_dropped_total{reason="rate_limit"}` and in the socket's close event. Payloads follow
// the body policy (docs/network.md "WebSocket and EventSource payloads"): text frames when the
// policy is on and admits `text/plain`, binary frames (base64) only when it admits
// `application/octet-stream` (not by default), EventSource data as a response of resource type
// `EventSource` and MIME type `text/event-stream`; each cut to `max_bytes` with `truncated`.
//
// A socket's end is reported however it ends (`ended_by`): Chromium sends `Network.webSocketClosed`
// for a close, but nothing when the page that opened the socket navigates away or its target goes,
// nor at the session's end; the agent then reports the end itself, so the socket's drops are
// never lost from its record.

import type { Protocol } from 'devtools-protocol';
import type {
  EventContext,
  NetworkEventSourceMessageData,
  NetworkWebSocketClosedData,
  NetworkWebSocketFrameData,
  WebSocketEnd,
} from '../../injected/schema.ts';
import { BodyMatcher, type BodyPolicy } from './body-policy.ts';
import type { TargetState } from './event-context.ts';
import type { FamilyHost, TelemetryFamily } from './family.ts';
import { capHeaders, cutBase64 } from './network.ts';
import { TokenBucket } from './token-bucket.ts';
import { truncateUtf8 } from './truncate.ts';

export const SOCKET_FRAME_BURST = 200;
export const SOCKET_FRAMES_PER_SECOND = 100;
/** Sockets tracked at most; beyond that the oldest is forgotten. */
const MAX_SOCKETS = 1000;
/** Sockets whose end the agent reported, remembered so that a late report of Chromium's is not a second end. */
const MAX_ENDED = 1000;
const CLOSE_OPCODE = 8;

interface SocketRecord {
  kind: 'websocket' | 'eventsource';
  ctx: EventContext;
  bucket: TokenBucket;
  dropped: number;
  code?: number;
  reason?: string;
}

export class SocketFamily implements TelemetryFamily {
  private host!: FamilyHost;
  private matcher: BodyMatcher | undefined;
  private readonly sockets = new Map<string, SocketRecord>();
  /** Request ids of sockets the agent ended (a late frame or close of theirs is not a new socket). */
  private readonly ended = new Set<string>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  start(host: FamilyHost): void {
    this.host = host;
    host.handle('Network.webSocketCreated', (p, s) => this.onCreated(p, s));
    host.handle('Network.webSocketHandshakeResponseReceived', (p, s) => this.onHandshake(p, s));
    host.handle('Network.webSocketFrameSent', (p, s) => this.onFrame(p, 'sent', s));
    host.handle('Network.webSocketFrameReceived', (p, s) => this.onFrame(p, 'received', s));
    host.handle('Network.webSocketClosed', (p, s) => this.onClosed(p, s));
    host.handle('Network.responseReceived', (p, s) => {
      if (p.type === 'EventSource') this.onEventSourceOpened(p, s);
    });
    host.handle('Network.eventSourceMessageReceived', (p, s) => this.onEventSourceMessage(p, s));
  }

  /** The tab's main frame committed another document: the previous document's sockets are gone. */
  frameNavigated(state: TargetState, _frame: Protocol.Page.Frame, isTabMainFrame: boolean): void {
    if (isTabMainFrame) this.endSockets(state.target.sessionId, 'navigated', state, 'Page.frameNavigated');
  }

  targetDetached(state: TargetState): void {
    this.endSockets(state.target.sessionId, 'target_closed', state, 'Target.detachedFromTarget');
  }

  /** The session ends (before the streams close): every open socket's end, with its drops. */
  endSession(): void {
    this.endSockets(undefined, 'session_end');
  }

  dispose(): void {
    this.sockets.clear();
    this.ended.clear();
  }

  /** Ends the sockets of one target (every target when `sessionId` is undefined), reporting each WebSocket's end. */
  private endSockets(sessionId: string | undefined, endedBy: WebSocketEnd, state?: TargetState, method?: string): void {
    for (const [id, record] of this.sockets) {
      if (sessionId !== undefined && record.ctx.session_id !== sessionId) continue;
      this.sockets.delete(id);
      if (record.kind !== 'websocket') continue;
      if (this.ended.size >= MAX_ENDED) this.ended.delete(this.ended.values().next().value!);
      this.ended.add(id);
      if (!this.host.admits('network')) continue;
      const options = method === undefined ? undefined : { method, origin: state };
      this.host.emit('network_websocket_closed', this.host.clock.nowUs(), closedData(id, record, endedBy), options);
    }
  }

  private recordOf(requestId: string, state: TargetState, kind: SocketRecord['kind'], url?: string): SocketRecord {
    let record = this.sockets.get(requestId);
    if (record === undefined) {
      const ctx = this.host.tracker.contextOf(state);
      if (url !== undefined) ctx.url = url;
      record = { kind, ctx, bucket: new TokenBucket(SOCKET_FRAME_BURST, SOCKET_FRAMES_PER_SECOND, this.now), dropped: 0 };
      if (this.sockets.size >= MAX_SOCKETS) this.sockets.delete(this.sockets.keys().next().value!);
      this.sockets.set(requestId, record);
    }
    return record;
  }

  private onCreated(p: Protocol.Network.WebSocketCreatedEvent, state: TargetState): void {
    this.ended.delete(p.requestId);
    this.recordOf(p.requestId, state, 'websocket', p.url);
  }

  private onHandshake(p: Protocol.Network.WebSocketHandshakeResponseReceivedEvent, state: TargetState): void {
    if (!this.host.admits('network')) return;
    const record = this.recordOf(p.requestId, state, 'websocket');
    const max = this.host.limits.maxHeaderValueBytes;
    const response = p.response;
    const requestHeaders = capHeaders(response.requestHeaders ?? {}, max);
    const headers = capHeaders(response.headers, max);
    this.host.emit(
      'network_websocket_opened',
      this.host.clock.fromMonotonicSeconds(p.timestamp),
      {
        ...record.ctx,
        request_id: p.requestId,
        status: response.status,
        status_text: response.statusText,
        request_headers: requestHeaders.value,
        headers: headers.value,
      },
      { method: 'Network.webSocketHandshakeResponseReceived', origin: state, truncated: requestHeaders.cut || headers.cut },
    );
  }

  private onFrame(p: Protocol.Network.WebSocketFrameSentEvent, direction: 'sent' | 'received', state: TargetState): void {
    // A frame still in flight when the agent ended its socket (its page went away).
    if (this.ended.has(p.requestId)) return;
    const frame = p.response;
    const record = this.recordOf(p.requestId, state, 'websocket');
    if (frame.opcode === CLOSE_OPCODE) {
      // A close frame's payload: a 2-byte code, then the UTF-8 reason (RFC 6455 §5.5.1).
      const bytes = Buffer.from(frame.payloadData, 'base64');
      if (bytes.length >= 2) {
        record.code = bytes.readUInt16BE(0);
        record.reason = bytes.subarray(2).toString('utf8');
      }
    }
    if (!this.host.admits('network')) return;
    if (!record.bucket.take()) {
      record.dropped++;
      this.host.stats.dropped.rate_limit++;
      return;
    }
    const text = frame.opcode === 1;
    const size = text ? Buffer.byteLength(frame.payloadData, 'utf8') : base64Bytes(frame.payloadData);
    const data: NetworkWebSocketFrameData = { ...record.ctx, request_id: p.requestId, direction, opcode: frame.opcode, size };
    let truncated = false;
    const matcher = this.bodyMatcher();
    if (matcher.policy.enabled && matcher.mimeAllowed(text ? 'text/plain' : 'application/octet-stream')) {
      const max = matcher.policy.max_bytes;
      if (text) {
        const cut = truncateUtf8(frame.payloadData, max);
        data.payload = cut.value;
        truncated = cut.cut;
      } else {
        const cut = cutBase64(frame.payloadData, max);
        data.payload = cut.value;
        truncated = cut.cut;
        data.payload_encoding = 'base64';
      }
    }
    const method = direction === 'sent' ? 'Network.webSocketFrameSent' : 'Network.webSocketFrameReceived';
    this.host.emit('network_websocket_frame', this.host.clock.fromMonotonicSeconds(p.timestamp), data, { method, origin: state, truncated });
  }

  private onClosed(p: Protocol.Network.WebSocketClosedEvent, state: TargetState): void {
    // Already ended by the agent: its end was reported once.
    if (this.ended.delete(p.requestId)) return;
    const record = this.sockets.get(p.requestId);
    this.sockets.delete(p.requestId);
    if (!this.host.admits('network')) return;
    const data =
      record === undefined
        ? { ...this.host.tracker.contextOf(state), request_id: p.requestId, ended_by: 'closed' as const }
        : closedData(p.requestId, record, 'closed');
    this.host.emit('network_websocket_closed', this.host.clock.fromMonotonicSeconds(p.timestamp), data, { method: 'Network.webSocketClosed', origin: state });
  }

  private onEventSourceOpened(p: Protocol.Network.ResponseReceivedEvent, state: TargetState): void {
    const record = this.recordOf(p.requestId, state, 'eventsource', p.response.url);
    if (!this.host.admits('network')) return;
    const headers = capHeaders(p.response.headers, this.host.limits.maxHeaderValueBytes);
    this.host.emit(
      'network_eventsource_opened',
      this.host.clock.fromMonotonicSeconds(p.timestamp),
      { ...record.ctx, request_id: p.requestId, status: p.response.status, status_text: p.response.statusText, headers: headers.value },
      { method: 'Network.responseReceived', origin: state, truncated: headers.cut },
    );
  }

  private onEventSourceMessage(p: Protocol.Network.EventSourceMessageReceivedEvent, state: TargetState): void {
    const record = this.recordOf(p.requestId, state, 'eventsource');
    if (!this.host.admits('network')) return;
    if (!record.bucket.take()) {
      record.dropped++;
      this.host.stats.dropped.rate_limit++;
      return;
    }
    const data: NetworkEventSourceMessageData = {
      ...record.ctx,
      request_id: p.requestId,
      event_name: p.eventName,
      event_id: p.eventId,
      size: Buffer.byteLength(p.data, 'utf8'),
    };
    let truncated = false;
    const matcher = this.bodyMatcher();
    if (matcher.wants('EventSource', 'text/event-stream')) {
      const cut = truncateUtf8(p.data, matcher.policy.max_bytes);
      data.data = cut.value;
      truncated = cut.cut;
    }
    this.host.emit('network_eventsource_message', this.host.clock.fromMonotonicSeconds(p.timestamp), data, {
      method: 'Network.eventSourceMessageReceived',
      origin: state,
      truncated,
    });
  }

  private bodyMatcher(): BodyMatcher {
    const policy: BodyPolicy = this.host.config.browser.network.bodies;
    if (this.matcher?.policy !== policy) this.matcher = new BodyMatcher(policy);
    return this.matcher;
  }
}

function closedData(requestId: string, record: SocketRecord, endedBy: WebSocketEnd): NetworkWebSocketClosedData {
  const data: NetworkWebSocketClosedData = { ...record.ctx, request_id: requestId, ended_by: endedBy };
  if (record.code !== undefined) data.code = record.code;
  if (record.reason !== undefined) data.reason = record.reason;
  if (record.dropped > 0) data.dropped_frames = record.dropped;
  return data;
}

/** Bytes a base64 string decodes to. */
function base64Bytes(b64: string): number {
  let padding = 0;
  if (b64.endsWith('==')) padding = 2;
  else if (b64.endsWith('=')) padding = 1;
  return Math.floor((b64.length * 3) / 4) - padding;
}
