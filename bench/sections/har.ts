// HAR export build time (docs/export.md "HAR"): a session of 10k requests, each a network_request
// and a network_response shaped like the real ones (headers, a body for one in four, resource
// timing), on 20 navigations with their page events, kept in the durable store on disk. Measured:
// the builder alone (events already parsed), the whole export through the history read
// (harPieces), and GET /browsers/{id}/har over real HTTP, with the peak heap growth of each.
// Budget: ≤ 1 s for the HTTP export. Run on its own: `node bench/har.mjs [--requests=N]`.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import type { EventDataByType, EventType, TelemetryEvent } from '../../injected/schema.ts';
import { eventOf } from '../../src/event-data.ts';
import { HarBuilder } from '../../src/export/har.ts';
import { harPieces } from '../../src/export/har-stream.ts';
import { BearerAuth } from '../../src/http/auth.ts';
import { registerHarRoutes } from '../../src/http/har-routes.ts';
import { errorBodySchema } from '../../src/http/schemas.ts';
import { EventStore } from '../../src/store/event-store.ts';
import { EventLog } from '../../src/stream/event-log.ts';
import { HistoryReader } from '../../src/stream/history.ts';
import type { HttpDeps } from '../../src/http/http-deps.ts';

export interface HarBenchResult {
  requests: number;
  events: number;
  /** Size of the document. */
  bytes: number;
  builderMs: number;
  historyMs: number;
  httpMs: number;
  /** Peak heap growth during the HTTP export (sampled). */
  httpHeapMiB: number;
}

const TOKEN = 'bench-har-token';
const TAB = 'TAB0000000000000000000000000000001';
const ORIGIN = 'http://127.0.0.1:8080';
const TYPES = ['Script', 'Stylesheet', 'Image', 'Fetch', 'XHR', 'Font'] as const;
const MIME: Record<string, string> = {
  Script: 'application/javascript',
  Stylesheet: 'text/css',
  Image: 'image/png',
  Fetch: 'application/json',
  XHR: 'application/json',
  Font: 'font/woff2',
};

function requestHeaders(i: number): Record<string, string> {
  return {
    Accept: '*/*',
    'User-Agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36',
    Referer: `${ORIGIN}/app/page-${Math.floor(i / 500)}.html`,
    'sec-ch-ua': '"Chromium";v="156", "Not)A;Brand";v="24"',
    'sec-ch-ua-mobile': '?0',
    'sec-ch-ua-platform': '"Linux"',
  };
}

function responseHeaders(mime: string, length: number): Record<string, string> {
  return {
    'content-type': mime,
    'content-length': String(length),
    date: 'Wed, 25 Nov 2026 12:00:00 GMT',
    'cache-control': 'max-age=3600',
    etag: '"5f2a-1234567890"',
    connection: 'keep-alive',
    'keep-alive': 'timeout=5',
  };
}

const timing = (offset: number) => ({
  request_time_offset: offset,
  proxy_start: -1,
  proxy_end: -1,
  dns_start: -1,
  dns_end: -1,
  connect_start: -1,
  connect_end: -1,
  ssl_start: -1,
  ssl_end: -1,
  worker_start: -1,
  worker_ready: -1,
  send_start: 0.2,
  send_end: 0.5,
  receive_headers_start: 3.1,
  receive_headers_end: 3.3,
});

/** An event caused by the CDP event `method`, as the agent reports it. */
function cdpEvent<T extends EventType>(ts: number, type: T, method: string, data: EventDataByType[T]): TelemetryEvent {
  return eventOf<T>({ ts, type, source: { kind: 'cdp', event: method }, data });
}

/** The session's events in seq order: per navigation its document, then its subresources. */
export function* sessionEvents(requests: number, navigations = 20): Generator<TelemetryEvent> {
  const t0 = Date.now() * 1000 - requests * 2_000;
  const perNav = Math.ceil(requests / navigations);
  const body = JSON.stringify({ items: Array.from({ length: 40 }, (_, k) => ({ id: k, name: `item ${k}` })) });
  let ts = t0;
  let made = 0;
  for (let nav = 1; made < requests; nav++) {
    const loader = `LOADER${String(nav).padStart(27, '0')}`;
    const ctx = (navSeq: number, url: string, loaderId = loader) => ({
      session_id: 'S1',
      target_id: TAB,
      target_type: 'page' as const,
      frame_id: TAB,
      loader_id: loaderId,
      url,
      nav_seq: navSeq,
    });
    const pageUrl = `${ORIGIN}/app/page-${nav}.html`;
    for (let k = 0; k < perNav && made < requests; k++, made++) {
      const id = k === 0 ? loader : `1000.${made}`;
      const type = k === 0 ? 'Document' : TYPES[made % TYPES.length]!;
      const url = k === 0 ? pageUrl : `${ORIGIN}/static/${type.toLowerCase()}/${made}.bin?v=3`;
      const navSeq = k === 0 ? nav - 1 : nav;
      const mime = k === 0 ? 'text/html' : MIME[type]!;
      // The fields a request's two events both begin with.
      const request = { ...ctx(navSeq, url), request_id: id, method: 'GET' };
      yield cdpEvent(ts, 'network_request', 'Network.requestWillBeSent', {
        ...request,
        document_url: pageUrl,
        headers: requestHeaders(made),
        resource_type: type,
        initiator_type: k === 0 ? 'other' : 'parser',
      });
      if (k === 0) {
        yield cdpEvent(ts + 500, 'page_navigation', 'Page.frameNavigated', {
          url: pageUrl,
          frame_id: TAB,
          loader_id: loader,
          session_id: 'S1',
          target_id: TAB,
          target_type: 'page',
        });
      }
      const withBody = type === 'Document' || type === 'Fetch' || type === 'XHR';
      yield cdpEvent(ts + 4_000, 'network_response', 'Network.loadingFinished', {
        ...request,
        status: 200,
        status_text: 'OK',
        headers: responseHeaders(mime, body.length),
        mime_type: mime,
        resource_type: type,
        ...(withBody ? { body } : {}),
        remote_ip_address: '127.0.0.1',
        remote_port: 8080,
        protocol: 'http/1.1',
        connection_id: 40 + (made % 6),
        timing: timing(-3.9),
        encoded_data_length: body.length + 220,
        data_length: body.length,
      });
      ts += 2_000;
      if (k === 5) {
        yield cdpEvent(ts, 'page_dom_content_loaded', 'Page.domContentEventFired', { ...ctx(nav, pageUrl), cdp_timestamp: 0 });
        yield cdpEvent(ts + 1000, 'page_load', 'Page.loadEventFired', { ...ctx(nav, pageUrl), cdp_timestamp: 0 });
      }
    }
  }
}

/** Peak heap growth while `run` runs, sampled every 5 ms. */
async function withHeapPeak<T>(run: () => Promise<T>): Promise<{ value: T; peakMiB: number }> {
  globalThis.gc?.();
  const base = process.memoryUsage().heapUsed;
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 5);
  try {
    const value = await run();
    peak = Math.max(peak, process.memoryUsage().heapUsed);
    return { value, peakMiB: (peak - base) / 2 ** 20 };
  } finally {
    clearInterval(timer);
  }
}

/** GET /browsers/{id}/har over real HTTP, the route as the agent serves it. */
async function exportOverHttp(log: EventLog, history: HistoryReader): Promise<{ ms: number; received: number; peakMiB: number }> {
  const app = Fastify();
  app.addSchema(errorBodySchema);
  const deps = { sessionId: 'bench', tokens: [{ token: TOKEN, scopes: ['*'] }], log, history, session: { isTerminated: () => false } } as unknown as HttpDeps;
  registerHarRoutes(app, deps, new BearerAuth(deps.tokens));
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const { value, peakMiB } = await withHeapPeak(async () => {
      const t = performance.now();
      const res = await fetch(`${url}/browsers/bench/har`, { headers: { authorization: `Bearer ${TOKEN}` } });
      let received = 0;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) received += chunk.length;
      if (res.status !== 200) throw new Error(`GET /har: ${res.status}`);
      return { ms: performance.now() - t, received };
    });
    return { ...value, peakMiB };
  } finally {
    await app.close();
  }
}

export async function runHar(options: { requests: number; log?: (line: string) => void }): Promise<HarBenchResult> {
  const say = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const events = [...sessionEvents(options.requests)];
  const creator = { name: 'browser-telemetry-agent', version: 'bench' };

  const dir = mkdtempSync(join(tmpdir(), 'bta-bench-har-'));
  const store = new EventStore({ dataDir: dir, sessionId: 'bench', retainBytes: 2 ** 30, retainMs: 72 * 3_600_000 });
  try {
    const log = new EventLog({ maxEvents: 16_384, maxBytes: 64 * 2 ** 20, archive: store });
    for (let i = 0; i < events.length; i++) {
      log.append(events[i]!);
      if (i % 100 === 99) store.flush();
    }
    store.flush();
    const history = new HistoryReader(log, store);

    // Over real HTTP first, cold (as an agent's first export), then the parts on their own.
    const http = await exportOverHttp(log, history);

    // Through the history read (from disk), JSON parsing included.
    let started = performance.now();
    let historyBytes = 0;
    for (const piece of harPieces(history, { lastSeq: log.latestSeq }, { creator })) historyBytes += Buffer.byteLength(piece);
    const historyMs = performance.now() - started;

    // The builder alone, on events already parsed.
    started = performance.now();
    const builder = new HarBuilder({ creator });
    let bytes = builder.begin().length;
    for (const e of events) bytes += builder.add(e).length;
    bytes += builder.end().length;
    const builderMs = performance.now() - started;

    const result: HarBenchResult = {
      requests: options.requests,
      events: events.length,
      bytes: http.received,
      builderMs,
      historyMs,
      httpMs: http.ms,
      httpHeapMiB: http.peakMiB,
    };
    say(
      `har: ${result.requests} requests (${result.events} events), ${(result.bytes / 2 ** 20).toFixed(1)} MiB document (builder ${(bytes / 2 ** 20).toFixed(1)}, history ${(historyBytes / 2 ** 20).toFixed(1)}): ` +
        `GET /har ${http.ms.toFixed(0)} ms cold (peak heap +${http.peakMiB.toFixed(1)} MiB), then through the history ${historyMs.toFixed(0)} ms, builder alone ${builderMs.toFixed(0)} ms`,
    );
    return result;
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
