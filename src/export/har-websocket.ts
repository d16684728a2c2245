// WebSockets in a HAR (docs/export.md "HAR"): one entry per socket, the handshake as request and
// response, its frames in `_webSocketMessages` as Playwright's HAR writes them (`type` send or
// receive, `time` in epoch seconds, `opcode`, `data`: text, or base64 for binary frames).

import type { HarEntry, HarWebSocketMessage } from './har-types.ts';
import type { NetworkWebSocketFrameData, NetworkWebSocketOpenedData, TelemetryEvent } from '../../injected/schema.ts';

/** Frames kept per socket while it is open; beyond that the entry says how many were left out. */
export type { HarWebSocketMessage } from './har-types.ts';

export const MAX_HAR_WEBSOCKET_MESSAGES = 10_000;

/** A socket between its opening and its close, as the HAR builder holds it. */
export class HarWebSocket {
  readonly messages: HarWebSocketMessage[] = [];
  omitted = 0;
  withoutPayload = 0;

  constructor(
    readonly openedTs: number,
    readonly opened: NetworkWebSocketOpenedData,
  ) {}

  add(event: TelemetryEvent<'network_websocket_frame'>): void {
    const frame: NetworkWebSocketFrameData = event.data!;
    if (this.messages.length >= MAX_HAR_WEBSOCKET_MESSAGES) {
      this.omitted++;
      return;
    }
    if (frame.payload === undefined) this.withoutPayload++;
    this.messages.push({ type: frame.direction === 'sent' ? 'send' : 'receive', time: event.ts / 1e6, opcode: frame.opcode, data: frame.payload ?? '' });
  }

  /** The entry; `closedTs` absent when the socket was still open at the export. */
  entry(closedTs: number | undefined, droppedFrames: number): HarEntry {
    const opened = this.opened;
    const comments: string[] = [];
    if (closedTs === undefined) comments.push('still open when exported');
    if (this.withoutPayload > 0) comments.push(`${this.withoutPayload} frame payloads not kept (body policy)`);
    if (this.omitted > 0) comments.push(`${this.omitted} frames over ${MAX_HAR_WEBSOCKET_MESSAGES} left out`);
    if (droppedFrames > 0) comments.push(`${droppedFrames} frames dropped by the agent's frame rate limit`);
    const end = closedTs ?? this.openedTs;
    const time = Math.max(0, Math.round((end - this.openedTs) / 1000));
    const entry: HarEntry = {
      startedDateTime: new Date(this.openedTs / 1000).toISOString(),
      time,
      request: {
        method: 'GET',
        url: opened.url ?? '',
        httpVersion: 'HTTP/1.1',
        cookies: [],
        headers: Object.entries(opened.request_headers).map(([name, value]) => ({ name, value })),
        queryString: [],
        headersSize: -1,
        bodySize: 0,
      },
      response: {
        status: opened.status,
        statusText: opened.status_text,
        httpVersion: 'HTTP/1.1',
        cookies: [],
        headers: Object.entries(opened.headers).map(([name, value]) => ({ name, value })),
        content: { size: 0, mimeType: 'x-unknown' },
        redirectURL: '',
        headersSize: -1,
        bodySize: 0,
      },
      cache: {},
      timings: { blocked: -1, dns: -1, connect: -1, send: 0, wait: time, receive: 0, ssl: -1 },
      _resourceType: 'websocket',
      _webSocketMessages: this.messages,
    };
    if (comments.length > 0) entry.comment = comments.join('; ');
    return entry;
  }
}
