// An agent that takes a request and goes quiet (hung, SIGSTOPped) does not hold the caller
// (gateway/src/agent-link/agent-silence.ts): no response head in time is 504 browser_unavailable with
// the error body (x-should-retry: false unless the request is a GET); a body that stops is cut;
// a telemetry stream without a byte for 3 of the agent's keepalive periods ends. A live agent's
// keepalives, and a client that stops reading, never count as a dead agent.
//
// The agents here are stand-ins on real TCP: one accepts connections and never answers, one
// answers the head and then stalls, one keeps a stream alive with keepalives only, one floods.
// The gateway runs with short limits (300 ms) so that the tests take seconds.

import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, GatewayRig, TestStorages, uniqueName } from './support/gateway-harness.ts';
import { listenLocally, closeWithConnections } from './support/local-server.ts';

const RESPONSE_TIMEOUT_MS = 300;
const IDLE_TIMEOUT_MS = 300;
const KEEPALIVE_MS = 100;
/** 3 keepalive periods. */
const STREAM_LIMIT_MS = 3 * KEEPALIVE_MS;
/** Well past every limit, well short of a hang. */
const PROMPTLY_MS = 3000;

const storages = new TestStorages();
afterAll(() => storages.close());

/**
 * A TCP server that accepts every connection and never answers. It reads what it is sent (and
 * drops it), unless `reads` is false: then its sockets fill up, as a stopped process's would.
 */
class SilentAgent {
  private readonly sockets = new Set<net.Socket>();
  private readonly server: net.Server;
  url = '';

  constructor(reads = true) {
    this.server = net.createServer({ pauseOnConnect: !reads }, (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
      if (reads) socket.resume();
    });
  }

  async start(): Promise<this> {
    this.url = await listenLocally(this.server);
    return this;
  }

  /** Connections the gateway has open to it. */
  get connections(): number {
    return this.sockets.size;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * An HTTP server that answers the head and then stalls: JSON paths with a Content-Length and
 * part of the body, the telemetry paths with SSE headers and, with `keepaliveMs`, keepalives only.
 */
class StallingAgent {
  closedRequests = 0;
  private readonly server: http.Server;
  url = '';

  constructor(keepaliveMs?: number) {
    this.server = http.createServer((req, res) => {
      let timer: NodeJS.Timeout | undefined;
      req.on('close', () => {
        this.closedRequests++;
        clearInterval(timer);
      });
      if (req.url!.includes('/telemetry')) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform' });
        res.flushHeaders();
        if (keepaliveMs !== undefined) timer = setInterval(() => res.write(': keepalive\n\n'), keepaliveMs);
      } else {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        res.write('{"session_id":');
      }
    });
  }

  async start(): Promise<this> {
    this.url = await listenLocally(this.server);
    return this;
  }

  close(): Promise<void> {
    return closeWithConnections(this.server);
  }
}

/** An SSE agent that writes numbered frames as fast as its socket takes them, up to `frames`. */
class FloodingAgent {
  written = 0;
  private readonly server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    void this.produce(res);
  });
  url = '';

  constructor(private readonly frames: number) {}

  async start(): Promise<this> {
    this.url = await listenLocally(this.server);
    return this;
  }

  private async produce(res: http.ServerResponse): Promise<void> {
    const padding = 'x'.repeat(1000);
    while (this.written < this.frames && !res.destroyed) {
      this.written++;
      if (!res.write(`id: ${this.written}\ndata: {"text":"${padding}"}\n\n`)) {
        await new Promise<void>((resolve) => {
          res.once('drain', resolve);
          res.once('close', resolve);
        });
      }
    }
    res.end();
  }

  close(): Promise<void> {
    return closeWithConnections(this.server);
  }
}

/** A raw streaming client: how its response ended, and what it received. */
class StreamClient {
  status = 0;
  received = '';
  /** 'end': the response completed; 'aborted': it was cut. */
  outcome: 'open' | 'end' | 'aborted' = 'open';
  private res: http.IncomingMessage | undefined;
  private req: http.ClientRequest | undefined;

  static open(url: string, key: string): Promise<StreamClient> {
    const client = new StreamClient();
    return new Promise((resolve, reject) => {
      client.req = http.get(url, { headers: { authorization: `Bearer ${key}` } }, (res) => {
        client.res = res;
        client.status = res.statusCode ?? 0;
        res.setEncoding('latin1');
        res.on('data', (chunk: string) => (client.received += chunk));
        res.on('end', () => (client.outcome = 'end'));
        res.on('error', () => undefined);
        res.on('close', () => {
          if (client.outcome === 'open') client.outcome = 'aborted';
        });
        resolve(client);
      });
      client.req.on('error', reject);
    });
  }

  pause(): void {
    this.res?.pause();
  }

  resume(): void {
    this.res?.resume();
  }

  /** Resolves once the response is over (ended or cut); rejects after `timeoutMs`. */
  async over(timeoutMs = PROMPTLY_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.outcome === 'open') {
      if (Date.now() > deadline) throw new Error(`the stream was still open after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  close(): void {
    this.req?.destroy();
  }
}

async function until(condition: () => boolean, what: string, timeoutMs = PROMPTLY_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.each(BACKENDS)('an agent that goes quiet, through the gateway on %s', (backend) => {
  let rig: GatewayRig;
  let silent: SilentAgent;
  let silentSession: string;

  beforeAll(async () => {
    rig = await GatewayRig.start(await storages.fresh(backend), {
      // The stand-ins speak only what each test needs: the archive's follower would be one more
      // client of theirs (docs/gateway.md "Following").
      archiveFollow: false,
      agentResponseTimeoutMs: RESPONSE_TIMEOUT_MS,
      agentBatchMarginMs: RESPONSE_TIMEOUT_MS,
      agentIdleTimeoutMs: IDLE_TIMEOUT_MS,
      agentKeepaliveMs: KEEPALIVE_MS,
    });
    silent = await new SilentAgent().start();
    silentSession = uniqueName('silent');
    await rig.registerBrowser({ session_id: silentSession, agent_url: silent.url, agent_token: 't' });
  });
  afterAll(async () => {
    await rig?.close();
    await silent?.close();
  });

  /** A fetch through the gateway and how long it took to answer. */
  async function timed(path: string, init: RequestInit = {}): Promise<{ response: Response; body: any; ms: number }> {
    const started = Date.now();
    const response = await rig.fetch(path, init);
    const ms = Date.now() - started;
    return { response, body: await response.json(), ms };
  }

  describe('that accepts the connection and never answers', () => {
    it('GET /browsers/{id} is 504 browser_unavailable with the error body, after the response timeout', async () => {
      const { response, body, ms } = await timed(`/browsers/${silentSession}`);
      expect([response.status, body.code, typeof body.message, body.details[0].code, ms >= RESPONSE_TIMEOUT_MS, ms < PROMPTLY_MS]).toEqual([
        504,
        'browser_unavailable',
        'string',
        'agent_timeout',
        true,
        true,
      ]);
    });

    it('a GET 504 leaves retrying to the client (no x-should-retry: false)', async () => {
      const { response } = await timed(`/browsers/${silentSession}`);
      expect([response.status, response.headers.get('x-should-retry')]).toEqual([504, null]);
    });

    it('a computer batch is 504 with x-should-retry: false (the agent may have run it)', async () => {
      const { response, body } = await timed(`/browsers/${silentSession}/computer/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ actions: [{ type: 'sleep', sleep: { duration_ms: 1 } }] }),
      });
      expect([response.status, body.code, response.headers.get('x-should-retry')]).toEqual([504, 'browser_unavailable', 'false']);
    });

    it('a write_file is 504 with x-should-retry: false', async () => {
      const { response } = await timed(`/browsers/${silentSession}/fs/write_file?path=/tmp/x`, {
        method: 'PUT',
        headers: { 'content-type': 'application/octet-stream' },
        body: 'data',
      });
      expect([response.status, response.headers.get('x-should-retry')]).toEqual([504, 'false']);
    });

    it('a write_file whose body the agent does not take is 504 after the idle timeout', async () => {
      const stopped = await new SilentAgent(false).start();
      const session = uniqueName('stopped');
      await rig.registerBrowser({ session_id: session, agent_url: stopped.url, agent_token: 't' });
      // Far more than the sockets' buffers hold, so the upload stalls on the agent.
      const body = Buffer.alloc(64 * 1024 * 1024, 1);
      const started = Date.now();
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request(new URL(`${rig.url}/browsers/${session}/fs/write_file?path=/tmp/x`), {
          method: 'PUT',
          headers: { authorization: `Bearer ${rig.adminKey}`, 'content-type': 'application/octet-stream', 'content-length': body.length },
        });
        req.on('response', (res) => {
          resolve(res.statusCode ?? 0);
          req.destroy();
        });
        req.on('error', reject);
        req.end(body);
      });
      const ms = Date.now() - started;
      await stopped.close();
      expect([status, ms >= IDLE_TIMEOUT_MS, ms < PROMPTLY_MS]).toEqual([504, true, true]);
    });

    it('a telemetry stream is 504 after 3 keepalive periods without its head', async () => {
      const { response, body, ms } = await timed(`/browsers/${silentSession}/telemetry`);
      expect([response.status, body.code, ms >= STREAM_LIMIT_MS, ms < PROMPTLY_MS]).toEqual([504, 'browser_unavailable', true, true]);
    });

    it('the 504 does not reveal the agent address', async () => {
      const { body } = await timed(`/browsers/${silentSession}`);
      expect(JSON.stringify(body)).not.toContain('127.0.0.1');
    });

    it('the connections to the agent are closed afterwards', async () => {
      await timed(`/browsers/${silentSession}`);
      await until(() => silent.connections === 0, 'the connections to close');
      expect(silent.connections).toBe(0);
    });
  });

  describe('that answers the head and then stalls', () => {
    let stalling: StallingAgent;
    let session: string;
    beforeAll(async () => {
      stalling = await new StallingAgent().start();
      session = uniqueName('stalling');
      await rig.registerBrowser({ session_id: session, agent_url: stalling.url, agent_token: 't' });
    });
    afterAll(() => stalling?.close());

    it('a browser object whose body stops is 504 after the idle timeout', async () => {
      // The gateway reads the object whole to put its own cdp_ws_url in (docs/gateway.md "CDP endpoint").
      const client = await StreamClient.open(`${rig.url}/browsers/${session}`, rig.adminKey);
      await client.over();
      expect([client.status, client.outcome]).toEqual([504, 'end']);
      expect(JSON.parse(client.received)).toMatchObject({ code: 'browser_unavailable', details: [{ code: 'agent_timeout' }] });
    });

    it('a telemetry stream ends after 3 keepalive periods without a byte', async () => {
      const started = Date.now();
      const client = await StreamClient.open(`${rig.url}/browsers/${session}/telemetry`, rig.adminKey);
      await client.over();
      expect([client.status, client.outcome, Date.now() - started >= STREAM_LIMIT_MS]).toEqual([200, 'aborted', true]);
    });

    it("the agent's side is closed and nothing stays open in the gateway", async () => {
      const before = stalling.closedRequests;
      const client = await StreamClient.open(`${rig.url}/browsers/${session}/telemetry`, rig.adminKey);
      await client.over();
      await until(() => stalling.closedRequests > before && rig.gateway.openExchanges === 0, "the agent's side to close");
      expect(rig.gateway.openExchanges).toBe(0);
    });
  });

  describe('that is alive', () => {
    it('a stream with only keepalives stays open well past 3 keepalive periods', async () => {
      const alive = await new StallingAgent(KEEPALIVE_MS).start();
      const session = uniqueName('keepalives');
      await rig.registerBrowser({ session_id: session, agent_url: alive.url, agent_token: 't' });
      const client = await StreamClient.open(`${rig.url}/browsers/${session}/telemetry`, rig.adminKey);
      await new Promise((resolve) => setTimeout(resolve, 5 * STREAM_LIMIT_MS));
      const outcome = client.outcome;
      client.close();
      await alive.close();
      expect([outcome, client.received.includes(': keepalive')]).toEqual(['open', true]);
    });

    it('a client that stops reading for longer than the limit still gets the whole stream', async () => {
      const frames = 20_000;
      const flooding = await new FloodingAgent(frames).start();
      const session = uniqueName('flooding');
      await rig.registerBrowser({ session_id: session, agent_url: flooding.url, agent_token: 't' });
      const client = await StreamClient.open(`${rig.url}/browsers/${session}/telemetry`, rig.adminKey);
      client.pause();
      // The agent is blocked by the client's backpressure for 5 limits: its silence is not death.
      await new Promise((resolve) => setTimeout(resolve, 5 * STREAM_LIMIT_MS));
      client.resume();
      await client.over(20_000);
      await flooding.close();
      expect([client.outcome, client.received.split('\n\n').length - 1]).toEqual(['end', frames]);
    });
  });
});

/** An agent that answers a computer batch after `delayMs`, as one that runs its sleeps would. */
class SlowBatchAgent {
  private readonly server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const timer = setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), this.delayMs);
      res.on('close', () => clearTimeout(timer));
    });
  });
  url = '';

  constructor(private readonly delayMs: number) {}

  async start(): Promise<this> {
    this.url = await listenLocally(this.server);
    return this;
  }

  close(): Promise<void> {
    return closeWithConnections(this.server);
  }
}

// docs/gateway.md "Timeouts": each route's wait for the head follows what the route may take.
describe('per-route timeouts', () => {
  const batch = (sleepMs: number) => ({
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ actions: [{ type: 'sleep', sleep: { duration_ms: sleepMs } }] }),
  });

  it('with the defaults, a hung agent is 504 within 10 s for GET and PATCH', { timeout: 40_000 }, async () => {
    const rig = await GatewayRig.start(await storages.fresh('sqlite'), { archiveFollow: false });
    const hung = await new SilentAgent().start();
    const session = uniqueName('hung');
    await rig.registerBrowser({ session_id: session, agent_url: hung.url, agent_token: 't' });
    try {
      const started = Date.now();
      const answers = await Promise.all([
        rig.fetch(`/browsers/${session}`).then((r) => [r.status, Date.now() - started]),
        rig
          .fetch(`/browsers/${session}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{}' })
          .then((r) => [r.status, Date.now() - started]),
      ]);
      expect(answers.map(([status, ms]) => [status, ms! <= 10_500])).toEqual([
        [504, true],
        [504, true],
      ]);
    } finally {
      await rig.close();
      await hung.close();
    }
  });

  describe('a computer batch', () => {
    let rig: GatewayRig;
    let agent: SlowBatchAgent;
    let session: string;
    beforeAll(async () => {
      // Reads would give up after 300 ms; a batch waits for what it declares, plus 300 ms.
      rig = await GatewayRig.start(await storages.fresh('sqlite'), { archiveFollow: false, agentResponseTimeoutMs: 300, agentBatchMarginMs: 300 });
      agent = await new SlowBatchAgent(5_000).start();
      session = uniqueName('batch');
      await rig.registerBrowser({ session_id: session, agent_url: agent.url, agent_token: 't' });
    });
    afterAll(async () => {
      await rig?.close();
      await agent?.close();
    });

    it('with a 5 s sleep succeeds though it outlasts the read timeout', { timeout: 20_000 }, async () => {
      const response = await rig.fetch(`/browsers/${session}/computer/batch`, batch(5_000));
      expect(response.status).toBe(200);
    });

    it('that declares no wait is 504 once the margin passes', { timeout: 20_000 }, async () => {
      const started = Date.now();
      const response = await rig.fetch(`/browsers/${session}/computer/batch`, batch(1));
      expect([response.status, Date.now() - started < 4_000]).toEqual([504, true]);
    });
  });
});

// docs/configuration.md: a stopping gateway is closed within 5 s of the signal, whatever the agents do.
describe('shutdown with a stream to a hung agent open', () => {
  it('closes within the shutdown deadline though the agent never answers the head', { timeout: 30_000 }, async () => {
    const rig = await GatewayRig.start(await storages.fresh('sqlite'), { archiveFollow: false });
    const hung = await new SilentAgent().start();
    const session = uniqueName('hung-stream');
    await rig.registerBrowser({ session_id: session, agent_url: hung.url, agent_token: 't' });
    const req = http.get(`${rig.url}/browsers/${session}/telemetry/stream`, { headers: { authorization: `Bearer ${rig.adminKey}` } });
    req.on('error', () => undefined);
    await until(() => hung.connections > 0, 'the forwarded stream to reach the agent');
    const started = Date.now();
    await rig.close();
    const ms = Date.now() - started;
    req.destroy();
    await hung.close();
    expect(ms).toBeLessThan(4_500);
  });
});
