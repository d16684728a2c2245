// The archive when gateways die (docs/gateway.md "Leases"), with real agents on real headless
// Chromium and gateways run as processes: a gateway killed with -9 while a session logs
// hundreds of events a second, then started again, archives every event exactly once (its
// followers resume at the archived seq; what the killed one had queued is read again from the
// agent). Two gateway instances on one PostgreSQL follow each session exactly once, and when
// the one following dies, the other takes its sessions over within 30 s (default lease) and
// loses nothing.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../../src/agent.ts';
import { generateApiKey } from '../../src/api-key.ts';
import { openStore, type StorageConfig } from '../../src/storage/open-store.ts';
import { BACKENDS, TestStorages } from './support/gateway-harness.ts';
import { bundlePrograms, eventually, startGatewayProgram, type Bundles } from './support/gateway-processes.ts';
import { Driver, SseClient, type Tab } from '../../../test/e2e/support/harness.ts';

const AGENT_TOKEN = 'agent-token-of-the-crash-tests';
const storages = new TestStorages();
let bundles: Bundles;

beforeAll(async () => {
  bundles = await bundlePrograms('gateway-archive-crash-test');
}, 60_000);
afterAll(async () => {
  bundles?.remove();
  await storages.close();
});

function storageConfig(storage: { dataDir: string } | { databaseUrl: string }): StorageConfig {
  return 'dataDir' in storage ? { kind: 'sqlite', dataDir: storage.dataDir } : { kind: 'postgres', databaseUrl: storage.databaseUrl };
}

/** An org-wide key made in the storage before any gateway serves it. */
async function keyIn(storage: { dataDir: string } | { databaseUrl: string }): Promise<string> {
  const { store } = await openStore(storageConfig(storage));
  const secret = generateApiKey();
  await store.createApiKey({
    name: 'crash tests',
    projectId: null,
    digest: secret.digest,
    maskedKey: secret.masked,
    createdBy: { id: 'test', email: '', name: 'crash tests' },
    expiresAt: null,
  });
  await store.db.close();
  return secret.key;
}

function call(url: string, key: string, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${url}${path}`, { ...init, headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${key}` } });
}

async function register(url: string, key: string, agent: Agent): Promise<void> {
  const response = await call(url, key, '/browsers', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ session_id: agent.sessionId, agent_url: agent.url, agent_token: AGENT_TOKEN }),
  });
  if (response.status !== 201) throw new Error(`registration: ${response.status} ${await response.text()}`);
}

async function eventCount(url: string, key: string, sessionId: string): Promise<number> {
  const list = (await (await call(url, key, '/browsers?status=all&limit=100')).json()) as Array<{ session_id: string; event_count: number }>;
  return list.find((s) => s.session_id === sessionId)?.event_count ?? 0;
}

/** Every archived seq of a session, read through a gateway's history. */
async function archivedSeqs(url: string, key: string, sessionId: string): Promise<number[]> {
  const seqs: number[] = [];
  let offset = 1;
  for (;;) {
    const response = await call(url, key, `/browsers/${sessionId}/telemetry/events?offset=${offset}&limit=1000`);
    seqs.push(...((await response.json()) as Array<{ seq: number }>).map((e) => e.seq));
    if (response.headers.get('x-has-more') !== 'true') return seqs;
    offset = Number(response.headers.get('x-next-offset'));
  }
}

async function latestSeq(agent: Agent): Promise<number> {
  return ((await (await fetch(`${agent.url}/browsers/${agent.sessionId}`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } })).json()) as { seq: number })
    .seq;
}

/** Starts the page logging `perTick` console lines every 10 ms; returns a function that stops it. */
async function startLogging(tab: Tab, perTick: number): Promise<() => Promise<void>> {
  await tab.evaluate(
    `window.__n = 0; window.__logging = setInterval(() => { for (let i = 0; i < ${perTick}; i++) console.log('steady-' + (window.__n++)); }, 10)`,
  );
  return async () => {
    await tab.evaluate('clearInterval(window.__logging)');
  };
}

async function readyTab(agent: Agent): Promise<{ driver: Driver; tab: Tab }> {
  const driver = await Driver.connect(agent.browserWsUrl);
  const tab = await driver.firstPage();
  const watcher = await SseClient.open(`${agent.url}/browsers/${agent.sessionId}/telemetry`, AGENT_TOKEN);
  await tab.ready(watcher);
  watcher.close();
  return { driver, tab };
}

const contiguousFrom1 = (seqs: number[]) => seqs.every((seq, i) => seq === i + 1);

describe.each(BACKENDS)('a gateway killed with -9 mid-session, on %s', (backend) => {
  let agent: Agent;
  let driver: Driver;
  let tab: Tab;
  let key: string;
  let url: string;
  let seqs: number[];
  let latest: number;
  let archivedBeforeKill: number;

  beforeAll(async () => {
    const storage = await storages.fresh(backend);
    key = await keyIn(storage);
    agent = await startAgent({ port: 0, token: AGENT_TOKEN, logLevel: 'silent', screenshots: false });
    const lease = ['--archive-lease-ms', '1000'];
    const first = await startGatewayProgram(bundles, storage, lease);
    await register(first.url, key, agent);
    ({ driver, tab } = await readyTab(agent));
    const stopLogging = await startLogging(tab, 5);
    archivedBeforeKill = await eventually(async () => {
      const n = await eventCount(first.url, key, agent.sessionId);
      return n > 500 ? n : undefined;
    }, 'events archived by the first gateway');
    await first.process.kill();
    // The session goes on logging while no gateway runs.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const second = await startGatewayProgram(bundles, storage, lease);
    url = second.url;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await stopLogging();
    latest = await latestSeq(agent);
    await eventually(async () => ((await eventCount(url, key, agent.sessionId)) >= latest ? true : undefined), `the archive to reach seq ${latest}`, 30_000);
    seqs = await archivedSeqs(url, key, agent.sessionId);
    await second.process.stop();
  }, 120_000);
  afterAll(async () => {
    await driver?.close().catch(() => undefined);
    await agent?.close();
  });

  it('the first gateway had archived part of the session before it was killed', () => {
    expect(archivedBeforeKill).toBeGreaterThan(500);
  });

  it('after the restart the archive holds every event of the session, each once: seq 1 to the last', () => {
    expect({ count: seqs.length, last: seqs.at(-1), contiguous: contiguousFrom1(seqs) }).toEqual({ count: latest, last: latest, contiguous: true });
  });
});

describe('two gateway instances on one PostgreSQL', () => {
  /** One agent with its own Chromium, two more attached to that browser: three sessions. */
  const agents: Agent[] = [];
  let driver: Driver;
  let tab: Tab;
  let key: string;
  let db: Awaited<ReturnType<typeof openStore>>['store'];
  const gateways: Array<Awaited<ReturnType<typeof startGatewayProgram>>> = [];
  let stopLogging: () => Promise<void>;
  let survivor: Awaited<ReturnType<typeof startGatewayProgram>>;

  beforeAll(async () => {
    const storage = (await storages.fresh('postgres')) as { databaseUrl: string };
    key = await keyIn(storage);
    db = (await openStore(storageConfig(storage))).store;
    const owner = await startAgent({ port: 0, token: AGENT_TOKEN, logLevel: 'silent', screenshots: false });
    agents.push(owner);
    for (let i = 0; i < 2; i++)
      agents.push(await startAgent({ port: 0, token: AGENT_TOKEN, logLevel: 'silent', screenshots: false, cdpUrl: owner.browserWsUrl }));
    // Default leases (15 s, renewed every 5 s): the takeover below is the real one.
    gateways.push(await startGatewayProgram(bundles, storage), await startGatewayProgram(bundles, storage));
    for (const agent of agents) await register(gateways[0]!.url, key, agent);
    ({ driver, tab } = await readyTab(owner));
    stopLogging = await startLogging(tab, 2);
    await eventually(
      async () => {
        const counts = await Promise.all(agents.map((a) => eventCount(gateways[1]!.url, key, a.sessionId)));
        return counts.every((n) => n > 200) ? true : undefined;
      },
      'every session archived',
      30_000,
    );
  }, 120_000);
  afterAll(async () => {
    for (const gateway of gateways) await gateway.process.kill();
    await driver?.close().catch(() => undefined);
    for (const agent of [...agents].reverse()) await agent.close();
    await db?.db.close();
  });

  async function holders(): Promise<Array<string | null>> {
    const rows = await db.db.all<{ session_id: string; lease_holder: string | null; lease_expires_at: number | null }>(
      'SELECT b.session_id, f.lease_holder, f.lease_expires_at FROM browsers b LEFT JOIN archive_follow f ON f.session_key = b.session_key',
    );
    return agents.map((a) => rows.find((r) => r.session_id === a.sessionId)?.lease_holder ?? null);
  }

  it('each session is followed by exactly one of the two instances, and stays with it', async () => {
    const before = await holders();
    const instances = gateways.map((g) => g.instance);
    await new Promise((resolve) => setTimeout(resolve, 6000));
    expect({ valid: before.every((h) => h !== null && instances.includes(h)), stable: await holders() }).toEqual({ valid: true, stable: before });
  }, 20_000);

  it('when the instance following dies (-9), the other takes its sessions over within 30 s', async () => {
    const held = await holders();
    const dying = gateways.find((g) => held.includes(g.instance))!;
    survivor = gateways.find((g) => g !== dying)!;
    const killedAt = Date.now();
    await dying.process.kill();
    await eventually(async () => ((await holders()).every((h) => h === survivor.instance) ? true : undefined), 'the takeover', 30_000);
    const takeoverMs = Date.now() - killedAt;
    console.info(`takeover after kill -9: ${takeoverMs} ms (lease 15 s, renewal every 5 s)`);
    expect(takeoverMs).toBeLessThanOrEqual(30_000);
  }, 40_000);

  it('every session is archived exactly once, seq 1 to the last, across the takeover', async () => {
    await stopLogging();
    const results = [];
    for (const agent of agents) {
      const latest = await latestSeq(agent);
      await eventually(async () => ((await eventCount(survivor.url, key, agent.sessionId)) >= latest ? true : undefined), `seq ${latest} archived`, 30_000);
      const seqs = await archivedSeqs(survivor.url, key, agent.sessionId);
      const [row] = await db.db.all<{ n: number }>(
        'SELECT COUNT(*) AS n FROM archive_events e JOIN browsers b ON b.session_key = e.session_key WHERE b.session_id = ?',
        [agent.sessionId],
      );
      results.push({ rows: Number(row!.n), count: seqs.length, contiguous: contiguousFrom1(seqs), latest });
    }
    expect(results).toEqual(results.map((r) => ({ rows: r.latest, count: r.latest, contiguous: true, latest: r.latest })));
  }, 60_000);
});
