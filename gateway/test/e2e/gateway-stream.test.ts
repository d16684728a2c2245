// The telemetry stream through the gateway (docs/gateway.md, §5): a flood from a real agent arrives
// whole and in order; a stalled client holds the gateway to a bounded amount of data in flight
// (the producer is made to wait instead), and afterwards still gets every byte; the stream ends
// when the agent's does; a client that leaves releases the agent's side.
//
// The stall test uses a stand-in agent that writes frames as fast as its socket accepts them,
// up to far more than the bound, and counts what it wrote: if the gateway buffered instead of
// pushing back, the producer would get all of it out, and the test would fail.

import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../../src/agent.ts';
import { BACKENDS, GatewayRig, TestStorages, uniqueName } from './support/gateway-harness.ts';
import { consoleText, Driver, SseClient, type Tab } from '../../../test/e2e/support/harness.ts';
import { listenLocally, closeWithConnections } from './support/local-server.ts';

const AGENT_TOKEN = 'agent-token-for-the-stream-tests';
const FLOOD = 20_000;
const MiB = 1024 * 1024;
/** What the stand-in agent tries to write to a stalled client: far beyond the bound. */
const STALL_CAP = 256 * MiB;
/**
 * The most data that may be in flight between the stand-in agent and a stalled client: the
 * gateway's stream buffers (tens of KiB) plus the kernel's socket buffers of both hops (about
 * 8 MiB measured here, mostly the two send buffers, net.ipv4.tcp_wmem allowing 4 MiB each).
 * A gateway that buffered instead of pushing back would hold the whole STALL_CAP.
 */
const IN_FLIGHT_BOUND = 32 * MiB;

const storages = new TestStorages();
afterAll(() => storages.close());

/** Until `read()` has stayed the same for `quietMs` (or `timeoutMs` passed): a producer that is stuck. */
async function waitUntilSteady(read: () => number, quietMs: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let value = read();
  let since = Date.now();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    const next = read();
    if (next !== value) {
      value = next;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) {
      return value;
    }
    if (Date.now() > deadline) throw new Error(`still changing after ${timeoutMs} ms (at ${value})`);
  }
}

/**
 * A stand-in agent: answers the telemetry path with SSE frames of ~1 KiB, numbered from 1,
 * written as fast as the socket takes them, until `cap` bytes or stop().
 */
class FloodingAgent {
  written = 0;
  frames = 0;
  upstreamClosed = false;
  private stopped = false;
  private finish: (() => void) | undefined;
  private readonly server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform' });
    res.flushHeaders();
    req.on('close', () => (this.upstreamClosed = true));
    void this.produce(res);
  });
  url = '';

  async start(): Promise<this> {
    this.url = await listenLocally(this.server);
    return this;
  }

  /** Stops producing and ends the response once what was written is flushed. */
  stop(): void {
    this.stopped = true;
    this.finish?.();
  }

  private async produce(res: http.ServerResponse): Promise<void> {
    const padding = 'x'.repeat(1000);
    while (!this.stopped && this.written < STALL_CAP && !res.destroyed) {
      const seq = this.frames + 1;
      const frame = `id: ${seq}\ndata: {"seq":${seq},"event":{"ts":1,"type":"console_log","source":{"kind":"cdp"},"data":{"text":"${padding}"}}}\n\n`;
      this.frames = seq;
      this.written += Buffer.byteLength(frame);
      if (!res.write(frame)) {
        await new Promise<void>((resolve) => {
          this.finish = resolve;
          res.once('drain', resolve);
          res.once('close', resolve);
        });
        this.finish = undefined;
      }
    }
    if (!res.destroyed) res.end();
  }

  close(): Promise<void> {
    return closeWithConnections(this.server);
  }
}

/** A raw client that counts bytes and checks frame numbering without keeping the text. */
class CountingClient {
  received = 0;
  ended = false;
  nextSeq = 1;
  problems: string[] = [];
  private tail = '';
  private res: http.IncomingMessage | undefined;
  private req: http.ClientRequest | undefined;

  static open(url: string, key: string): Promise<CountingClient> {
    const client = new CountingClient();
    return new Promise((resolve, reject) => {
      client.req = http.get(url, { headers: { authorization: `Bearer ${key}` } }, (res) => {
        client.res = res;
        res.on('data', (chunk: Buffer) => client.onData(chunk));
        res.on('end', () => (client.ended = true));
        res.on('error', () => undefined);
        resolve(client);
      });
      client.req.on('error', reject);
    });
  }

  private onData(chunk: Buffer): void {
    this.received += chunk.length;
    const text = this.tail + chunk.toString('latin1');
    const frames = text.split('\n\n');
    this.tail = frames.pop()!;
    for (const frame of frames) {
      const id = Number(/^id: (\d+)\n/.exec(frame)?.[1]);
      if (id !== this.nextSeq && this.problems.length < 5) this.problems.push(`expected id ${this.nextSeq}, got ${id}`);
      this.nextSeq = id + 1;
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

describe.each(BACKENDS)('the stream through the gateway on %s', (backend) => {
  let rig: GatewayRig;

  beforeAll(async () => {
    // The stand-in agents count what they write to the gateway's stream: the archive's follower
    // would be a second reader of theirs (docs/gateway.md "Following"). This suite is about the
    // forwarded stream alone.
    rig = await GatewayRig.start(await storages.fresh(backend), { archiveFollow: false });
  });
  afterAll(() => rig?.close());

  describe('from a real agent', () => {
    let agent: Agent;
    let driver: Driver;
    let tab: Tab;
    let url: string;

    beforeAll(async () => {
      // A log large enough to hold the flood: this test is about the gateway losing nothing.
      agent = await startAgent({ port: 0, token: AGENT_TOKEN, logLevel: 'silent', screenshots: false, ringEvents: 4 * FLOOD });
      await rig.registerBrowser({ session_id: agent.sessionId, agent_url: agent.url, agent_token: AGENT_TOKEN });
      url = `${rig.url}/browsers/${agent.sessionId}/telemetry`;
      driver = await Driver.connect(agent.browserWsUrl);
      tab = await driver.firstPage();
      const watcher = await SseClient.open(url, rig.adminKey);
      await tab.ready(watcher);
      watcher.close();
    });
    afterAll(async () => {
      await driver?.close().catch(() => undefined);
      await agent?.close();
    });

    it(`a flood of ${FLOOD} console events arrives complete, with contiguous seq`, async () => {
      const prefix = uniqueName('flood');
      const client = await SseClient.open(url, rig.adminKey);
      await tab.evaluate(`for (let i = 0; i < ${FLOOD}; i++) console.log(${JSON.stringify(prefix)} + '-' + i)`);
      await client.waitFor(
        (c) => c.envelopes.at(-1)?.event.type === 'console_log' && consoleText(c.envelopes.at(-1)!.event) === `${prefix}-${FLOOD - 1}`,
        'the last line',
        60_000,
      );
      client.close();
      const lines = client
        .ofType('console_log')
        .map(consoleText)
        .filter((t) => t?.startsWith(`${prefix}-`));
      const ids = client.frameIds;
      const gaps = ids.filter((id, i) => i > 0 && id !== ids[i - 1]! + 1);
      expect({ count: lines.length, inOrder: lines.every((t, i) => t === `${prefix}-${i}`), gaps, problems: client.problems }).toEqual({
        count: FLOOD,
        inOrder: true,
        gaps: [],
        problems: [],
      });
    }, 90_000);

    it("the stream ends when the agent's ends", async () => {
      const client = await SseClient.open(url, rig.adminKey);
      await agent.close();
      await client.waitForEnd();
      expect(client.ended).toBe(true);
    });
  });

  describe('from a stand-in agent that floods as fast as it can', () => {
    let flooding: FloodingAgent;
    let client: CountingClient;
    let inFlight: number;

    beforeAll(async () => {
      flooding = await new FloodingAgent().start();
      const session = uniqueName('flooding');
      await rig.registerBrowser({ session_id: session, agent_url: flooding.url, agent_token: AGENT_TOKEN });
      client = await CountingClient.open(`${rig.url}/browsers/${session}/telemetry`, rig.adminKey);
      // The client stops reading at once; the producer goes on until something makes it wait.
      client.pause();
      const written = await waitUntilSteady(() => flooding.written, 500, 30_000);
      inFlight = written - client.received;
      console.info(`stalled client: ${(inFlight / MiB).toFixed(2)} MiB in flight, producer stopped at ${(written / MiB).toFixed(2)} MiB`);
    }, 60_000);
    afterAll(async () => {
      client?.close();
      await flooding?.close();
    });

    it('a stalled client leaves a bounded amount in flight: the producer is made to wait', () => {
      expect(inFlight).toBeLessThanOrEqual(IN_FLIGHT_BOUND);
    });

    it('after the stall every byte arrives, frames numbered without a gap', async () => {
      flooding.stop();
      client.resume();
      const deadline = Date.now() + 30_000;
      while (!client.ended && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect({ ended: client.ended, received: client.received, lastSeq: client.nextSeq - 1, problems: client.problems }).toEqual({
        ended: true,
        received: flooding.written,
        lastSeq: flooding.frames,
        problems: [],
      });
    });
  });

  describe('a client that goes away', () => {
    it("closes the gateway's request to the agent", async () => {
      const flooding = await new FloodingAgent().start();
      const session = uniqueName('abandoned');
      await rig.registerBrowser({ session_id: session, agent_url: flooding.url, agent_token: AGENT_TOKEN });
      const client = await CountingClient.open(`${rig.url}/browsers/${session}/telemetry`, rig.adminKey);
      client.pause();
      client.close();
      const deadline = Date.now() + 10_000;
      while (!(flooding.upstreamClosed && rig.gateway.openExchanges === 0) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await flooding.close();
      expect([flooding.upstreamClosed, rig.gateway.openExchanges]).toEqual([true, 0]);
    });
  });
});
