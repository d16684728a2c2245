// Network translators, fed with params recorded from Chromium (test/fixtures/cdp/record-network.mjs).

import { readFileSync } from 'node:fs';
import type { Protocol } from 'devtools-protocol';
import { describe, expect, it } from 'vitest';
import type { EventContext } from '../../injected/schema.ts';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.ts';
import {
  capHeaders,
  decodeBodyText,
  isTextualMimeType,
  partialContext,
  planBody,
  requestContext,
  responseContext,
  translateLoadingFailed,
  translateRequestWillBeSent,
  translateResponse,
  translateTiming,
} from '../../src/telemetry/network.ts';
import { networkEnableParams } from '../../src/telemetry/network-family.ts';
import { BodyMatcher, defaultBodyPolicy } from '../../src/telemetry/body-policy.ts';

const POLICY = new BodyMatcher(defaultBodyPolicy());

interface RecordedCase {
  events: Array<{ method: string; params: any }>;
  responseBody: Record<string, { body: string; base64Encoded: boolean }>;
  postData: Record<string, { postData: string; base64Encoded: boolean }>;
}

const recorded = JSON.parse(readFileSync(new URL('../fixtures/cdp/network-events.json', import.meta.url), 'utf8')) as Record<string, RecordedCase>;

/** A fresh copy of the params of the `index`-th `method` event of a recorded case. */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the recorded event's params type
function recordedEvent<T>(name: string, method: string, index = 0): T {
  const events = recorded[name]?.events.filter((e) => e.method === method) ?? [];
  const event = events[index];
  if (!event) throw new Error(`no ${method} #${index} in recorded case ${name}`);
  return structuredClone(event.params) as T;
}

const willBeSent = (name: string, index = 0) => recordedEvent<Protocol.Network.RequestWillBeSentEvent>(name, 'Network.requestWillBeSent', index);
const received = (name: string) => recordedEvent<Protocol.Network.ResponseReceivedEvent>(name, 'Network.responseReceived');
const failed = (name: string) => recordedEvent<Protocol.Network.LoadingFailedEvent>(name, 'Network.loadingFailed');
const fetchedBody = (name: string, requestId: string) => {
  const r = recorded[name]!.responseBody[requestId]!;
  return { text: r.body, base64Encoded: r.base64Encoded };
};

const page = { sessionId: 'S1', targetId: 'T1', type: 'page' };
const ctx: EventContext = {
  session_id: 'S1',
  target_id: 'T1',
  target_type: 'page',
  frame_id: 'F1',
  loader_id: 'L1',
  url: 'http://fixture.test/data.json',
  nav_seq: 3,
};
const limits = (over: Partial<Limits> = {}): Limits => ({ ...DEFAULT_LIMITS, ...over });
const utf8Bytes = (s: string) => Buffer.byteLength(s, 'utf8');

describe('requestContext', () => {
  it('takes the frame, loader, request URL and nav_seq of the request', () => {
    const params = willBeSent('get_json');
    expect(requestContext(params, page, 4)).toEqual({
      session_id: 'S1',
      target_id: 'T1',
      target_type: 'page',
      frame_id: params.frameId,
      loader_id: params.loaderId,
      url: 'http://fixture.test/data.json',
      nav_seq: 4,
    });
  });

  it("gives a document request its own loader (the new document's)", () => {
    const params = willBeSent('document');
    expect(requestContext(params, page, 0).loader_id).toBe(params.requestId);
  });

  it('leaves out the empty loader id and missing frame of a worker request', () => {
    const worker = { sessionId: 'SW', targetId: 'TW', type: 'worker' };
    const params = willBeSent('worker_fetch', 1);
    expect(requestContext(params, worker, 2)).toEqual({
      session_id: 'SW',
      target_id: 'TW',
      target_type: 'worker',
      url: 'http://fixture.test/data.json?from=worker',
      nav_seq: 2,
    });
  });

  it('leaves out nav_seq for a target without a tab', () => {
    expect(requestContext(willBeSent('get_json'), { sessionId: 'S', targetId: 'T', type: 'service_worker' }, undefined)).not.toHaveProperty('nav_seq');
  });
});

describe('responseContext and partialContext', () => {
  it('takes what a response tells of a request that began before the agent attached', () => {
    const params = received('get_json');
    expect(responseContext(params, page, 1)).toEqual({
      session_id: 'S1',
      target_id: 'T1',
      target_type: 'page',
      frame_id: params.frameId,
      loader_id: params.loaderId,
      url: 'http://fixture.test/data.json',
      nav_seq: 1,
    });
  });

  it('gives only the target fields and nav_seq to a failure of an unknown request', () => {
    expect(partialContext(page, 5)).toEqual({ session_id: 'S1', target_id: 'T1', target_type: 'page', nav_seq: 5 });
  });
});

describe('translateRequestWillBeSent', () => {
  it('translates a GET fetch into network_request with exactly its fields', () => {
    const params = willBeSent('get_json');
    expect(translateRequestWillBeSent(params, ctx, limits())).toEqual({
      data: {
        ...ctx,
        request_id: params.requestId,
        method: 'GET',
        document_url: 'http://fixture.test/page.html',
        headers: params.request.headers,
        resource_type: 'Fetch',
        initiator_type: 'script',
      },
      truncated: false,
    });
  });

  it('puts the main document request with resource type Document and initiator other', () => {
    const { data } = translateRequestWillBeSent(willBeSent('document'), ctx, limits());
    expect(data).toMatchObject({ method: 'GET', resource_type: 'Document', initiator_type: 'other' });
    expect(data).not.toHaveProperty('post_data');
  });

  it('includes the JSON body of a POST as post_data', () => {
    const { data, truncated } = translateRequestWillBeSent(willBeSent('post_json'), ctx, limits());
    expect(data.method).toBe('POST');
    expect(data.post_data).toBe('{"name":"ann","n":1}');
    expect(truncated).toBe(false);
  });

  it('takes a Blob body from getRequestPostData', () => {
    const params = willBeSent('post_blob');
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the field Chromium sends and src/telemetry/network.ts reads
    expect(params.request.postData).toBeUndefined();
    const post = recorded.post_blob!.postData[params.requestId]!;
    const { data } = translateRequestWillBeSent(params, ctx, limits(), { text: post.postData, base64Encoded: post.base64Encoded });
    expect(data.post_data).toBe('blob-body-🙂');
  });

  it('cuts post_data to maxPostDataBytes and marks the event truncated', () => {
    const { data, truncated } = translateRequestWillBeSent(willBeSent('post_json'), ctx, limits({ maxPostDataBytes: 6 }));
    expect(data.post_data).toBe('{"name');
    expect(truncated).toBe(true);
  });

  it('marks each redirect hop with is_redirect and the URL redirected from', () => {
    const first = translateRequestWillBeSent(willBeSent('redirect_chain', 0), ctx, limits()).data;
    const second = translateRequestWillBeSent(willBeSent('redirect_chain', 1), { ...ctx, url: 'http://fixture.test/r301' }, limits()).data;
    const third = translateRequestWillBeSent(willBeSent('redirect_chain', 2), { ...ctx, url: 'http://fixture.test/final.json' }, limits()).data;
    expect(first).not.toHaveProperty('is_redirect');
    expect(first).not.toHaveProperty('redirect_url');
    expect(second).toMatchObject({ is_redirect: true, redirect_url: 'http://fixture.test/r302', url: 'http://fixture.test/r301' });
    expect(third).toMatchObject({ is_redirect: true, redirect_url: 'http://fixture.test/r301', url: 'http://fixture.test/final.json' });
  });

  it('keeps the request id of every redirect hop', () => {
    const ids = [0, 1, 2].map((i) => translateRequestWillBeSent(willBeSent('redirect_chain', i), ctx, limits()).data.request_id);
    expect(new Set(ids).size).toBe(1);
  });

  it('cuts each header value to maxHeaderValueBytes', () => {
    const params = willBeSent('get_json');
    const { data, truncated } = translateRequestWillBeSent(params, ctx, limits({ maxHeaderValueBytes: 10 }));
    expect(data.headers['User-Agent']).toBe('Mozilla/5.');
    expect(truncated).toBe(true);
  });

  it('cuts the largest strings when data is over maxEventDataBytes', () => {
    const params = willBeSent('post_json');
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the field Chromium sends and src/telemetry/network.ts reads
    params.request.postData = 'p'.repeat(50_000);
    const { data, truncated } = translateRequestWillBeSent(params, ctx, limits({ maxEventDataBytes: 4096 }));
    expect(utf8Bytes(JSON.stringify(data))).toBeLessThanOrEqual(4096);
    expect(data.request_id).toBe(params.requestId);
    expect(truncated).toBe(true);
  });
});

describe('translateResponse', () => {
  const outcome = (name: string, requestId: string) => ({ body: fetchedBody(name, requestId), skippedForSize: false });

  it('translates a JSON response with its body and exactly its fields', () => {
    const r = received('get_json');
    expect(translateResponse(ctx, 'GET', r, outcome('get_json', r.requestId), limits())).toEqual({
      data: {
        ...ctx,
        request_id: r.requestId,
        method: 'GET',
        status: 200,
        status_text: 'OK',
        headers: r.response.headers,
        mime_type: 'application/json',
        resource_type: 'Fetch',
        body: '{"ok":true,"items":[1,2,3]}',
        remote_ip_address: '127.0.0.1',
        remote_port: r.response.remotePort,
        protocol: 'http/1.1',
        connection_id: r.response.connectionId,
        timing: translateTiming(r.response.timing!, undefined),
      },
      truncated: false,
    });
  });

  it('reports a 404 as a response with its status and body', () => {
    const r = received('not_found');
    const { data } = translateResponse(ctx, 'GET', r, outcome('not_found', r.requestId), limits());
    expect(data).toMatchObject({ status: 404, status_text: 'Not Found', body: 'not found' });
  });

  it('gives the final response of a redirect chain', () => {
    const r = received('redirect_chain');
    const { data } = translateResponse(ctx, 'GET', r, outcome('redirect_chain', r.requestId), limits());
    expect(data).toMatchObject({ status: 200, body: '{"final":true}' });
  });

  it('gives an image no body and no truncated mark', () => {
    const { data, truncated } = translateResponse(ctx, 'GET', received('image'), { skippedForSize: false }, limits());
    expect(data.mime_type).toBe('image/png');
    expect(data.resource_type).toBe('Image');
    expect(data).not.toHaveProperty('body');
    expect(truncated).toBe(false);
  });

  it('marks a textual body skipped for size as truncated, without a body', () => {
    const { data, truncated } = translateResponse(ctx, 'GET', received('get_json'), { skippedForSize: true }, limits());
    expect(data).not.toHaveProperty('body');
    expect(truncated).toBe(true);
  });

  it('cuts the body to maxBodyBytes and marks the event truncated', () => {
    const r = received('get_json');
    const { data, truncated } = translateResponse(ctx, 'GET', r, outcome('get_json', r.requestId), limits({ maxBodyBytes: 5 }));
    expect(data.body).toBe('{"ok"');
    expect(truncated).toBe(true);
  });

  it('decodes a base64 body (text that is not valid UTF-8)', () => {
    const r = received('invalid_utf8_text');
    const body = outcome('invalid_utf8_text', r.requestId);
    expect(body.body.base64Encoded).toBe(true);
    expect(translateResponse(ctx, 'GET', r, body, limits()).data.body).toBe('hi\uFFFD\uFFFD!');
  });

  it('cuts a long response header value', () => {
    const r = received('long_header');
    expect(r.response.headers['x-long']).toHaveLength(20_000);
    const { data, truncated } = translateResponse(ctx, 'GET', r, { skippedForSize: false }, limits());
    expect(data.headers['x-long']).toHaveLength(DEFAULT_LIMITS.maxHeaderValueBytes);
    expect(truncated).toBe(true);
  });

  it('leaves out method for a request that began before the agent attached', () => {
    expect(translateResponse(ctx, undefined, received('get_json'), { skippedForSize: false }, limits()).data).not.toHaveProperty('method');
  });

  it("gives the main document's response its HTML body", () => {
    const r = received('document');
    const { data } = translateResponse(ctx, 'GET', r, outcome('document', r.requestId), limits());
    expect(data).toMatchObject({ mime_type: 'text/html', resource_type: 'Document', body: '<!doctype html><title>fixture</title><p>recorded</p>' });
  });
});

describe('translateLoadingFailed', () => {
  it('translates an aborted fetch as canceled net::ERR_ABORTED', () => {
    const params = failed('aborted');
    expect(translateLoadingFailed(params, ctx, 'Fetch', limits())).toEqual({
      data: { ...ctx, request_id: params.requestId, error_text: 'net::ERR_ABORTED', canceled: true, resource_type: 'Fetch' },
      truncated: false,
    });
  });

  it('translates a refused connection as not canceled', () => {
    const { data } = translateLoadingFailed(failed('refused'), ctx, 'Fetch', limits());
    expect(data).toMatchObject({ error_text: 'net::ERR_CONNECTION_REFUSED', canceled: false });
  });

  it('leaves out resource_type for a request never seen starting', () => {
    const { data } = translateLoadingFailed(failed('refused'), partialContext(page, 1), undefined, limits());
    expect(data).toEqual({ ...partialContext(page, 1), request_id: failed('refused').requestId, error_text: 'net::ERR_CONNECTION_REFUSED', canceled: false });
  });
});

describe('response bodies (docs/events.md#truncation-limits)', () => {
  it.each([
    'text/html',
    'text/plain',
    'text/css',
    'text/javascript',
    'application/json',
    'application/javascript',
    'application/x-javascript',
    'application/ecmascript',
    'application/xml',
    'application/ld+json',
    'application/problem+json',
    'image/svg+xml',
    'application/x-www-form-urlencoded',
    'application/graphql',
    'Application/JSON; charset=utf-8',
  ])('treats %s as textual', (mime) => {
    expect(isTextualMimeType(mime)).toBe(true);
  });

  it.each(['image/png', 'image/jpeg', 'application/octet-stream', 'font/woff2', 'application/pdf', 'video/mp4', 'application/wasm', ''])(
    'treats %s as not textual',
    (mime) => {
      expect(isTextualMimeType(mime)).toBe(false);
    },
  );

  it('fetches a textual body up to maxBodyFetchBytes', () => {
    expect(planBody(POLICY, 'Fetch', 'application/json', DEFAULT_LIMITS.maxBodyFetchBytes, DEFAULT_LIMITS)).toBe('fetch');
  });

  it('skips a textual body one byte over maxBodyFetchBytes', () => {
    expect(planBody(POLICY, 'XHR', 'text/plain', DEFAULT_LIMITS.maxBodyFetchBytes + 1, DEFAULT_LIMITS)).toBe('too_large');
  });

  it('never fetches a non-textual body', () => {
    expect(planBody(POLICY, 'Fetch', 'image/png', 10, DEFAULT_LIMITS)).toBe('none');
  });

  it('never fetches a body the policy leaves out, whatever its size', () => {
    expect(planBody(POLICY, 'Stylesheet', 'text/css', 10, DEFAULT_LIMITS)).toBe('none');
    expect(planBody(POLICY, 'Script', 'text/javascript', DEFAULT_LIMITS.maxBodyFetchBytes + 1, DEFAULT_LIMITS)).toBe('none');
  });

  it('decodes only as much base64 as the limit needs, cutting on a character boundary', () => {
    const text = 'é'.repeat(1000);
    const cut = decodeBodyText({ text: Buffer.from(text).toString('base64'), base64Encoded: true }, 5);
    expect(cut).toEqual({ value: 'éé', cut: true });
  });

  it('keeps a base64 body that fits whole', () => {
    expect(decodeBodyText({ text: Buffer.from('héllo').toString('base64'), base64Encoded: true }, 6)).toEqual({ value: 'héllo', cut: false });
  });
});

describe('capHeaders', () => {
  it('returns the same object when no value is cut', () => {
    const headers = { a: 'x', b: 'y' };
    expect(capHeaders(headers, 8).value).toBe(headers);
  });

  it('copies instead of editing the CDP headers when a value is cut', () => {
    const headers = { a: 'x'.repeat(20) };
    const capped = capHeaders(headers, 8);
    expect(capped).toEqual({ value: { a: 'x'.repeat(8) }, cut: true });
    expect(headers.a).toHaveLength(20);
  });
});

describe('networkEnableParams', () => {
  it('keeps every body up to the fetch limit in the per-resource buffer (text may be held as UTF-16)', () => {
    const params = networkEnableParams(DEFAULT_LIMITS);
    expect(params.maxResourceBufferSize).toBeGreaterThanOrEqual(2 * DEFAULT_LIMITS.maxBodyFetchBytes);
    expect(params.maxTotalBufferSize).toBeGreaterThanOrEqual(16 * params.maxResourceBufferSize!);
  });

  it('keeps request bodies over maxPostDataBytes out of requestWillBeSent', () => {
    expect(networkEnableParams(DEFAULT_LIMITS).maxPostDataSize).toBe(DEFAULT_LIMITS.maxPostDataBytes);
  });

  it('raises the buffers with a raised fetch limit, within a 32-bit integer', () => {
    const params = networkEnableParams({ ...DEFAULT_LIMITS, maxBodyFetchBytes: 2 ** 40 });
    expect(params.maxResourceBufferSize).toBe(2 ** 31 - 1);
    expect(params.maxTotalBufferSize).toBe(2 ** 31 - 1);
  });
});

describe('transfer extension fields (docs/export.md "HAR")', () => {
  const finished = (name: string) => recordedEvent<Protocol.Network.LoadingFinishedEvent>(name, 'Network.loadingFinished');

  it('gives the bytes on the wire and the decoded body bytes from loadingFinished', () => {
    const r = received('get_json');
    const end = finished('get_json');
    const { data } = translateResponse(ctx, 'GET', r, { skippedForSize: false }, limits(), { finished: end, decodedBytes: 27 });
    expect(data).toMatchObject({ encoded_data_length: end.encodedDataLength, data_length: 27 });
  });

  it('anchors the timing to the event: request_time_offset is requestTime minus its timestamp, in ms', () => {
    const r = received('get_json');
    const end = finished('get_json');
    const { data } = translateResponse(ctx, 'GET', r, { skippedForSize: false }, limits(), { finished: end, decodedBytes: 0 });
    const t = r.response.timing!;
    expect(data.timing!.request_time_offset).toBeCloseTo((t.requestTime - end.timestamp) * 1000, 3);
    expect(data.timing).toMatchObject({
      dns_start: -1,
      connect_start: -1,
      send_start: t.sendStart,
      send_end: t.sendEnd,
      receive_headers_end: t.receiveHeadersEnd,
    });
  });

  it('leaves request_time_offset out when the end of the response was never reported', () => {
    const { data } = translateResponse(ctx, 'GET', received('get_json'), { skippedForSize: false }, limits());
    expect(data.timing).not.toHaveProperty('request_time_offset');
    expect(data).not.toHaveProperty('encoded_data_length');
  });

  it('gives a redirect hop the 3xx answer it ended with', () => {
    const params = willBeSent('redirect_chain', 1);
    const { data } = translateRequestWillBeSent(params, ctx, limits());
    expect(data.redirect_response).toMatchObject({ status: 302, status_text: 'Found', remote_ip_address: '127.0.0.1', protocol: 'http/1.1' });
    expect(data.redirect_response!.headers.location).toBe('/r301');
    expect(data.redirect_response!.timing!.request_time_offset).toBeLessThan(0);
  });

  it('keeps a non-textual body base64 with body_encoding', () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
    const { data, truncated } = translateResponse(ctx, 'GET', received('image'), { body: { text: png, base64Encoded: true }, skippedForSize: false }, limits());
    expect(data).toMatchObject({ body: png, body_encoding: 'base64' });
    expect(truncated).toBe(false);
  });

  it('cuts a base64 body after whole 3-byte groups of at most the byte limit', () => {
    const bytes = Buffer.from(Array.from({ length: 100 }, (_, i) => i));
    const { data, truncated } = translateResponse(
      ctx,
      'GET',
      received('image'),
      { body: { text: bytes.toString('base64'), base64Encoded: true }, skippedForSize: false },
      limits({ maxBodyBytes: 10 }),
    );
    expect(Buffer.from(data.body!, 'base64')).toEqual(bytes.subarray(0, 9));
    expect(truncated).toBe(true);
  });
});
