// Network category translators (docs/events.md#types, §6.6): CDP Network params in, event data out, with the
// field caps applied. Pure: the family (network-family.ts) keeps the per-request state and
// decides when to call them. Hot path (a fetch-heavy page gives ~2k events/s): headers are
// passed through as CDP gave them unless a value must be cut, nothing is serialized, and `data`
// may share objects with `params`: treat params as consumed.

import type { Protocol } from 'devtools-protocol';
import type {
  EventContext,
  HeaderMap,
  NetworkLoadingFailedData,
  NetworkRedirectResponse,
  NetworkRequestData,
  NetworkResponseData,
  NetworkTiming,
  NetworkTransferData,
} from '../../injected/schema.ts';
import type { Limits } from '../limits.ts';
import { BodyMatcher, defaultBodyPolicy } from './body-policy.ts';
import { withContext } from './event-context.ts';
import { enforceDataLimit, truncateUtf8, type Cut } from './truncate.ts';

export interface Translated<D> {
  data: D;
  truncated: boolean;
}

/** The target whose session reported a request. */
export interface NetworkTarget {
  sessionId: string;
  targetId: string;
  type: string;
}

/** A body as `Network.getResponseBody` / `Network.getRequestPostData` hand it over. */
export interface FetchedBody {
  text: string;
  base64Encoded: boolean;
}

/** What the family knows of a response body when loading finished. */
export interface BodyOutcome {
  /** The body as fetched; undefined when not fetched or the fetch failed. */
  body?: FetchedBody;
  /** UTF-8 bytes of `body` kept (the body policy's `max_bytes`); default `limits.maxBodyBytes`. */
  maxBytes?: number;
  /** A wanted body was not fetched because it is over the fetch limit. */
  skippedForSize: boolean;
}

// ---- context --------------------------------------------------------------------------------

/**
 * The context of a request, fixed when it starts (docs/events.md#the-event-context): the reporting target, the frame
 * and loader of the request, the request URL and the tab's nav_seq at that moment.
 */
export function requestContext(params: Protocol.Network.RequestWillBeSentEvent, target: NetworkTarget, navSeq: number | undefined): EventContext {
  return networkContext(target, params.frameId, params.loaderId, requestUrl(params.request), navSeq);
}

/**
 * The context of a request first seen at its response: it began before the agent attached (or
 * before Network was enabled, like a service worker's own script). What the response tells.
 */
export function responseContext(params: Protocol.Network.ResponseReceivedEvent, target: NetworkTarget, navSeq: number | undefined): EventContext {
  return networkContext(target, params.frameId, params.loaderId, params.response.url || undefined, navSeq);
}

function networkContext(
  target: NetworkTarget,
  frameId: string | undefined,
  loaderId: string | undefined,
  url: string | undefined,
  navSeq: number | undefined,
): EventContext {
  const ctx: EventContext = { session_id: target.sessionId, target_id: target.targetId, target_type: target.type };
  if (frameId) ctx.frame_id = frameId;
  // Worker requests carry an empty loaderId.
  if (loaderId) ctx.loader_id = loaderId;
  if (url !== undefined) ctx.url = url;
  if (navSeq !== undefined) ctx.nav_seq = navSeq;
  return ctx;
}

/** The partial context of a failure of a request never seen before (docs/events.md#types). */
export function partialContext(target: NetworkTarget, navSeq: number | undefined): EventContext {
  const ctx: EventContext = { session_id: target.sessionId, target_id: target.targetId, target_type: target.type };
  if (navSeq !== undefined) ctx.nav_seq = navSeq;
  return ctx;
}

export function requestUrl(request: Protocol.Network.Request): string {
  return request.urlFragment ? request.url + request.urlFragment : request.url;
}

// ---- events ---------------------------------------------------------------------------------

/** Whether the request has a body that did not come inline (a Blob, or over `maxPostDataSize`). */
export function needsPostDataFetch(params: Protocol.Network.RequestWillBeSentEvent): boolean {
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- Chromium still sends postData, and postDataEntries holds base64 bytes, not this text
  return params.request.hasPostData === true && params.request.postData === undefined;
}

/**
 * `Network.requestWillBeSent` → network_request data. A redirect hop (the same requestId again,
 * with `redirectResponse`) is marked `is_redirect` with the URL it was redirected from.
 * `postData` is the body fetched with `Network.getRequestPostData` when it was not inline.
 */
export function translateRequestWillBeSent(
  params: Protocol.Network.RequestWillBeSentEvent,
  ctx: EventContext,
  limits: Limits,
  postData?: FetchedBody,
): Translated<NetworkRequestData> {
  const data = requestData(ctx, params.requestId, params.request.method) as NetworkRequestData;
  data.document_url = params.documentURL;
  const headers = capHeaders(params.request.headers, limits.maxHeaderValueBytes);
  let truncated = headers.cut;
  data.headers = headers.value;
  if (params.type !== undefined) data.resource_type = params.type;
  data.initiator_type = params.initiator.type;
  // For caused_by's initiator chain (docs/events.md "caused_by").
  const initiatorUrl = params.initiator.url ?? firstStackUrl(params.initiator.stack);
  if (initiatorUrl !== undefined && initiatorUrl !== '') data.initiator_url = initiatorUrl;
  let post: Cut<string> | undefined;
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- Chromium still sends postData, and postDataEntries holds base64 bytes, not this text
  if (params.request.postData !== undefined) post = truncateUtf8(params.request.postData, limits.maxPostDataBytes);
  else if (postData !== undefined) post = decodeBodyText(postData, limits.maxPostDataBytes);
  if (post !== undefined) {
    data.post_data = post.value;
    if (post.cut) truncated = true;
  }
  if (params.redirectResponse !== undefined) {
    data.is_redirect = true;
    data.redirect_url = params.redirectResponse.url;
    const hop = translateRedirectResponse(params.redirectResponse, params.timestamp, limits);
    data.redirect_response = hop.value;
    if (hop.cut) truncated = true;
  }
  if (enforceDataLimit(data, limits.maxEventDataBytes)) truncated = true;
  return { data, truncated };
}

/** What `loadingFinished` tells of a response (extension fields, docs/export.md "HAR"). */
export interface LoadingEnd {
  finished: Protocol.Network.LoadingFinishedEvent;
  /** Decoded body bytes: the sum of `dataReceived.dataLength`. */
  decodedBytes: number;
}

/**
 * `Network.loadingFinished` + the stored `responseReceived` → network_response data, in the
 * context of the request. `method` is unknown for a request that began before the agent attached.
 * `end` is undefined for a response whose end was never reported (its document was left).
 */
export function translateResponse(
  ctx: EventContext,
  method: string | undefined,
  received: Protocol.Network.ResponseReceivedEvent,
  outcome: BodyOutcome,
  limits: Limits,
  end?: LoadingEnd,
): Translated<NetworkResponseData> {
  const response = received.response;
  const data = requestData(ctx, received.requestId, method) as NetworkResponseData;
  data.status = response.status;
  data.status_text = response.statusText;
  const headers = capHeaders(response.headers, limits.maxHeaderValueBytes);
  let truncated = headers.cut || outcome.skippedForSize;
  data.headers = headers.value;
  data.mime_type = response.mimeType;
  data.resource_type = received.type;
  if (outcome.body !== undefined) {
    const maxBytes = outcome.maxBytes ?? limits.maxBodyBytes;
    // Bytes of a non-textual type (an image the body policy admits) stay base64: as text they would be lost.
    const binary = outcome.body.base64Encoded && !isTextualMimeType(response.mimeType);
    const body = binary ? cutBase64(outcome.body.text, maxBytes) : decodeBodyText(outcome.body, maxBytes);
    data.body = body.value;
    if (binary) data.body_encoding = 'base64';
    if (body.cut) truncated = true;
  }
  addTransfer(data, response, end?.finished.timestamp);
  if (end !== undefined) {
    data.encoded_data_length = end.finished.encodedDataLength;
    data.data_length = end.decodedBytes;
  }
  if (enforceDataLimit(data, limits.maxEventDataBytes)) truncated = true;
  // A base64 body cut by the data limit keeps whole 4-character groups.
  if (data.body_encoding !== undefined && data.body !== undefined && data.body.length % 4 !== 0)
    data.body = data.body.slice(0, data.body.length - (data.body.length % 4));
  return { data, truncated };
}

/** The fields a request's and a response's data begin with. */
type RequestFields = Pick<NetworkResponseData, keyof EventContext | 'request_id' | 'method'>;

/** The first fields of a request's or a response's data: the request's context, its id and its method when known. */
function requestData(ctx: EventContext, requestId: string, method: string | undefined): RequestFields {
  const data = withContext(ctx) as RequestFields;
  data.request_id = requestId;
  if (method !== undefined) data.method = method;
  return data;
}

/** A redirect hop's `redirectResponse` → its status, headers and transfer fields. */
function translateRedirectResponse(response: Protocol.Network.Response, eventTime: number, limits: Limits): Cut<NetworkRedirectResponse> {
  const headers = capHeaders(response.headers, limits.maxHeaderValueBytes);
  const hop: NetworkRedirectResponse = { status: response.status, status_text: response.statusText, headers: headers.value };
  addTransfer(hop, response, eventTime);
  return { value: hop, cut: headers.cut };
}

/**
 * The transfer extension fields (docs/export.md "HAR") of a response. `eventTime`: the CDP
 * timestamp of the event that carries them, which anchors `timing`; undefined when unknown.
 */
function addTransfer(data: NetworkTransferData, response: Protocol.Network.Response, eventTime: number | undefined): void {
  if (response.remoteIPAddress) data.remote_ip_address = response.remoteIPAddress;
  if (response.remotePort !== undefined) data.remote_port = response.remotePort;
  if (response.protocol) data.protocol = response.protocol;
  if (response.connectionId !== undefined) data.connection_id = response.connectionId;
  if (response.fromDiskCache) data.from_disk_cache = true;
  if (response.fromServiceWorker) data.from_service_worker = true;
  if (response.timing !== undefined) data.timing = translateTiming(response.timing, eventTime);
}

/** The `ResourceTiming` fields copied as they are, in the order of the event's `timing`. */
const TIMING_FIELDS = [
  ['proxy_start', 'proxyStart'],
  ['proxy_end', 'proxyEnd'],
  ['dns_start', 'dnsStart'],
  ['dns_end', 'dnsEnd'],
  ['connect_start', 'connectStart'],
  ['connect_end', 'connectEnd'],
  ['ssl_start', 'sslStart'],
  ['ssl_end', 'sslEnd'],
  ['worker_start', 'workerStart'],
  ['worker_ready', 'workerReady'],
  ['send_start', 'sendStart'],
  ['send_end', 'sendEnd'],
] as const satisfies readonly (readonly [keyof NetworkTiming, keyof Protocol.Network.ResourceTiming])[];

/** CDP's `ResourceTiming` in snake case; `requestTime` (monotonic seconds) becomes an offset to the event. */
export function translateTiming(t: Protocol.Network.ResourceTiming, eventTime: number | undefined): NetworkTiming {
  const timing = {} as NetworkTiming;
  if (eventTime !== undefined) timing.request_time_offset = Math.round((t.requestTime - eventTime) * 1e6) / 1e3;
  for (const [name, field] of TIMING_FIELDS) timing[name] = t[field];
  if (t.receiveHeadersStart !== undefined) timing.receive_headers_start = t.receiveHeadersStart;
  timing.receive_headers_end = t.receiveHeadersEnd;
  return timing;
}

/**
 * `Network.loadingFailed` → network_loading_failed data. `resourceType` is the type of the
 * request as it was seen starting; undefined for one that began before the agent attached.
 */
export function translateLoadingFailed(
  params: Protocol.Network.LoadingFailedEvent,
  ctx: EventContext,
  resourceType: string | undefined,
  limits: Limits,
): Translated<NetworkLoadingFailedData> {
  const data = withContext(ctx) as NetworkLoadingFailedData;
  data.request_id = params.requestId;
  data.error_text = params.errorText;
  data.canceled = params.canceled === true;
  if (resourceType !== undefined) data.resource_type = resourceType;
  const truncated = enforceDataLimit(data, limits.maxEventDataBytes);
  return { data, truncated };
}

// ---- bodies (docs/events.md#truncation-limits) -----------------------------------------------------------------------

const TEXTUAL = new BodyMatcher(defaultBodyPolicy());

/** `text/*`, JSON, XML, `+json`, `+xml`, form-urlencoded, GraphQL, JavaScript: the default MIME allow-list. */
export function isTextualMimeType(mimeType: string): boolean {
  return TEXTUAL.mimeAllowed(mimeType);
}

export type BodyPlan = 'fetch' | 'too_large' | 'none';

/**
 * Decided before asking Chromium for anything: a body is fetched only when the body policy wants
 * its resource and MIME type, and it is at most `maxBodyFetchBytes` decoded (`decodedBytes`: the
 * sum of `dataReceived.dataLength`). A huge body is never requested, so it can neither flood nor
 * stall the CDP connection.
 */
export function planBody(policy: BodyMatcher, resourceType: string | undefined, mimeType: string, decodedBytes: number, limits: Limits): BodyPlan {
  if (!policy.wants(resourceType, mimeType)) return 'none';
  return decodedBytes > limits.maxBodyFetchBytes ? 'too_large' : 'fetch';
}

/**
 * A fetched body as text of at most `maxBytes` UTF-8 bytes. Base64 bodies (Chromium sends text
 * that is not valid UTF-8 that way) are decoded as UTF-8, only as far as needed; invalid bytes
 * become U+FFFD.
 */
export function decodeBodyText(body: FetchedBody, maxBytes: number): Cut<string> {
  if (!body.base64Encoded) return truncateUtf8(body.text, maxBytes);
  const b64 = body.text;
  const totalBytes = base64DecodedLength(b64);
  // 4 base64 characters give 3 bytes; decode a little past the limit to see where a character ends.
  const wanted = Math.ceil((maxBytes + 4) / 3) * 4;
  let bytes = Buffer.from(wanted < b64.length ? b64.slice(0, wanted) : b64, 'base64');
  let cut = totalBytes > maxBytes;
  if (bytes.length > maxBytes) {
    // Cut before the character that straddles the limit (skip back over continuation bytes).
    let end = maxBytes;
    while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
    bytes = bytes.subarray(0, end);
    cut = true;
  }
  const text = truncateUtf8(bytes.toString('utf8'), maxBytes);
  return { value: text.value, cut: cut || text.cut };
}

/** Base64 text of at most `maxBytes` decoded bytes, cut after a whole 3-byte group. */
export function cutBase64(b64: string, maxBytes: number): Cut<string> {
  if (base64DecodedLength(b64) <= maxBytes) return { value: b64, cut: false };
  return { value: b64.slice(0, Math.floor(maxBytes / 3) * 4), cut: true };
}

function base64DecodedLength(b64: string): number {
  let padding = 0;
  if (b64.endsWith('==')) padding = 2;
  else if (b64.endsWith('=')) padding = 1;
  return Math.floor((b64.length * 3) / 4) - padding;
}

// ---- helpers --------------------------------------------------------------------------------

/**
 * Each header value cut to `maxBytes`. Returns `headers` itself when nothing is cut (the common
 * case: no copy), else a copy with the long values cut.
 */
export function capHeaders(headers: Protocol.Network.Headers, maxBytes: number): Cut<HeaderMap> {
  let copy: HeaderMap | undefined;
  for (const name in headers) {
    const value = headers[name] as string;
    // A UTF-16 unit is at most 3 UTF-8 bytes: most values are decided without measuring.
    if (value.length * 3 <= maxBytes) continue;
    const capped = truncateUtf8(value, maxBytes);
    if (!capped.cut) continue;
    copy ??= { ...headers };
    copy[name] = capped.value;
  }
  return copy === undefined ? { value: headers, cut: false } : { value: copy, cut: true };
}

/** The URL of the innermost frame of a stack (or its async parents) that names one. */
function firstStackUrl(stack: Protocol.Runtime.StackTrace | undefined): string | undefined {
  for (let current = stack; current !== undefined; current = current.parent) {
    const frame = current.callFrames.find((f) => f.url !== '');
    if (frame) return frame.url;
  }
  return undefined;
}
