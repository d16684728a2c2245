// get_request (docs/mcp.md "get_request"): one request by its id, put together from its events:
// the request and its redirect hops, the response or the failure, the timing phases as the HAR
// export computes them, the initiator chain back to the document or the action that started it,
// and on request the body the body policy captured (docs/network.md "Response bodies").

import type { Envelope, NetworkLoadingFailedData, NetworkRequestData, NetworkResponseData, TelemetryEvent } from '../../injected/schema.ts';
import { buildEntry, type Ending } from '../export/har.ts';
import { describeActions } from './actions.ts';
import { cutString, isoTime } from './compact.ts';
import { filterOf } from './event-query.ts';
import { scanEvents } from './scan.ts';
import { ToolError, type SessionSource, type TelemetrySource } from './source.ts';

export const REQUEST_DEFAULTS = { maxBodyChars: 16_384 } as const;
export const REQUEST_BOUNDS = { maxBodyChars: [0, 262_144] } as const;
/** Request ids as CDP makes them: digits and dots, or a loader id (hex). */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;
/** Network events read in one direction looking for a request, at most. */
const SEARCH_LIMIT = 50_000;
/** network_request events read back per level of the initiator chain, at most. */
const CHAIN_SEARCH_LIMIT = 5_000;
const CHAIN_DEPTH = 5;
const HEADER_VALUE_CHARS = 300;
const URL_CHARS = 500;

const REQUEST_TYPES = ['network_request', 'network_response', 'network_loading_failed'] as const;

export interface RequestArgs {
  session_id?: string;
  request_id: string;
  seq?: number;
  include_body?: boolean;
  max_body_chars?: number;
}

interface Found {
  hops: Array<TelemetryEvent<'network_request'> & { seq: number }>;
  response?: TelemetryEvent<'network_response'> & { seq: number };
  failure?: TelemetryEvent<'network_loading_failed'> & { seq: number };
}

export async function getRequest(source: TelemetrySource, args: RequestArgs): Promise<Record<string, unknown>> {
  if (!REQUEST_ID_PATTERN.test(args.request_id))
    throw new ToolError('request_id: expected a request id as the events give it (1 to 128 of A-Z, a-z, 0-9, ., _, -)');
  const session = await source.session(args.session_id);
  const found = await find(session, args.request_id, args.seq);
  const first = found.hops[0];
  if (first === undefined && found.response === undefined && found.failure === undefined) {
    throw new ToolError(
      args.seq === undefined
        ? `request_id: no request ${args.request_id} among the first ${SEARCH_LIMIT} network events of session ${session.id}; pass seq (any event of the request, as get_events and what_went_wrong give it) to search around it`
        : `request_id: no request ${args.request_id} within ${SEARCH_LIMIT} network events around seq ${args.seq} of session ${session.id}`,
    );
  }
  const maxBody = args.max_body_chars ?? REQUEST_DEFAULTS.maxBodyChars;
  const answer: Record<string, unknown> = { session_id: session.id, request_id: args.request_id };
  const last = found.hops[found.hops.length - 1];
  if (first !== undefined) answer.request = requestPart(first, last!, args.include_body === true, maxBody);
  else answer.request = 'not in the record: it began before the agent attached, or before the events retained';
  if (found.hops.length > 1) {
    answer.redirects = found.hops.slice(1).map((hop) => ({
      seq: hop.seq,
      from: cutString(hop.data?.redirect_url ?? '', URL_CHARS),
      status: hop.data?.redirect_response?.status,
      to: cutString(hop.data?.url ?? '', URL_CHARS),
    }));
  }
  if (found.response) answer.response = responsePart(found.response, args.include_body === true, maxBody);
  if (found.failure) answer.failure = failurePart(found.failure);
  if (!found.response && !found.failure) answer.outcome = 'no response or failure in the record (still loading, or the tab closed first)';
  const ending: Ending = found.response
    ? { kind: 'response', ts: found.response.ts, data: found.response.data!, truncated: found.response.truncated === true }
    : found.failure
      ? { kind: 'failed', ts: found.failure.ts, data: found.failure.data! }
      : { kind: 'none' };
  if (last !== undefined && ending.kind !== 'none') {
    const entry = buildEntry(last, ending);
    answer.timing_ms = { total: entry.time, ...entry.timings };
  }
  if (first !== undefined) {
    const chain = await initiatorChain(session, last ?? first);
    if (chain.length > 0) answer.initiator_chain = chain;
  }
  const cause = first?.data?.caused_by ?? found.response?.data?.caused_by ?? found.failure?.data?.caused_by;
  if (cause !== undefined) {
    const action = (await describeActions(session, new Set([cause]))).get(cause);
    answer.caused_by = { action_id: cause, ...action };
  }
  if (args.include_body !== true) answer.omitted = 'the request and response bodies: include_body shows them';
  return answer;
}

async function find(session: SessionSource, requestId: string, seq: number | undefined): Promise<Found> {
  const found: Found = { hops: [] };
  const needle = `"request_id":"${requestId}"`;
  const lists = { type: REQUEST_TYPES as readonly string[] };
  const read = { filter: filterOf(lists), filterQuery: lists, chunk: 500 };
  const take = (json: string): void => {
    if (!json.includes(needle)) return;
    const { seq, event } = JSON.parse(json) as Envelope;
    switch (event.type) {
      case 'network_request':
        if (event.data?.request_id === requestId) found.hops.push({ ...event, seq });
        return;
      case 'network_response':
        if (event.data?.request_id === requestId) found.response ??= { ...event, seq };
        return;
      case 'network_loading_failed':
        if (event.data?.request_id === requestId) found.failure ??= { ...event, seq };
        return;
      default:
        // The read's filter names only these types.
        return;
    }
  };
  const ended = () => found.response !== undefined || found.failure !== undefined;
  const started = () => found.hops.some((hop) => hop.data?.is_redirect !== true);
  if (seq === undefined) {
    await scanUntil(session, { ...read, order: 'asc' }, take, ended);
  } else {
    // Back from the seq for the request's hops, then on from it for its ending.
    await scanUntil(session, { ...read, order: 'desc', offset: seq }, take, started);
    if (!ended()) await scanUntil(session, { ...read, order: 'asc', offset: seq + 1 }, take, ended);
  }
  found.hops.sort((a, b) => a.seq - b.seq);
  // Hops before the first one (an earlier request that reused the id) are not this request's.
  const start = found.hops.findIndex((hop) => hop.data?.is_redirect !== true);
  if (start > 0) found.hops = found.hops.slice(start);
  return found;
}

async function scanUntil(session: SessionSource, request: Parameters<typeof scanEvents>[1], take: (json: string) => void, done: () => boolean): Promise<void> {
  let read = 0;
  for await (const batch of scanEvents(session, request)) {
    for (const json of batch.items) take(json);
    read += batch.items.length;
    if (done() || read >= SEARCH_LIMIT) return;
  }
}

function requestPart(first: Found['hops'][number], last: Found['hops'][number], includeBody: boolean, maxBody: number): Record<string, unknown> {
  const data = first.data!;
  const part: Record<string, unknown> = {
    seq: first.seq,
    ts: isoTime(first.ts),
    method: data.method,
    url: cutString(last.data?.url ?? data.url ?? '', URL_CHARS),
    resource_type: data.resource_type,
    initiator: initiatorOf(data),
    target_id: data.target_id,
    nav_seq: data.nav_seq,
    caused_by: data.caused_by,
    headers: headersOf(last.data?.headers ?? data.headers),
  };
  if (data.post_data !== undefined)
    part.post_data = includeBody ? cutString(data.post_data, maxBody) : `${data.post_data.length} chars (include_body shows them)`;
  return dropUndefined(part);
}

function responsePart(response: NonNullable<Found['response']>, includeBody: boolean, maxBody: number): Record<string, unknown> {
  const data: NetworkResponseData = response.data!;
  const part: Record<string, unknown> = {
    seq: response.seq,
    ts: isoTime(response.ts),
    status: data.status,
    status_text: data.status_text || undefined,
    mime_type: data.mime_type,
    protocol: data.protocol,
    remote_ip_address: data.remote_ip_address,
    from_disk_cache: data.from_disk_cache,
    from_service_worker: data.from_service_worker,
    encoded_data_length: data.encoded_data_length,
    data_length: data.data_length,
    headers: headersOf(data.headers),
  };
  if (includeBody) {
    if (data.body !== undefined) {
      part.body = cutString(data.body, maxBody);
      if (data.body_encoding !== undefined) part.body_encoding = data.body_encoding;
      if (response.truncated) part.body_note = 'cut by the body policy (its max_bytes) or the event size limit when it was recorded';
    } else {
      part.body_note = response.truncated
        ? 'not captured: larger than --max-body-fetch-bytes'
        : 'not in the record: the body policy did not capture it (by default the textual bodies of Document, XHR, Fetch, EventSource and Other requests; GET /browsers/{id} shows the policy, PATCH changes it: docs/network.md), or Chromium no longer held it';
    }
  } else if (data.body !== undefined) {
    part.body = `${data.body.length} chars recorded (include_body shows them)`;
  }
  return dropUndefined(part);
}

function failurePart(failure: NonNullable<Found['failure']>): Record<string, unknown> {
  const data: NetworkLoadingFailedData = failure.data!;
  return dropUndefined({ seq: failure.seq, ts: isoTime(failure.ts), error_text: data.error_text, canceled: data.canceled || undefined });
}

function initiatorOf(data: NetworkRequestData): Record<string, unknown> {
  return dropUndefined({ type: data.initiator_type, url: data.initiator_url === undefined ? undefined : cutString(data.initiator_url, URL_CHARS) });
}

/**
 * The requests that loaded this request's initiator, then theirs, back to the document or the
 * first one not in the record (docs/events.md "caused_by", rule 4: the initiator chain).
 */
async function initiatorChain(session: SessionSource, request: Found['hops'][number]): Promise<Array<Record<string, unknown>>> {
  const chain: Array<Record<string, unknown>> = [];
  const seen = new Set<string>();
  let current = request;
  const lists = { type: ['network_request'] as readonly string[] };
  const filter = filterOf(lists);
  for (let depth = 0; depth < CHAIN_DEPTH; depth++) {
    const url = current.data?.initiator_url;
    if (url === undefined || seen.has(url) || current.data?.resource_type === 'Document') break;
    seen.add(url);
    const needle = JSON.stringify(url).slice(1, -1);
    let found: Found['hops'][number] | undefined;
    let read = 0;
    for await (const batch of scanEvents(session, { filter, filterQuery: lists, order: 'desc', offset: current.seq - 1, chunk: 500 })) {
      for (const json of batch.items) {
        if (!json.includes(needle)) continue;
        const { seq, event } = JSON.parse(json) as Envelope;
        if (event.type === 'network_request' && event.data?.url === url) {
          found = { ...event, seq };
          break;
        }
      }
      read += batch.items.length;
      if (found !== undefined || read >= CHAIN_SEARCH_LIMIT) break;
    }
    if (found === undefined) {
      chain.push({
        url: cutString(url, URL_CHARS),
        note: 'its request is not in the record (loaded before the agent attached, from the cache of an earlier page, or inline)',
      });
      break;
    }
    const data = found.data!;
    chain.push(
      dropUndefined({
        seq: found.seq,
        url: cutString(url, URL_CHARS),
        request_id: data.request_id,
        resource_type: data.resource_type,
        initiator: initiatorOf(data),
        caused_by: data.caused_by,
      }),
    );
    current = found;
  }
  return chain;
}

function headersOf(headers: Record<string, string> | undefined): Record<string, string> | undefined {
  if (headers === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) out[name] = cutString(value, HEADER_VALUE_CHARS);
  return out;
}

function dropUndefined(object: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));
}
