// HAR 1.2 from the network and page events of a session (docs/export.md "HAR"). Pure: events go
// in, in seq order, and pieces of the JSON document come out, so a caller can stream a document
// of any size. Only requests still in flight are held: an entry is written as soon as its
// request's end (response, failure or next redirect hop) is seen. Entries therefore come in the
// order their requests ended; pages, which are few, are kept and written last.

import { assertNever, skipUnknown } from '../assert-never.ts';
import type { HarCookie, HarEntry, HarHeader, HarPage, HarTimings } from './har-types.ts';
import { HarWebSocket } from './har-websocket.ts';
import type {
  EventContext,
  HeaderMap,
  NetworkLoadingFailedData,
  NetworkRequestData,
  NetworkResponseData,
  NetworkTiming,
  NetworkTransferData,
  PageNavigationData,
  PageTimingData,
  TelemetryEvent,
} from '../../injected/schema.ts';

/** The event types a HAR is built from. */
export const HAR_EVENT_TYPES = [
  'network_request',
  'network_response',
  'network_loading_failed',
  'page_navigation',
  'page_dom_content_loaded',
  'page_load',
  // WebSockets (har-websocket.ts).
  'network_websocket_opened',
  'network_websocket_frame',
  'network_websocket_closed',
] as const;
export type HarEventType = (typeof HAR_EVENT_TYPES)[number];

export interface HarOptions {
  creator: { name: string; version: string };
  /**
   * Only these navigations of their tab (`nav_seq`): pages with that nav_seq and their entries.
   * Applied here, not by the history filter, because a navigation's own document request starts
   * under the previous nav_seq and page_navigation carries none (see pageOf).
   */
  navSeqs?: ReadonlySet<number>;
  /**
   * Receives each entry as an object instead of its JSON in the returned text (the trace export
   * reshapes entries: no JSON written only to be parsed again). The pages are still returned by end().
   */
  onEntry?: (entry: HarEntry) => void;
}

export type { HarCookie, HarEntry, HarHeader, HarPage, HarTimings, HarWebSocketMessage } from './har-types.ts';

// ---- the builder ------------------------------------------------------------------------------

type RequestEvent = TelemetryEvent<'network_request'>;

/** How a request ended, as far as the events tell. */
export type Ending =
  | { kind: 'response'; ts: number; data: NetworkResponseData; truncated: boolean }
  | { kind: 'redirect'; ts: number; hop: NonNullable<NetworkRequestData['redirect_response']>; location: string }
  | { kind: 'failed'; ts: number; data: NetworkLoadingFailedData }
  | { kind: 'none' };

/** One top-level navigation of a tab. */
interface PageState {
  id: string;
  tab: string;
  loaderId: string;
  url: string;
  /** Unix µs: the start of its document request, else its commit. */
  startedTs: number;
  navSeq: number | undefined;
  committed: boolean;
  referenced: boolean;
  contentLoadTs: number | undefined;
  loadTs: number | undefined;
}

export class HarBuilder {
  /** Requests seen starting whose end is not seen yet, by request id. */
  private readonly inFlight = new Map<string, RequestEvent>();
  private readonly pages: PageState[] = [];
  /** `tab loader` → page. */
  private readonly pageByLoader = new Map<string, PageState>();
  /** `tab nav_seq` → page. */
  private readonly pageByNavSeq = new Map<string, PageState>();
  /** The latest nav_seq seen of each tab (mirrors the agent's count: +1 per top-level commit). */
  private readonly tabNavSeq = new Map<string, number>();
  /** Frame id → its tab's target id, and out-of-process iframe target → its tab. */
  private readonly frameTab = new Map<string, string>();
  private readonly targetTab = new Map<string, string>();
  private entries = 0;
  /** WebSockets open (har-websocket.ts), by request id. */
  private readonly sockets = new Map<string, HarWebSocket>();

  constructor(private readonly options: HarOptions) {}

  /** Requests still waiting for their end (the builder's memory). */
  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /** The document's opening, up to the first entry. */
  begin(): string {
    return `{"log":{"version":"1.2","creator":${JSON.stringify(this.options.creator)},"entries":[`;
  }

  /** One event, in seq order; returns the JSON text to append ('' when nothing is complete). */
  add(event: TelemetryEvent): string {
    switch (event.type) {
      case 'network_request':
      case 'network_response':
      case 'network_loading_failed':
      case 'page_navigation':
      case 'page_dom_content_loaded':
      case 'page_load':
      case 'network_websocket_opened':
      case 'network_websocket_frame':
      case 'network_websocket_closed':
        return this.addHarEvent(event);
      // No part in a HAR.
      case 'console_log':
      case 'console_error':
      case 'network_idle':
      case 'network_download_started':
      case 'network_download_progress':
      case 'network_download_finished':
      case 'network_eventsource_opened':
      case 'network_eventsource_message':
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
        return '';
      default:
        skipUnknown(event);
        return '';
    }
  }

  /** An event of HAR_EVENT_TYPES (the history filter of a HAR asks for these). */
  private addHarEvent(event: TelemetryEvent<HarEventType>): string {
    if (event.data === undefined) return '';
    switch (event.type) {
      case 'network_request':
        return this.onRequest(event);
      case 'network_response':
        return this.finish(event.data.request_id, { kind: 'response', ts: event.ts, data: event.data, truncated: event.truncated === true });
      case 'network_loading_failed':
        return this.finish(event.data.request_id, { kind: 'failed', ts: event.ts, data: event.data });
      case 'page_navigation':
        this.onNavigation(event.ts, event.data);
        return '';
      case 'page_dom_content_loaded':
      case 'page_load':
        this.onPageTiming(event.type, event.ts, event.data);
        return '';
      case 'network_websocket_opened':
        this.sockets.set(event.data.request_id, new HarWebSocket(event.ts, event.data));
        return '';
      case 'network_websocket_frame':
        this.sockets.get(event.data.request_id)?.add(event);
        return '';
      case 'network_websocket_closed': {
        const data = event.data;
        const socket = this.sockets.get(data.request_id);
        this.sockets.delete(data.request_id);
        return socket === undefined ? '' : this.writeEntry(socket.opened, socket.entry(event.ts, data.dropped_frames ?? 0));
      }
      default:
        return assertNever(event);
    }
  }

  /** The rest: requests that never ended, the pages, and the closing brackets. */
  end(): string {
    let out = '';
    for (const request of this.inFlight.values()) out += this.write(request, { kind: 'none' }, undefined);
    this.inFlight.clear();
    for (const socket of this.sockets.values()) out += this.writeEntry(socket.opened, socket.entry(undefined, 0));
    this.sockets.clear();
    const pages: HarPage[] = [];
    for (const page of this.pages) {
      if (!page.committed && !page.referenced) continue;
      if (!this.pageWanted(page)) continue;
      pages.push({
        startedDateTime: isoTime(page.startedTs),
        id: page.id,
        title: page.url,
        pageTimings: { onContentLoad: sinceStart(page, page.contentLoadTs), onLoad: sinceStart(page, page.loadTs) },
      });
    }
    return `${out}],"pages":${JSON.stringify(pages)}}}`;
  }

  // ---- events -----------------------------------------------------------------------------------

  private onRequest(event: RequestEvent): string {
    const data = event.data!;
    this.learnNavSeq(data);
    if (isTabDocument(data)) {
      // The navigation's own request: it starts the page (its loader is the new document's).
      const page = this.ensurePage(data.target_id!, data.loader_id!, data.url ?? '', event.ts);
      if (event.ts < page.startedTs) page.startedTs = event.ts;
    }
    let out = '';
    const earlier = this.inFlight.get(data.request_id);
    if (earlier !== undefined) {
      // A redirect hop ends the previous hop with its 3xx; an id seen again otherwise is a new request.
      const ending: Ending =
        data.is_redirect && data.redirect_response !== undefined
          ? { kind: 'redirect', ts: event.ts, hop: data.redirect_response, location: data.url ?? '' }
          : { kind: 'none' };
      out = this.write(earlier, ending, ending.kind === 'redirect' ? event.ts : undefined);
    }
    this.inFlight.set(data.request_id, event);
    return out;
  }

  private finish(requestId: string, ending: Ending): string {
    const request = this.inFlight.get(requestId);
    if (request !== undefined) this.inFlight.delete(requestId);
    if (ending.kind === 'response') this.learnNavSeq(ending.data);
    return this.write(request, ending, undefined);
  }

  private onNavigation(ts: number, data: PageNavigationData): void {
    const target = data.target_id;
    if (target === undefined) return;
    if (data.target_type === 'page') this.frameTab.set(data.frame_id, target);
    else if (data.parent_frame_id !== undefined) {
      // An out-of-process iframe: its requests count toward the tab of its parent frame.
      const tab = this.frameTab.get(data.parent_frame_id);
      if (tab !== undefined) {
        this.frameTab.set(data.frame_id, tab);
        this.targetTab.set(target, tab);
      }
    }
    // The agent's rule for a new nav_seq: the tab's main frame committed a new document.
    if (data.target_type !== 'page' || data.frame_id !== target || data.parent_frame_id !== undefined) return;
    const page = this.ensurePage(target, data.loader_id, data.url, ts);
    page.committed = true;
    page.url = data.url;
    const previous = this.tabNavSeq.get(target);
    if (previous !== undefined && page.navSeq === undefined) {
      this.tabNavSeq.set(target, previous + 1);
      this.setNavSeq(page, previous + 1);
    }
  }

  private onPageTiming(type: 'page_dom_content_loaded' | 'page_load', ts: number, data: PageTimingData): void {
    this.learnNavSeq(data);
    // The tab's own document only (an iframe's load is not the page's).
    if (data.target_type !== 'page' || data.target_id === undefined || (data.frame_id !== undefined && data.frame_id !== data.target_id)) return;
    const page =
      (data.loader_id !== undefined ? this.pageByLoader.get(`${data.target_id} ${data.loader_id}`) : undefined) ??
      (data.nav_seq !== undefined ? this.pageByNavSeq.get(`${data.target_id} ${data.nav_seq}`) : undefined);
    if (page === undefined) return;
    if (type === 'page_dom_content_loaded') page.contentLoadTs ??= ts;
    else page.loadTs ??= ts;
  }

  // ---- pages ------------------------------------------------------------------------------------

  private ensurePage(tab: string, loaderId: string, url: string, ts: number): PageState {
    const key = `${tab} ${loaderId}`;
    let page = this.pageByLoader.get(key);
    if (page === undefined) {
      page = {
        id: `page_${this.pages.length + 1}`,
        tab,
        loaderId,
        url,
        startedTs: ts,
        navSeq: undefined,
        committed: false,
        referenced: false,
        contentLoadTs: undefined,
        loadTs: undefined,
      };
      this.pages.push(page);
      this.pageByLoader.set(key, page);
    }
    return page;
  }

  private setNavSeq(page: PageState, navSeq: number): void {
    page.navSeq = navSeq;
    this.pageByNavSeq.set(`${page.tab} ${navSeq}`, page);
  }

  /**
   * What an event of a tab tells of its nav_seq: the tab's count so far, and the nav_seq of the
   * page whose document issued it. A navigation's own document request is left out: it starts
   * under the previous nav_seq.
   */
  private learnNavSeq(data: EventContext & { resource_type?: string }): void {
    if (data.nav_seq === undefined || data.target_id === undefined || data.target_type !== 'page' || isTabDocument(data)) return;
    const tab = data.target_id;
    const known = this.tabNavSeq.get(tab);
    if (known === undefined || data.nav_seq > known) this.tabNavSeq.set(tab, data.nav_seq);
    if (data.loader_id === undefined) return;
    const page = this.pageByLoader.get(`${tab} ${data.loader_id}`);
    if (page !== undefined && page.navSeq === undefined) this.setNavSeq(page, data.nav_seq);
  }

  /** The page a request belongs to: its document's loader, else its tab's nav_seq. */
  private pageOf(ctx: EventContext): PageState | undefined {
    if (ctx.target_id === undefined) return undefined;
    const tab = this.targetTab.get(ctx.target_id) ?? ctx.target_id;
    if (ctx.loader_id !== undefined) {
      const page = this.pageByLoader.get(`${tab} ${ctx.loader_id}`);
      if (page !== undefined) return page;
    }
    return ctx.nav_seq !== undefined ? this.pageByNavSeq.get(`${tab} ${ctx.nav_seq}`) : undefined;
  }

  private pageWanted(page: PageState): boolean {
    const wanted = this.options.navSeqs;
    return wanted === undefined || (page.navSeq !== undefined && wanted.has(page.navSeq));
  }

  // ---- entries ----------------------------------------------------------------------------------

  /** The entry's JSON with its separator; '' when the nav_seq filter leaves it out. */
  private write(request: RequestEvent | undefined, ending: Ending, hopEndTs: number | undefined): string {
    const ctx: EventContext | undefined = request?.data ?? (ending.kind === 'response' || ending.kind === 'failed' ? ending.data : undefined);
    if (ctx === undefined) return '';
    const page = this.pageOf(ctx);
    if (!this.navSeqWanted(ctx, page)) return '';
    return this.writeEntry(ctx, buildEntry(request, ending, hopEndTs), page);
  }

  private navSeqWanted(ctx: EventContext, page: PageState | undefined): boolean {
    const wanted = this.options.navSeqs;
    if (wanted === undefined) return true;
    const navSeq = page !== undefined ? page.navSeq : ctx.nav_seq;
    return navSeq !== undefined && wanted.has(navSeq);
  }

  /** An entry of `ctx`'s page (when the nav_seq filter keeps it) with its separator. */
  private writeEntry(ctx: EventContext, entry: HarEntry, page = this.pageOf(ctx)): string {
    if (!this.navSeqWanted(ctx, page)) return '';
    if (page !== undefined) {
      page.referenced = true;
      entry.pageref = page.id;
    }
    if (this.options.onEntry !== undefined) {
      this.options.onEntry(entry);
      return '';
    }
    return (this.entries++ === 0 ? '' : ',') + JSON.stringify(entry);
  }
}

/** A tab's main-frame document request (a top-level navigation). */
function isTabDocument(data: EventContext & { resource_type?: string }): boolean {
  return (
    data.resource_type === 'Document' &&
    data.target_type === 'page' &&
    data.frame_id !== undefined &&
    data.frame_id === data.target_id &&
    data.loader_id !== undefined
  );
}

function sinceStart(page: PageState, ts: number | undefined): number {
  return ts === undefined ? -1 : round3(Math.max(0, ts - page.startedTs) / 1000);
}

// ---- one entry --------------------------------------------------------------------------------

/**
 * One HAR entry from a request (undefined when its start was not recorded) and how it ended.
 * `hopEndTs`: for a redirect hop, when the next hop started (Unix µs).
 */
export function buildEntry(request: RequestEvent | undefined, ending: Ending, hopEndTs?: number): HarEntry {
  const req = request?.data;
  const res = ending.kind === 'response' ? ending.data : undefined;
  const transfer: NetworkTransferData | undefined = ending.kind === 'response' ? ending.data : ending.kind === 'redirect' ? ending.hop : undefined;
  const url = req?.url ?? (ending.kind === 'response' || ending.kind === 'failed' ? ending.data.url : undefined) ?? '';
  const method = req?.method ?? res?.method ?? 'GET';
  const httpVersion = httpVersionOf(transfer?.protocol);
  const comments: string[] = [];

  // When the network stack began the request (CDP requestTime), in Unix µs.
  const anchorTs = ending.kind === 'response' ? ending.ts : ending.kind === 'redirect' ? ending.ts : undefined;
  const offset = transfer?.timing?.request_time_offset;
  const issuedTs = request?.ts;
  const stackStartTs = anchorTs !== undefined && offset !== undefined ? anchorTs + offset * 1000 : issuedTs;
  const startTs = issuedTs ?? stackStartTs ?? (ending.kind === 'none' ? 0 : ending.ts);
  // The end is known for a finished response (it carries encoded_data_length), a failure and a hop.
  let endTs: number | undefined;
  if (ending.kind === 'response' && ending.data.encoded_data_length !== undefined) endTs = ending.ts;
  else if (ending.kind === 'failed') endTs = ending.ts;
  else if (ending.kind === 'redirect') endTs = hopEndTs ?? ending.ts;
  const timings = harTimings(transfer?.timing, startTs, stackStartTs ?? startTs, endTs);

  const requestHeaders = harHeaders(req?.headers);
  const entry: HarEntry = {
    startedDateTime: isoTime(startTs),
    time: totalTime(timings),
    request: {
      method,
      url,
      httpVersion,
      cookies: requestCookies(req?.headers),
      headers: requestHeaders,
      queryString: queryString(url),
      headersSize: -1,
      bodySize: req?.post_data !== undefined ? Buffer.byteLength(req.post_data, 'utf8') : 0,
    },
    response: emptyResponse(),
    cache: {},
    timings,
  };
  if (req?.post_data !== undefined) entry.request.postData = { mimeType: headerValue(req.headers, 'content-type') ?? '', text: req.post_data };
  if (request === undefined) comments.push('request start not recorded (before the export window or before the agent attached)');
  else if (request.truncated) comments.push('request event truncated by the agent (a header value or the post data was cut)');

  const response = entry.response;
  if (ending.kind === 'response') {
    const data = ending.data;
    response.status = data.status;
    response.statusText = data.status_text;
    response.httpVersion = httpVersion;
    response.headers = harHeaders(data.headers);
    response.cookies = responseCookies(data.headers);
    const location = headerValue(data.headers, 'location');
    if (location !== undefined) response.redirectURL = resolveUrl(location, url);
    const content = response.content;
    content.mimeType = data.mime_type;
    content.size = data.data_length ?? (data.body !== undefined ? bodyBytes(data) : 0);
    if (data.body !== undefined) {
      content.text = data.body;
      if (data.body_encoding === 'base64') content.encoding = 'base64';
      const kept = bodyBytes(data);
      if (ending.truncated && data.data_length !== undefined && kept < data.data_length)
        content.comment = `body truncated by the agent: ${kept} of ${data.data_length} bytes kept`;
    }
    if (data.status === 304) response.bodySize = 0;
    if (data.encoded_data_length !== undefined) response._transferSize = data.encoded_data_length;
    if (ending.truncated && content.comment === undefined)
      comments.push('response event truncated by the agent (a header value or the body was cut, or a wanted body was over the fetch limit)');
    if (data.encoded_data_length === undefined) comments.push('the end of this response was not reported (its document was left)');
  } else if (ending.kind === 'redirect') {
    response.status = ending.hop.status;
    response.statusText = ending.hop.status_text;
    response.httpVersion = httpVersion;
    response.headers = harHeaders(ending.hop.headers);
    response.cookies = responseCookies(ending.hop.headers);
    response.redirectURL = ending.location;
  } else if (ending.kind === 'failed') {
    response._error = ending.data.error_text;
    if (ending.data.canceled) comments.push('canceled');
  } else {
    comments.push('no response recorded (still in flight when exported, or abandoned)');
  }

  const resourceType = req?.resource_type ?? res?.resource_type ?? (ending.kind === 'failed' ? ending.data.resource_type : undefined);
  if (resourceType !== undefined) entry._resourceType = resourceType.toLowerCase();
  if (transfer?.remote_ip_address) entry.serverIPAddress = bareIp(transfer.remote_ip_address);
  if (transfer?.connection_id) entry.connection = String(transfer.connection_id);
  if (transfer?.from_disk_cache) entry._fromCache = 'disk';
  if (transfer?.from_service_worker) entry._fetchedViaServiceWorker = true;
  if (comments.length > 0) entry.comment = comments.join('; ');
  return entry;
}

function emptyResponse(): HarEntry['response'] {
  return {
    status: 0,
    statusText: '',
    httpVersion: '',
    cookies: [],
    headers: [],
    content: { size: 0, mimeType: '' },
    redirectURL: '',
    headersSize: -1,
    bodySize: -1,
  };
}

/**
 * HAR timings (ms) the way Chrome DevTools derives them from CDP's resource timing: `blocked` is
 * the queueing before the network stack took the request plus the wait for a socket; `connect`
 * includes `ssl`; `receive` runs from the last header byte to the end of loading. Without resource
 * timing (memory cache, data: URLs, failures before a response) the whole time is `wait`.
 */
export function harTimings(timing: NetworkTiming | undefined, startTs: number, stackStartTs: number, endTs: number | undefined): HarTimings {
  const timings: HarTimings = { blocked: -1, dns: -1, connect: -1, send: 0, wait: 0, receive: 0, ssl: -1 };
  if (timing === undefined) {
    if (endTs !== undefined) timings.wait = round3(Math.max(0, endTs - startTs) / 1000);
    return timings;
  }
  const queued = Math.max(0, stackStartTs - startTs) / 1000;
  const firstPhase = leastNonNegative(timing.dns_start, timing.connect_start, timing.send_start);
  timings.blocked = round3(queued + (firstPhase ?? 0));
  if (timing.dns_start >= 0 && timing.dns_end >= 0) timings.dns = round3(timing.dns_end - timing.dns_start);
  if (timing.connect_start >= 0 && timing.connect_end >= 0) timings.connect = round3(timing.connect_end - timing.connect_start);
  if (timing.ssl_start >= 0 && timing.ssl_end >= 0) timings.ssl = round3(timing.ssl_end - timing.ssl_start);
  if (timing.send_start >= 0 && timing.send_end >= 0) timings.send = round3(Math.max(0, timing.send_end - timing.send_start));
  const sentAt = Math.max(timing.send_end, timing.connect_end, timing.dns_end, firstPhase ?? 0, 0);
  if (timing.receive_headers_end >= 0) timings.wait = round3(Math.max(0, timing.receive_headers_end - sentAt));
  if (endTs !== undefined && timing.receive_headers_end >= 0) {
    const headersAt = stackStartTs + timing.receive_headers_end * 1000;
    timings.receive = round3(Math.max(0, endTs - headersAt) / 1000);
  }
  return timings;
}

/** HAR `time`: the sum of the timings that apply (`ssl` is inside `connect`). */
function totalTime(t: HarTimings): number {
  let total = 0;
  for (const value of [t.blocked, t.dns, t.connect, t.send, t.wait, t.receive]) if (value > 0) total += value;
  return round3(total);
}

function leastNonNegative(...values: number[]): number | undefined {
  let least: number | undefined;
  for (const value of values) if (value >= 0 && (least === undefined || value < least)) least = value;
  return least;
}

// ---- fields -----------------------------------------------------------------------------------

/** CDP's protocol names in HAR's spelling. */
function httpVersionOf(protocol: string | undefined): string {
  if (protocol === undefined) return '';
  switch (protocol.toLowerCase()) {
    case 'http/1.0':
      return 'HTTP/1.0';
    case 'http/1.1':
      return 'HTTP/1.1';
    case 'h2':
      return 'HTTP/2.0';
    case 'h3':
    case 'http/3':
      return 'HTTP/3.0';
    default:
      return protocol;
  }
}

/** Header map → HAR headers; CDP joins repeated headers with `\n`, HAR lists each. */
function harHeaders(headers: HeaderMap | undefined): HarHeader[] {
  const out: HarHeader[] = [];
  if (headers === undefined) return out;
  for (const name in headers) {
    const value = headers[name]!;
    if (value.includes('\n')) for (const part of value.split('\n')) out.push({ name, value: part });
    else out.push({ name, value });
  }
  return out;
}

function headerValue(headers: HeaderMap | undefined, wanted: string): string | undefined {
  if (headers === undefined) return undefined;
  for (const name in headers) if (name.toLowerCase() === wanted) return headers[name];
  return undefined;
}

function requestCookies(headers: HeaderMap | undefined): HarCookie[] {
  const header = headerValue(headers, 'cookie');
  if (header === undefined) return [];
  const cookies: HarCookie[] = [];
  for (const part of header.split(/;\s*/)) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    cookies.push(eq === -1 ? { name: '', value: part } : { name: part.slice(0, eq).trim(), value: part.slice(eq + 1).trim() });
  }
  return cookies;
}

function responseCookies(headers: HeaderMap): HarCookie[] {
  const header = headerValue(headers, 'set-cookie');
  if (header === undefined) return [];
  const cookies: HarCookie[] = [];
  for (const line of header.split('\n')) {
    const [pair = '', ...attributes] = line.split(';');
    const eq = pair.indexOf('=');
    if (eq === -1) continue;
    const cookie: HarCookie = { name: pair.slice(0, eq).trim(), value: pair.slice(eq + 1).trim() };
    for (const attribute of attributes) {
      const aeq = attribute.indexOf('=');
      const key = (aeq === -1 ? attribute : attribute.slice(0, aeq)).trim().toLowerCase();
      const value = aeq === -1 ? '' : attribute.slice(aeq + 1).trim();
      if (key === 'path') cookie.path = value;
      else if (key === 'domain') cookie.domain = value;
      else if (key === 'httponly') cookie.httpOnly = true;
      else if (key === 'secure') cookie.secure = true;
      else if (key === 'samesite') cookie.sameSite = value;
      else if (key === 'expires') {
        const ms = Date.parse(value);
        if (!Number.isNaN(ms)) cookie.expires = new Date(ms).toISOString();
      }
    }
    cookies.push(cookie);
  }
  return cookies;
}

function queryString(url: string): HarHeader[] {
  const q = url.indexOf('?');
  if (q === -1) return [];
  const hash = url.indexOf('#', q);
  const out: HarHeader[] = [];
  for (const [name, value] of new URLSearchParams(url.slice(q + 1, hash === -1 ? undefined : hash))) out.push({ name, value });
  return out;
}

function resolveUrl(location: string, base: string): string {
  try {
    return new URL(location, base).href;
  } catch {
    return location;
  }
}

/** CDP writes an IPv6 address in brackets (`[::1]`); HAR wants the address. */
function bareIp(address: string): string {
  return address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
}

function bodyBytes(data: NetworkResponseData): number {
  const body = data.body ?? '';
  return data.body_encoding === 'base64' ? Buffer.byteLength(body, 'base64') : Buffer.byteLength(body, 'utf8');
}

/** Unix µs → ISO 8601 with milliseconds. */
function isoTime(us: number): string {
  return new Date(Math.floor(us / 1000)).toISOString();
}

function round3(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
