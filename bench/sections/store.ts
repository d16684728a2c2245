// Section "store": the durable event store on its own (docs/storage.md, docs/performance.md).
// What persisting costs per event, a filtered history page of 1000 out of 100k stored events over
// real HTTP, and how fast a client resuming 50k events back is streamed from disk. No browser is
// involved: the events are synthetic, shaped like the real ones (sizes, types, targets).

import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { listenUrl } from '../../src/http/listen.ts';
import { createHttpServer } from '../../src/http/server.ts';
import { EventStore } from '../../src/store/event-store.ts';
import { EventLog } from '../../src/stream/event-log.ts';
import { HistoryReader } from '../../src/stream/history.ts';
import { StreamHub } from '../../src/stream/stream-hub.ts';
import { defaultTelemetryConfig } from '../../src/telemetry/telemetry-config.ts';
import type { BenchContext } from '../lib/context.ts';
import { quantile } from '../lib/stats.ts';
import { syntheticContext } from '../lib/synthetic.ts';

export interface StoreResult {
  events: number;
  /** Main-thread µs per event for append, without and with the store (flushes included). */
  appendUsRam: number;
  appendUsStore: number;
  historyPages: Array<{ query: string; p50Ms: number; p90Ms: number; items: number }>;
  resume: { events: number; seconds: number; eventsPerS: number };
}

const TOKEN = 'bench-store-token';
const TARGETS = ['T1', 'T2', 'T3', 'T4', 'T5'];

function syntheticEvent(i: number): TelemetryEvent {
  const targetId = TARGETS[i % TARGETS.length]!;
  const roll = i % 10;
  const context = syntheticContext(i, targetId);
  const ts = Date.now() * 1000;
  const source = { kind: 'cdp', event: 'Runtime.consoleAPICalled', metadata: { target_id: targetId } } as const;
  if (roll < 7) {
    const text = `line ${i} ${'x'.repeat(120)}`;
    const args = [`line ${i}`];
    return roll < 6
      ? { ts, type: 'console_log', source, data: { ...context, level: 'log', text, args } }
      : { ts, type: 'console_error', source, data: { ...context, level: 'error', text, args } };
  }
  const exchange = {
    ...context,
    request_id: `R${i}`,
    method: 'GET',
    url: `http://127.0.0.1:8080/api/${i}`,
    resource_type: 'Fetch',
    headers: { accept: '*/*', 'user-agent': 'HeadlessChrome' },
  };
  return roll < 9
    ? { ts, type: 'network_request', source, data: { ...exchange, document_url: context.url ?? '', initiator_type: 'script' } }
    : { ts, type: 'network_response', source, data: { ...exchange, status: 200, status_text: 'OK', mime_type: 'application/json' } };
}

function appendAll(log: EventLog, store: EventStore | undefined, events: number): number {
  const started = process.cpuUsage();
  for (let i = 0; i < events; i++) {
    log.append(syntheticEvent(i));
    // The store writes every 100 ms in production; here in batches of the same size as 1k/s gives.
    if (store && i % 100 === 99) store.flush();
  }
  store?.flush();
  const used = process.cpuUsage(started);
  return (used.user + used.system) / events;
}

async function getPage(url: string): Promise<{ ms: number; items: number }> {
  const started = performance.now();
  const res = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  const body = (await res.json()) as unknown[];
  if (res.status !== 200) throw new Error(`history read ${url}: ${res.status}`);
  return { ms: performance.now() - started, items: body.length };
}

/** Streams from Last-Event-ID until `untilSeq` arrives; events and seconds. */
function resumeFrom(url: string, lastEventId: number, untilSeq: number): Promise<{ events: number; seconds: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let events = 0;
    let tail = '';
    const req = http.get(url, { headers: { authorization: `Bearer ${TOKEN}`, 'last-event-id': String(lastEventId) } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const text = tail + chunk;
        const cut = text.lastIndexOf('\n\n');
        tail = text.slice(cut + 2);
        for (const m of text.slice(0, cut).matchAll(/^id: (\d+)$/gm)) {
          events++;
          if (Number(m[1]) >= untilSeq) {
            req.destroy();
            resolve({ events, seconds: (performance.now() - started) / 1000 });
            return;
          }
        }
      });
    });
    req.on('error', (err) => {
      if (events === 0) reject(err);
    });
  });
}

export async function runStore(ctx: BenchContext, options: { events: number; reads: number }): Promise<StoreResult> {
  const dir = mkdtempSync(join(tmpdir(), 'bta-bench-store-'));
  try {
    const ramLog = new EventLog({ maxEvents: 16_384, maxBytes: 64 * 2 ** 20 });
    const appendUsRam = appendAll(ramLog, undefined, options.events);
    const store = new EventStore({ dataDir: dir, sessionId: 'bench', retainBytes: 2 ** 30, retainMs: 72 * 3_600_000 });
    const log = new EventLog({ maxEvents: 16_384, maxBytes: 64 * 2 ** 20, archive: store });
    const appendUsStore = appendAll(log, store, options.events);
    ctx.log(`store: ${options.events} events appended, ${appendUsRam.toFixed(1)} µs/event RAM only, ${appendUsStore.toFixed(1)} µs/event with the store`);

    const hub = new StreamHub(log, { keepaliveMs: 15_000 });
    const app = createHttpServer({
      sessionId: 'bench',
      tokens: [{ token: TOKEN, scopes: ['*'] }],
      hub,
      log,
      history: new HistoryReader(log, store),
      logId: store.logId,
      session: {
        createdAt: new Date(),
        telemetryConfig: () => defaultTelemetryConfig(),
        cdpConnected: () => true,
        isTerminated: () => false,
        updateTelemetry: async () => defaultTelemetryConfig(),
        terminate: async () => undefined,
      },
    });
    const url = await listenUrl(app, '127.0.0.1', 0);
    try {
      const base = `${url}/browsers/bench/telemetry/events?limit=1000`;
      const queries = ['type=console_error', 'category=network&target_id=T3', 'category=console&order=desc'];
      const historyPages: StoreResult['historyPages'] = [];
      for (const query of queries) {
        const times: number[] = [];
        let items = 0;
        for (let r = 0; r < options.reads; r++) {
          const offset = 1 + Math.floor((((r * 7919) % 97) / 97) * (options.events - 20_000));
          const page = await getPage(`${base}&${query}&offset=${query.includes('desc') ? offset + 20_000 : offset}`);
          times.push(page.ms);
          items = page.items;
        }
        historyPages.push({ query, p50Ms: quantile(times, 0.5), p90Ms: quantile(times, 0.9), items });
        ctx.log(`store: history ${query}: p50 ${quantile(times, 0.5).toFixed(1)} ms, p90 ${quantile(times, 0.9).toFixed(1)} ms, ${items} items`);
      }
      const latest = log.latestSeq;
      const back = Math.min(50_000, latest - 1);
      const resumed = await resumeFrom(`${url}/browsers/bench/telemetry`, latest - back, latest);
      const resume = { ...resumed, eventsPerS: resumed.events / resumed.seconds };
      ctx.log(`store: resumed ${resume.events} events in ${resume.seconds.toFixed(2)} s (${Math.round(resume.eventsPerS)} events/s)`);
      return { events: options.events, appendUsRam, appendUsStore, historyPages, resume };
    } finally {
      await hub.closeAll();
      await app.close();
      store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
