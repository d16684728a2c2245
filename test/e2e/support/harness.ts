// Shared pieces of the end-to-end tests: a local fixture server with per-test routes, an SSE
// client that parses frames exactly, and a CDP driver that plays the user on the same browser.

import CDP from 'chrome-remote-interface';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Envelope, EventType, TelemetryEvent } from '../../../injected/schema.ts';
import { KEEPALIVE_COMMENT } from '../../../src/stream/sse-frame.ts';

// ---- fixture server ---------------------------------------------------------------------------

/** Answers a request itself (status, headers, timing, streaming); used instead of `body`. */
export type RouteHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export interface Route {
  body: string;
  type?: string;
  headers?: Record<string, string>;
  handler?: RouteHandler;
}

/** Serves `routes` on 127.0.0.1; the same port answers as `localhost` (another site). */
export class FixtureServer {
  readonly routes = new Map<string, Route>();
  private server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const route = this.routes.get(path);
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (route.handler) {
      route.handler(req, res);
      return;
    }
    res.writeHead(200, { 'content-type': route.type ?? 'text/html; charset=utf-8', ...route.headers }).end(route.body);
  });
  port = 0;

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** `http://127.0.0.1:port/path` */
  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** The same server under another site: `http://localhost:port/path`. */
  crossSiteUrl(path: string): string {
    return `http://localhost:${this.port}${path}`;
  }

  route(path: string, body: string, type?: string, headers?: Record<string, string>): string {
    this.routes.set(path, { body, type, headers });
    return this.url(path);
  }

  /** A dynamic route: `handler` answers every request to `path`. */
  handle(path: string, handler: RouteHandler): string {
    this.routes.set(path, { body: '', handler });
    return this.url(path);
  }

  /** A 1×1 GIF answered after `delayMs`: a page with it in an <img> is loading that long. */
  slowImage(path: string, delayMs: number): string {
    return this.handle(path, (_req, res) => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'image/gif' });
        res.end(Buffer.from('R0lGODlhAQABAAAAACwAAAAAAQABAAA=', 'base64'));
      }, delayMs);
    });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

// ---- SSE client -------------------------------------------------------------------------------

export interface SseResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Raw body text (error bodies, or the stream so far). */
  raw: string;
}

/** A stream subscriber: parses `id:`/`data:` frames strictly and keeps every envelope. */
export class SseClient {
  readonly envelopes: Envelope[] = [];
  /** Date.now() when each envelope arrived (same index as `envelopes`). */
  readonly arrivals: number[] = [];
  readonly frameIds: number[] = [];
  keepalives = 0;
  raw = '';
  status = 0;
  headers: http.IncomingHttpHeaders = {};
  ended = false;
  readonly problems: string[] = [];
  private buffer = '';
  private req: http.ClientRequest | undefined;
  private res: http.IncomingMessage | undefined;
  private waiters: Array<() => void> = [];

  static async open(url: string, token: string | undefined, headers: Record<string, string> = {}): Promise<SseClient> {
    const client = new SseClient();
    await client.connect(url, token, headers);
    return client;
  }

  private connect(url: string, token: string | undefined, headers: Record<string, string>): Promise<void> {
    return new Promise((resolve, reject) => {
      const allHeaders: Record<string, string> = { ...headers };
      if (token !== undefined) allHeaders.authorization = `Bearer ${token}`;
      this.req = http.get(url, { headers: allHeaders }, (res) => {
        this.res = res;
        this.status = res.statusCode ?? 0;
        this.headers = res.headers;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => this.onData(chunk));
        res.on('end', () => {
          this.ended = true;
          this.notify();
        });
        res.on('error', () => undefined);
        resolve();
      });
      this.req.on('error', reject);
    });
  }

  private onData(chunk: string): void {
    this.raw += chunk;
    if (this.status !== 200) return;
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) !== -1) {
      const frame = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      this.parseFrame(frame);
    }
    this.notify();
  }

  private parseFrame(frame: string): void {
    if (frame === KEEPALIVE_COMMENT) {
      this.keepalives++;
      return;
    }
    const match = /^id: (\d+)\ndata: (.*)$/s.exec(frame);
    if (!match || match[2]!.includes('\n')) {
      this.problems.push(`malformed frame: ${JSON.stringify(frame.slice(0, 200))}`);
      return;
    }
    const id = Number(match[1]);
    const envelope = JSON.parse(match[2]!) as Envelope;
    if (envelope.seq !== id) this.problems.push(`id ${id} != seq ${envelope.seq}`);
    this.frameIds.push(id);
    this.envelopes.push(envelope);
    this.arrivals.push(Date.now());
  }

  private notify(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  get events(): TelemetryEvent[] {
    return this.envelopes.map((e) => e.event);
  }

  ofType<T extends EventType>(type: T): Array<TelemetryEvent<T>> {
    return this.events.filter((e): e is TelemetryEvent<T> => e.type === type);
  }

  /** Wait until `predicate` holds over the envelopes received so far. */
  async waitFor(predicate: (client: SseClient) => boolean, what: string, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this)) {
      if (this.ended) throw new Error(`stream ended while waiting for ${what}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; got types: ${this.events.map((e) => e.type).join(',')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 250));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Wait for the first event matching `match` and return it. */
  async waitForEvent<T extends EventType>(type: T, match: (e: TelemetryEvent<T>) => boolean = () => true, timeoutMs?: number): Promise<TelemetryEvent<T>> {
    let found: TelemetryEvent<T> | undefined;
    await this.waitFor(() => (found = this.ofType(type).find(match)) !== undefined, type, timeoutMs);
    return found!;
  }

  async waitForEnd(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.ended) {
      if (Date.now() > deadline) throw new Error('stream did not end');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 100);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  pause(): void {
    this.res?.pause();
  }

  resume(): void {
    this.res?.resume();
  }

  close(): void {
    this.req?.destroy();
  }
}

/** Resolves once `condition()` holds (checked every 20 ms); rejects naming `what` after the timeout. */
export async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Text of a console event's data (for matching). */
export function consoleText(event: TelemetryEvent): string | undefined {
  return (event.data as { text?: string } | undefined)?.text;
}

// ---- CDP driver -------------------------------------------------------------------------------

/** The test's own CDP client: opens tabs and runs scripts in them, as a user would. */
export class Driver {
  private constructor(private readonly client: CDP.Client) {}

  static async connect(browserWsUrl: string): Promise<Driver> {
    return new Driver(await CDP({ target: browserWsUrl, local: true }));
  }

  send(method: string, params: object = {}, sessionId?: string): Promise<any> {
    return (this.client.send as (m: string, p: object, s?: string) => Promise<unknown>)(method, params, sessionId);
  }

  /** Any existing page target (the tab Chromium starts with). */
  async firstPage(): Promise<Tab> {
    const { targetInfos } = (await this.send('Target.getTargets')) as { targetInfos: Array<{ targetId: string; type: string }> };
    const page = targetInfos.find((t) => t.type === 'page');
    if (!page) throw new Error('no page target');
    return this.attach(page.targetId);
  }

  /** A new tab at about:blank (navigate it once the agent follows it: see `Tab.ready`). */
  async newTab(): Promise<Tab> {
    const { targetId } = (await this.send('Target.createTarget', { url: 'about:blank' })) as { targetId: string };
    return this.attach(targetId);
  }

  /** Resolves with the params of the next `method` event on `sessionId`. */
  waitForCdpEvent(method: string, sessionId: string, timeoutMs = 10_000): Promise<any> {
    return new Promise((resolve, reject) => {
      const emitter = this.client as unknown as import('node:events').EventEmitter;
      const event = `${method}.${sessionId}`;
      const timer = setTimeout(() => {
        emitter.off(event, onEvent);
        reject(new Error(`no ${method} within ${timeoutMs} ms`));
      }, timeoutMs);
      const onEvent = (params: unknown) => {
        clearTimeout(timer);
        resolve(params);
      };
      emitter.once(event, onEvent);
    });
  }

  /** Calls `listener` with the params of every `method` event on `sessionId` until the returned function is called. */
  onCdpEvent(method: string, sessionId: string, listener: (params: any) => void): () => void {
    const emitter = this.client as unknown as import('node:events').EventEmitter;
    const event = `${method}.${sessionId}`;
    emitter.on(event, listener);
    return () => emitter.off(event, listener);
  }

  async attach(targetId: string): Promise<Tab> {
    const { sessionId } = (await this.send('Target.attachToTarget', { targetId, flatten: true })) as { sessionId: string };
    return new Tab(this, targetId, sessionId);
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

let probeCounter = 0;

export class Tab {
  constructor(
    private readonly driver: Driver,
    readonly targetId: string,
    readonly sessionId: string,
  ) {}

  send(method: string, params: object = {}): Promise<any> {
    return this.driver.send(method, params, this.sessionId);
  }

  evaluate(expression: string): Promise<any> {
    return this.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
  }

  /** Resolves once the agent reports this tab's console: its instrumentation is in place. */
  async ready(stream: SseClient): Promise<void> {
    const marker = `probe-${process.pid}-${++probeCounter}`;
    const seen = () => stream.ofType('console_log').some((e) => consoleText(e) === marker);
    const deadline = Date.now() + 15_000;
    // A tab left paused never answers Runtime.evaluate: each probe waits at most 2 s, so such a
    // tab fails here with a message instead of hanging the test until its timeout.
    let answered = false;
    let failure: unknown;
    while (!seen()) {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows what the probe threw, as it is
      if (failure !== undefined) throw failure;
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new Error(
          `tab ${this.targetId}: no console line reached the stream in 15 s${answered ? '' : ' (Runtime.evaluate never answered: is the tab paused?)'}`,
        );
      }
      const probe = this.evaluate(`console.log(${JSON.stringify(marker)})`).then(
        () => (answered = true),
        (err: unknown) => (failure = err),
      );
      await Promise.race([probe, new Promise((resolve) => setTimeout(resolve, Math.min(remaining, 2000)))]);
      try {
        await stream.waitFor(seen, marker, 500);
      } catch {
        // Not yet: probe again.
      }
    }
  }

  /** Navigate and wait for the load event of the new document (driver side). */
  async navigate(url: string): Promise<void> {
    await this.send('Page.navigate', { url });
  }

  async close(): Promise<void> {
    await this.driver.send('Target.closeTarget', { targetId: this.targetId });
  }
}

// ---- one agent per test file ------------------------------------------------------------------

export const TOKEN = 'test-token-with-every-scope';

export interface TestRig {
  agent: import('../../../src/agent.ts').Agent;
  server: FixtureServer;
  driver: Driver;
  /** A stream opened right after start (sees every event from the first). */
  stream: SseClient;
  streamUrl: string;
  close(): Promise<void>;
}

export async function startRig(options: import('../../../src/agent.ts').StartAgentOptions = {}): Promise<TestRig> {
  const { startAgent } = await import('../../../src/agent.ts');
  const server = await new FixtureServer().start();
  // Every rig has a durable store of its own (the command line's default is a data directory).
  const dataDir = options.dataDir === undefined ? mkdtempSync(join(tmpdir(), 'bta-data-')) : undefined;
  const agent = await startAgent({ port: 0, token: TOKEN, logLevel: 'silent', ...(dataDir ? { dataDir } : {}), ...options });
  const streamUrl = `${agent.url}/browsers/${agent.sessionId}/telemetry`;
  const stream = await SseClient.open(`${streamUrl}?replay=all`, TOKEN);
  const driver = await Driver.connect(agent.browserWsUrl);
  return {
    agent,
    server,
    driver,
    stream,
    streamUrl,
    async close() {
      stream.close();
      await driver.close().catch(() => undefined);
      await agent.close();
      await server.close();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
