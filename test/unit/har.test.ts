// The HAR builder (src/export/har.ts), fed with events translated from recorded CDP params
// (test/fixtures/cdp/network-events.json) the way the network family emits them.

import { readFileSync } from 'node:fs';
import type { Protocol } from 'devtools-protocol';
import { describe, expect, it } from 'vitest';
import type { EventContext, EventDataByType, EventType, NetworkResponseData, TelemetryEvent } from '../../injected/schema.ts';
import { eventOf } from '../../src/event-data.ts';
import { HarBuilder, harTimings, type HarEntry, type HarOptions, type HarPage } from '../../src/export/har.ts';
import { DEFAULT_LIMITS } from '../../src/limits.ts';
import { translateLoadingFailed, translateRequestWillBeSent, translateResponse } from '../../src/telemetry/network.ts';
import { harValidator } from './support/har-validator.ts';

interface RecordedCase {
  events: Array<{ method: string; params: any }>;
  responseBody: Record<string, { body: string; base64Encoded: boolean }>;
}
const recorded = JSON.parse(readFileSync(new URL('../fixtures/cdp/network-events.json', import.meta.url), 'utf8')) as Record<string, RecordedCase>;

const TAB = 'TAB1';
const LOADER = 'LOADER1';
const ctx = (over: EventContext = {}): EventContext => ({
  session_id: 'S1',
  target_id: TAB,
  target_type: 'page',
  frame_id: TAB,
  loader_id: LOADER,
  nav_seq: 1,
  ...over,
});

/** Monotonic seconds → Unix µs, as the agent's clock does (wallTime − timestamp). */
let wallOffset = 1_795_266_000;
const us = (monotonic: number) => Math.round((wallOffset + monotonic) * 1e6);

function event<T extends EventType>(type: T, ts: number, data: EventDataByType[T], truncated = false): TelemetryEvent {
  return eventOf<T>(truncated ? { ts, type, source: { kind: 'cdp' }, data, truncated } : { ts, type, source: { kind: 'cdp' }, data });
}

/** The events the network family emits for one recorded case, in order. */
function networkEvents(name: string, context: EventContext = ctx(), body = true): TelemetryEvent[] {
  const c = recorded[name]!;
  const out: TelemetryEvent[] = [];
  const received = new Map<string, Protocol.Network.ResponseReceivedEvent>();
  const decoded = new Map<string, number>();
  for (const { method, params } of c.events) {
    if (method === 'Network.requestWillBeSent') {
      const p = params as Protocol.Network.RequestWillBeSentEvent;
      wallOffset = p.wallTime - p.timestamp;
      const t = translateRequestWillBeSent(structuredClone(p), { ...context, url: p.request.url }, DEFAULT_LIMITS);
      out.push(event('network_request', us(p.timestamp), t.data, t.truncated));
    } else if (method === 'Network.responseReceived') received.set(params.requestId, structuredClone(params));
    else if (method === 'Network.dataReceived') decoded.set(params.requestId, (decoded.get(params.requestId) ?? 0) + (params.dataLength as number));
    else if (method === 'Network.loadingFinished') {
      const f = params as Protocol.Network.LoadingFinishedEvent;
      const r = received.get(f.requestId)!;
      const fetched = c.responseBody[f.requestId];
      const outcome = { body: body && fetched ? { text: fetched.body, base64Encoded: fetched.base64Encoded } : undefined, skippedForSize: false };
      const t = translateResponse({ ...context, url: r.response.url }, 'GET', r, outcome, DEFAULT_LIMITS, {
        finished: f,
        decodedBytes: decoded.get(f.requestId) ?? 0,
      });
      out.push(event('network_response', us(f.timestamp), t.data, t.truncated));
    } else if (method === 'Network.loadingFailed') {
      const p = params as Protocol.Network.LoadingFailedEvent;
      const t = translateLoadingFailed(p, context, 'Fetch', DEFAULT_LIMITS);
      out.push(event('network_loading_failed', us(p.timestamp), t.data));
    }
  }
  return out;
}

const OPTIONS: HarOptions = { creator: { name: 'browser-telemetry-agent', version: 'test' } };

interface Har {
  log: { version: string; creator: object; entries: HarEntry[]; pages: HarPage[] };
}

/** The whole document from `events`, checking it comes out as valid JSON from its pieces. */
function build(events: TelemetryEvent[], options: HarOptions = OPTIONS): Har {
  const builder = new HarBuilder(options);
  let text = builder.begin();
  for (const e of events) text += builder.add(e);
  text += builder.end();
  return JSON.parse(text) as Har;
}

describe('HarBuilder: entries', () => {
  it('joins a request and its response into one entry with headers, status, body and resource type', () => {
    const [request, response] = networkEvents('get_json');
    const har = build([request!, response!]);
    expect(har.log.entries).toHaveLength(1);
    const entry = har.log.entries[0]!;
    const req = request!.data as { url: string; headers: Record<string, string> };
    const res = response!.data as NetworkResponseData;
    expect(entry.request).toMatchObject({ method: 'GET', url: req.url, httpVersion: 'HTTP/1.1', bodySize: 0 });
    expect(entry.request.headers).toEqual(Object.entries(req.headers).map(([name, value]) => ({ name, value })));
    expect(entry.response).toMatchObject({
      status: 200,
      statusText: 'OK',
      httpVersion: 'HTTP/1.1',
      content: { mimeType: 'application/json', text: res.body, size: res.data_length },
    });
    expect(entry.response._transferSize).toBe(res.encoded_data_length);
    expect(entry._resourceType).toBe('fetch');
  });

  it('gives the server address and the connection', () => {
    const entry = build(networkEvents('get_json')).log.entries[0]!;
    expect(entry.serverIPAddress).toBe('127.0.0.1');
    expect(entry.connection).toBe('48');
  });

  it('starts the entry when the request was sent', () => {
    const [request, response] = networkEvents('get_json');
    expect(build([request!, response!]).log.entries[0]!.startedDateTime).toBe(new Date(Math.floor(request!.ts / 1000)).toISOString());
  });

  it("derives send, wait and receive from CDP's resource timing, and time as their sum", () => {
    const received = recorded.get_json!.events.find((e) => e.method === 'Network.responseReceived')!.params as Protocol.Network.ResponseReceivedEvent;
    const t = received.response.timing!;
    const { timings, time } = build(networkEvents('get_json')).log.entries[0]!;
    expect(timings.send).toBeCloseTo(t.sendEnd - t.sendStart, 3);
    expect(timings.wait).toBeCloseTo(t.receiveHeadersEnd - t.sendEnd, 3);
    expect(timings).toMatchObject({ dns: -1, connect: -1, ssl: -1 });
    expect(timings.receive).toBeGreaterThanOrEqual(0);
    expect(time).toBeCloseTo(timings.blocked + timings.send + timings.wait + timings.receive, 2);
  });

  it('writes an entry per redirect hop, each 3xx pointing at the next URL', () => {
    const entries = build(networkEvents('redirect_chain')).log.entries;
    expect(entries.map((e) => [e.request.url, e.response.status, e.response.redirectURL])).toEqual([
      ['http://fixture.test/r302', 302, 'http://fixture.test/r301'],
      ['http://fixture.test/r301', 301, 'http://fixture.test/final.json'],
      ['http://fixture.test/final.json', 200, ''],
    ]);
    expect(entries[0]!.response.headers).toContainEqual({ name: 'location', value: '/r301' });
  });

  it('gives a failed request status 0 and the error text', () => {
    const entry = build(networkEvents('refused')).log.entries[0]!;
    expect(entry.response).toMatchObject({ status: 0, _error: 'net::ERR_CONNECTION_REFUSED' });
  });

  it('keeps a POST body as postData with its content type', () => {
    const entry = build(networkEvents('post_json')).log.entries[0]!;
    expect(entry.request.postData).toEqual({ mimeType: 'application/json', text: '{"name":"ann","n":1}' });
    expect(entry.request.bodySize).toBe(20);
  });

  it('gives a base64 body encoding base64', () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
    const [request, response] = networkEvents('image', ctx(), false);
    Object.assign(response!.data!, { body: png, body_encoding: 'base64' });
    const content = build([request!, response!]).log.entries[0]!.response.content;
    expect(content).toMatchObject({ mimeType: 'image/png', text: png, encoding: 'base64' });
  });

  it('says in content.comment how much of a truncated body was kept', () => {
    const [request, response] = networkEvents('get_json');
    const data = response!.data as NetworkResponseData;
    data.body = data.body!.slice(0, 5);
    data.data_length = 27;
    const content = build([request!, { ...response!, truncated: true }]).log.entries[0]!.response.content;
    expect(content.comment).toBe('body truncated by the agent: 5 of 27 bytes kept');
  });

  it('writes a request still in flight at the end, with status 0 and a comment', () => {
    const [request] = networkEvents('get_json');
    const entry = build([request!]).log.entries[0]!;
    expect(entry.response.status).toBe(0);
    expect(entry.comment).toMatch(/no response recorded/);
  });

  it('writes a response whose request was not recorded, from the response alone', () => {
    const [, response] = networkEvents('get_json');
    const entry = build([response!]).log.entries[0]!;
    expect(entry.request.url).toBe('http://fixture.test/data.json');
    expect(entry.response.status).toBe(200);
    expect(entry.comment).toMatch(/request start not recorded/);
  });

  it('keeps only requests in flight: an entry is written as soon as its response is seen', () => {
    const builder = new HarBuilder(OPTIONS);
    builder.begin();
    const [request, response] = networkEvents('get_json');
    expect(builder.add(request!)).toBe('');
    expect(builder.inFlightCount).toBe(1);
    expect(builder.add(response!)).toContain('"status":200');
    expect(builder.inFlightCount).toBe(0);
  });
});

describe('harTimings', () => {
  const timing = {
    request_time_offset: 0,
    proxy_start: -1,
    proxy_end: -1,
    dns_start: 1,
    dns_end: 3,
    connect_start: 3,
    connect_end: 10,
    ssl_start: 5,
    ssl_end: 10,
    worker_start: -1,
    worker_ready: -1,
    send_start: 10.5,
    send_end: 11,
    receive_headers_end: 20,
  };

  it('splits a new TLS connection into blocked, dns, connect (ssl inside), send, wait and receive', () => {
    // Queued 2 ms before the network stack took it; the last byte 5 ms after the headers.
    const t = harTimings(timing, 1_000_000, 1_002_000, 1_002_000 + 25_000);
    expect(t).toEqual({ blocked: 3, dns: 2, connect: 7, ssl: 5, send: 0.5, wait: 9, receive: 5 });
  });

  it('puts the whole time in wait when CDP gave no resource timing', () => {
    expect(harTimings(undefined, 1_000_000, 1_000_000, 1_004_000)).toEqual({ blocked: -1, dns: -1, connect: -1, ssl: -1, send: 0, wait: 4, receive: 0 });
  });
});

describe('HarBuilder: pages', () => {
  /** A navigation of TAB to a document (loader L, nav_seq n) with its document request, DCL and load. */
  function navigation(loader: string, navSeq: number, t0: number, url: string): TelemetryEvent[] {
    const request = event('network_request', t0, {
      ...ctx({ loader_id: loader, nav_seq: navSeq - 1, url }),
      request_id: loader,
      method: 'GET',
      document_url: url,
      headers: {},
      resource_type: 'Document',
      initiator_type: 'other',
    });
    const commit = event('page_navigation', t0 + 5_000, { url, frame_id: TAB, loader_id: loader, session_id: 'S1', target_id: TAB, target_type: 'page' });
    const response = event('network_response', t0 + 8_000, {
      ...ctx({ loader_id: loader, nav_seq: navSeq - 1, url }),
      request_id: loader,
      method: 'GET',
      status: 200,
      status_text: 'OK',
      headers: {},
      mime_type: 'text/html',
      resource_type: 'Document',
    });
    const sub = (id: string, ts: number) => [
      event('network_request', ts, {
        ...ctx({ loader_id: loader, nav_seq: navSeq, url: `${url}/${id}` }),
        request_id: id,
        method: 'GET',
        document_url: url,
        headers: {},
        resource_type: 'Script',
        initiator_type: 'parser',
      }),
      event('network_response', ts + 1000, {
        ...ctx({ loader_id: loader, nav_seq: navSeq, url: `${url}/${id}` }),
        request_id: id,
        status: 200,
        status_text: 'OK',
        headers: {},
        mime_type: 'text/javascript',
        resource_type: 'Script',
      }),
    ];
    const dcl = event('page_dom_content_loaded', t0 + 30_000, { ...ctx({ loader_id: loader, nav_seq: navSeq, url }), cdp_timestamp: 1 });
    const load = event('page_load', t0 + 50_000, { ...ctx({ loader_id: loader, nav_seq: navSeq, url }), cdp_timestamp: 2 });
    return [request, commit, response, ...sub(`${loader}-s`, t0 + 10_000), dcl, load];
  }

  const T0 = 1_795_266_000_000_000;
  const seed = event('network_request', T0 - 100_000, {
    ...ctx({ nav_seq: 0, loader_id: 'L0', url: 'about:blank' }),
    request_id: 'seed',
    method: 'GET',
    document_url: '',
    headers: {},
    initiator_type: 'other',
    resource_type: 'Other',
  });
  const two = [seed, ...navigation('LA', 1, T0, 'http://a.test'), ...navigation('LB', 2, T0 + 1_000_000, 'http://b.test')];

  it('makes a page of each top-level navigation, started by its document request', () => {
    const pages = build(two).log.pages;
    expect(pages.map((p) => [p.id, p.title, p.startedDateTime])).toEqual([
      ['page_1', 'http://a.test', new Date(T0 / 1000).toISOString()],
      ['page_2', 'http://b.test', new Date((T0 + 1_000_000) / 1000).toISOString()],
    ]);
  });

  it('times onContentLoad and onLoad from the start of the page', () => {
    expect(build(two).log.pages[0]!.pageTimings).toEqual({ onContentLoad: 30, onLoad: 50 });
  });

  it("refers each entry to its page, the navigation's document request included", () => {
    const entries = build(two).log.entries;
    expect(entries.map((e) => [e.request.url, e.pageref])).toEqual([
      ['http://a.test', 'page_1'],
      ['http://a.test/LA-s', 'page_1'],
      ['http://b.test', 'page_2'],
      ['http://b.test/LB-s', 'page_2'],
      ['about:blank', undefined],
    ]);
  });

  it('exports one navigation by nav_seq: its page and its requests, its document request (started under the previous nav_seq) included', () => {
    const har = build(two, { ...OPTIONS, navSeqs: new Set([2]) });
    expect(har.log.pages.map((p) => p.title)).toEqual(['http://b.test']);
    expect(har.log.entries.map((e) => e.request.url)).toEqual(['http://b.test', 'http://b.test/LB-s']);
  });
});

describe('HarBuilder: the document', () => {
  it('validates against the HAR 1.2 JSON schema', () => {
    const events = ['document', 'get_json', 'post_json', 'redirect_chain', 'refused', 'aborted', 'not_found', 'image', 'long_header'].flatMap((name) =>
      networkEvents(name),
    );
    const har = build(events);
    const validate = harValidator();
    expect(validate(har), JSON.stringify(validate.errors)).toBe(true);
    expect(har.log.entries.length).toBeGreaterThanOrEqual(events.filter((e) => e.type !== 'network_request').length);
  });

  it('is a complete document with no events', () => {
    expect(build([])).toEqual({ log: { version: '1.2', creator: OPTIONS.creator, entries: [], pages: [] } });
  });
});
