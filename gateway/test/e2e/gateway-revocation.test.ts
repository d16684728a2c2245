// A forwarded stream does not outlive its API key (src/gateway/http/key-watch.ts): deleting the
// key through the API ends its open streams at once, a key that expires ends them at its
// expiry, and a key deleted elsewhere (another gateway instance, create-key's storage, SQL) ends
// them at the next re-check. Other keys' streams flow on.
//
// The agent is a stand-in that writes one SSE frame every 50 ms for as long as it is asked.

import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, GatewayRig, TestStorages, uniqueName } from './support/gateway-harness.ts';
import { listenLocally, closeWithConnections } from './support/local-server.ts';

const TICK_MS = 50;
/** The re-check period of the gateway under test (the default is 30 s). */
const RECHECK_MS = 200;
/** "Promptly": well under the default re-check period, so only the event-driven path passes. */
const PROMPTLY_MS = 2000;

const storages = new TestStorages();
afterAll(() => storages.close());

/** An SSE agent that writes a numbered frame every TICK_MS; counts the streams it serves. */
class TickingAgent {
  open = 0;
  private readonly server = http.createServer((req, res) => {
    this.open++;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform' });
    res.flushHeaders();
    let seq = 0;
    const timer = setInterval(() => res.write(`id: ${++seq}\ndata: {"seq":${seq}}\n\n`), TICK_MS);
    req.on('close', () => {
      clearInterval(timer);
      this.open--;
    });
  });
  url = '';

  async start(): Promise<this> {
    this.url = await listenLocally(this.server);
    return this;
  }

  close(): Promise<void> {
    return closeWithConnections(this.server);
  }
}

/** A raw SSE client: frames received, and whether (and how) the response ended. */
class StreamClient {
  frames = 0;
  outcome: 'open' | 'end' | 'aborted' = 'open';
  endedAt = 0;
  private req: http.ClientRequest | undefined;

  static open(url: string, key: string): Promise<StreamClient> {
    const client = new StreamClient();
    return new Promise((resolve, reject) => {
      client.req = http.get(url, { headers: { authorization: `Bearer ${key}` } }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (client.frames += chunk.split('\n\n').length - 1));
        res.on('end', () => client.over('end'));
        res.on('error', () => undefined);
        res.on('close', () => client.over('aborted'));
        resolve(client);
      });
      client.req.on('error', reject);
    });
  }

  private over(how: 'end' | 'aborted'): void {
    if (this.outcome !== 'open') return;
    this.outcome = how;
    this.endedAt = Date.now();
  }

  /** Until `count` more frames arrived (the stream flows). */
  async flowing(count = 3): Promise<void> {
    const target = this.frames + count;
    await until(() => this.frames >= target || this.outcome !== 'open', 'frames');
    if (this.outcome !== 'open') throw new Error('the stream ended');
  }

  async waitUntilOver(timeoutMs = PROMPTLY_MS): Promise<void> {
    await until(() => this.outcome !== 'open', 'the stream to end', timeoutMs);
  }

  close(): void {
    this.req?.destroy();
  }
}

async function until(condition: () => boolean, what: string, timeoutMs = PROMPTLY_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.each(BACKENDS)('open streams and their API keys on %s', (backend) => {
  let rig: GatewayRig;
  let agent: TickingAgent;
  let url: string;
  const clients: StreamClient[] = [];

  /** A stream through the gateway with `key`, already flowing. */
  async function stream(key: string): Promise<StreamClient> {
    const client = await StreamClient.open(url, key);
    clients.push(client);
    await client.flowing();
    return client;
  }

  beforeAll(async () => {
    // The stand-in serves the test's streams only: no archive follower (docs/gateway.md).
    rig = await GatewayRig.start(await storages.fresh(backend), { archiveFollow: false });
    agent = await new TickingAgent().start();
    const session = uniqueName('ticking');
    await rig.registerBrowser({ session_id: session, agent_url: agent.url, agent_token: 't' });
    url = `${rig.url}/browsers/${session}/telemetry`;
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await rig?.close();
    await agent?.close();
  });

  describe('a key deleted through the API', () => {
    let revoked: StreamClient;
    let other: StreamClient;
    let deletedAt: number;
    let key: string;
    beforeAll(async () => {
      const created = await rig.sdk().apiKeys.create({ name: uniqueName('revoked') });
      key = created.key;
      [revoked, other] = await Promise.all([stream(created.key), stream(rig.adminKey)]);
      deletedAt = Date.now();
      await rig.sdk().apiKeys.delete(created.id);
    });

    it('ends its open stream promptly, cleanly', async () => {
      await revoked.waitUntilOver();
      expect([revoked.outcome, revoked.endedAt - deletedAt < PROMPTLY_MS]).toEqual(['end', true]);
    });

    it("closes the stream's request to the agent", async () => {
      await revoked.waitUntilOver();
      // The admin's stream is the only one left.
      await until(() => agent.open === 1, "the agent's side to close");
      expect(agent.open).toBe(1);
    });

    it("leaves other keys' streams flowing", async () => {
      await revoked.waitUntilOver();
      await other.flowing();
      expect(other.outcome).toBe('open');
    });

    it('cannot open a new stream', async () => {
      const response = await rig.fetch(new URL(url).pathname, { key });
      expect(response.status).toBe(401);
    });
  });

  it('a key that expires ends its stream at its expiry', async () => {
    const expiresAt = Date.now() + 1000;
    const client = await stream(await rig.createKey({ expiresAt }));
    await client.waitUntilOver(expiresAt - Date.now() + PROMPTLY_MS);
    expect([client.outcome, client.endedAt >= expiresAt, client.endedAt - expiresAt < PROMPTLY_MS]).toEqual(['end', true, true]);
  });
});

describe.each(BACKENDS)('a key deleted elsewhere, on %s', (backend) => {
  it('ends its stream at the next re-check', async () => {
    const storage = await storages.fresh(backend);
    const rig = await GatewayRig.start(storage, { keyRecheckMs: RECHECK_MS, archiveFollow: false });
    const agent = await new TickingAgent().start();
    const session = uniqueName('ticking');
    await rig.registerBrowser({ session_id: session, agent_url: agent.url, agent_token: 't' });
    const created = await rig.sdk().apiKeys.create({ name: uniqueName('deleted-elsewhere') });
    const client = await StreamClient.open(`${rig.url}/browsers/${session}/telemetry`, created.key);
    try {
      await client.flowing();
      // Not through this gateway's API: as another instance or create-key's storage would.
      await rig.gateway.store.deleteApiKey(created.id);
      const deletedAt = Date.now();
      await client.waitUntilOver(RECHECK_MS + PROMPTLY_MS);
      expect([client.outcome, client.endedAt - deletedAt < RECHECK_MS + PROMPTLY_MS]).toEqual(['end', true]);
    } finally {
      client.close();
      await rig.close();
      await agent.close();
    }
  });
});
