// The gateway's archive (docs/gateway.md) with real agents on real headless Chromium, on SQLite
// and on PostgreSQL: every event of a live session is archived once, byte for byte; reads
// through the gateway answer as the agent's history does, from the archive then the agent with
// no gap or duplicate at the switch (pages and the stream); a session deleted through the gateway
// keeps everything it logged up to the DELETE, and the official SDK reads it after the agent's
// process is gone (history, stream, HAR, the session list with its counts); an agent that
// vanishes without a DELETE ends its session after the silence limit.

import type Kernel from '@onkernel/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../../src/agent.ts';
import type { QueuedEvent } from '../../src/archive/archive-writer.ts';
import { archivedEvent } from '../../src/archive/event-row.ts';
import { FILTER_CATEGORIES } from '../../../src/stream/event-filter.ts';
import { BACKENDS, GatewayRig, uniqueName } from './support/gateway-harness.ts';
import { AgentProgram, eventually } from './support/gateway-processes.ts';
import { gatewaySuite, readyTab } from './support/gateway-suite.ts';
import { Driver, SseClient, type Tab } from '../../../test/e2e/support/harness.ts';

const AGENT_TOKEN = 'agent-token-of-the-archive-tests';
const suite = gatewaySuite('gateway-archive-test', '<!doctype html><title>archive</title><p>archive test page</p>');
const { storages } = suite;

type Envelope = { seq: number; event: { type: string; ts: number; data?: { text?: string; url?: string } } };

interface SessionView {
  session_id: string;
  project_id: string | null;
  status: 'active' | 'ended';
  deleted_at: string | null;
  ended_reason: string | null;
  event_count: number;
  error_count: number;
  failed_request_count: number;
}

/** A page as the client sees it: status, the headers that matter, the seqs, the body. */
async function pageOf(response: Response): Promise<{ status: number; hasMore: string | null; nextOffset: string | null; seqs: number[]; body: string }> {
  const body = await response.text();
  const seqs = response.status === 200 ? (JSON.parse(body) as Envelope[]).map((e) => e.seq) : [];
  return { status: response.status, hasMore: response.headers.get('x-has-more'), nextOffset: response.headers.get('x-next-offset'), seqs, body };
}

function agentFetch(agentUrl: string, path: string): Promise<Response> {
  return fetch(`${agentUrl}${path}`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
}

/** Every envelope of a history (agent or gateway), paged with offset from 1. */
async function everything(get: (query: string) => Promise<Response>): Promise<string[]> {
  const all: string[] = [];
  let offset = 1;
  for (;;) {
    const response = await get(`offset=${offset}&limit=1000`);
    if (response.status !== 200) throw new Error(`history: ${response.status} ${await response.text()}`);
    const items = (await response.json()) as unknown[];
    all.push(...items.map((item) => JSON.stringify(item)));
    if (response.headers.get('x-has-more') !== 'true') return all;
    offset = Number(response.headers.get('x-next-offset'));
  }
}

async function sessionOf(rig: GatewayRig, id: string): Promise<SessionView | undefined> {
  const list = (await (await rig.fetch('/browsers?status=all&limit=100')).json()) as SessionView[];
  return list.find((s) => s.session_id === id);
}

/** The agent's newest seq. */
async function latestSeq(agent: { url: string; sessionId: string }): Promise<number> {
  return ((await (await agentFetch(agent.url, `/browsers/${agent.sessionId}`)).json()) as { seq: number }).seq;
}

/** Waits until the archive holds every event the agent has logged so far. */
async function archivedUpToDate(rig: GatewayRig, agent: { url: string; sessionId: string }): Promise<number> {
  const seq = await latestSeq(agent);
  await eventually(async () => ((await sessionOf(rig, agent.sessionId))!.event_count >= seq ? true : undefined), `the archive to reach seq ${seq}`);
  return seq;
}

/**
 * Reads a page from the gateway and from the agent while the agent logged nothing new: an empty
 * page's X-Next-Offset is the seq after the newest event of the log (docs/events.md "History"),
 * so an event logged between the two reads would tell them apart. Reads again when one was.
 */
async function pagesWhileQuiet(rig: GatewayRig, agent: { url: string; sessionId: string }, query: string) {
  for (let attempt = 0; ; attempt++) {
    const before = await archivedUpToDate(rig, agent);
    const pages = await Promise.all([
      pageOf(await rig.fetch(`/browsers/${agent.sessionId}/telemetry/events?${query}`)),
      pageOf(await agentFetch(agent.url, `/browsers/${agent.sessionId}/telemetry/events?${query}`)),
    ]);
    if ((await latestSeq(agent)) === before || attempt === 10) return pages;
  }
}

/** Waits until the agent has taken a page snapshot (the settled navigation's, docs/events.md "Snapshots"). */
async function snapshotTaken(agentUrl: string, id: string): Promise<void> {
  await eventually(async () => {
    const page = (await (await agentFetch(agentUrl, `/browsers/${id}/telemetry/events?type=page_snapshot&limit=1`)).json()) as unknown[];
    return page.length > 0 ? true : undefined;
  }, 'a page snapshot');
}

const consoleLines = (tab: Tab, prefix: string, count: number) =>
  tab.evaluate(`for (let i = 0; i < ${count}; i++) console.log(${JSON.stringify(prefix)} + '-' + i)`);

describe.each(BACKENDS)('the archive on %s', (backend) => {
  describe('a live session', () => {
    let rig: GatewayRig;
    let agent: Agent;
    let driver: Driver;
    let tab: Tab;
    let id: string;

    beforeAll(async () => {
      [rig, agent] = await Promise.all([
        storages.fresh(backend).then((storage) => GatewayRig.start(storage, { archiveLeaseMs: 1000 })),
        startAgent({ port: 0, token: AGENT_TOKEN, logLevel: 'silent', screenshots: false }),
      ]);
      id = agent.sessionId;
      const registered = await rig.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: AGENT_TOKEN });
      if (registered.status !== 201) throw new Error(await registered.text());
      ({ driver, tab } = await readyTab(agent.url, id, agent.browserWsUrl, AGENT_TOKEN));
      await tab.navigate(suite.fixtures.url('/page'));
      await consoleLines(tab, uniqueName('live'), 300);
      await tab.evaluate(`console.error('first error'); console.error('second error')`);
      await tab.evaluate(`Promise.allSettled([fetch('/missing'), fetch('http://127.0.0.1:9/refused')])`);
      await archivedUpToDate(rig, agent);
    }, 60_000);
    afterAll(async () => {
      await driver?.close().catch(() => undefined);
      await agent?.close();
      await rig?.close();
    });

    it('archives every event the agent logged, each once, byte for byte as the agent serves it', async () => {
      // Network events of the fetches may still be coming: compare what both have up to one seq.
      const seq = await archivedUpToDate(rig, agent);
      const fromGateway = (await everything((q) => rig.fetch(`/browsers/${id}/telemetry/events?${q}`))).slice(0, seq);
      const fromAgent = (await everything((q) => agentFetch(agent.url, `/browsers/${id}/telemetry/events?${q}`))).slice(0, seq);
      expect({ count: fromGateway.length, same: fromGateway.every((e, i) => e === fromAgent[i]) }).toEqual({ count: seq, same: true });
    });

    it.each([
      ['category=console&limit=7&offset=1'],
      ['type=console_log&order=desc&limit=3'],
      ['category=network&limit=2&offset=1'],
      ['type=console_error&limit=1000'],
      ['nav_seq=1&category=console&limit=5'],
      ['category=control&limit=10'],
    ])('GET /telemetry/events?%s answers as the agent does: body, X-Has-More, X-Next-Offset', async (query) => {
      const [fromGateway, fromAgent] = await pagesWhileQuiet(rig, agent, query);
      expect(fromGateway).toEqual(fromAgent);
    });

    it('archives the page snapshots, and serves them only to a reader that names their category, as the agent does', async () => {
      await snapshotTaken(agent.url, id);
      const [fromGateway, fromAgent] = await pagesWhileQuiet(rig, agent, 'type=page_snapshot&limit=1000');
      expect(fromGateway.seqs.length).toBeGreaterThan(0);
      expect(fromGateway).toEqual(fromAgent);
      const unnamed = JSON.parse((await pageOf(await rig.fetch(`/browsers/${id}/telemetry/events?limit=1000`))).body) as Envelope[];
      expect(unnamed.filter((e) => e.event.type === 'page_snapshot')).toEqual([]);
    });

    it('the official SDK reads the same events through browsers.telemetry.events', async () => {
      const seen: Envelope[] = [];
      for await (const item of rig.sdk().browsers.telemetry.events(id, { category: ['console'], limit: 50, since: '1h' } as never))
        seen.push(item as unknown as Envelope);
      const lines = seen.filter((e) => e.event.type === 'console_log' && e.event.data?.text?.startsWith('live-'));
      expect(lines.length).toBe(300);
    });

    it('GET /browsers lists it live with its counts of events, errors and failed requests', async () => {
      const seq = await archivedUpToDate(rig, agent);
      const session = await eventually(async () => {
        const s = await sessionOf(rig, id);
        return s && s.failed_request_count >= 2 ? s : undefined;
      }, 'the failed requests to be counted');
      expect({ ...session, event_count: session.event_count >= seq }).toMatchObject({
        status: 'active',
        deleted_at: null,
        ended_reason: null,
        event_count: true,
        error_count: 2,
        failed_request_count: 2,
      });
    });
  });

  describe('a live session partly archived (the switch from the archive to the agent)', () => {
    let rig: GatewayRig;
    let agent: Agent;
    let driver: Driver;
    let tab: Tab;
    let id: string;
    /** The archive holds seq 1..ARCHIVED; the agent has more. */
    const ARCHIVED = 120;

    beforeAll(async () => {
      // No follower: the archive holds exactly what the test puts there.
      [rig, agent] = await Promise.all([
        storages.fresh(backend).then((storage) => GatewayRig.start(storage, { archiveFollow: false })),
        startAgent({ port: 0, token: AGENT_TOKEN, logLevel: 'silent', screenshots: false }),
      ]);
      id = agent.sessionId;
      await rig.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: AGENT_TOKEN });
      ({ driver, tab } = await readyTab(agent.url, id, agent.browserWsUrl, AGENT_TOKEN));
      await consoleLines(tab, uniqueName('switch'), 250);
      await eventually(async () => ((await latestSeq(agent)) >= 250 ? true : undefined), 'the lines on the agent');
      const page = (await (await agentFetch(agent.url, `/browsers/${id}/telemetry/events?offset=1&limit=${ARCHIVED}`)).json()) as unknown[];
      const browser = (await rig.gateway.store.findBrowser(id))!;
      const rows: QueuedEvent[] = page.map((item) => ({ sessionKey: browser.sessionKey, event: archivedEvent(JSON.stringify(item)) }));
      await rig.gateway.archive.store.inserts.insert(rows);
    }, 60_000);
    afterAll(async () => {
      await driver?.close().catch(() => undefined);
      await agent?.close();
      await rig?.close();
    });

    it('paging through reads the archive, then the agent: every event once, in order', async () => {
      const viaGateway: string[] = [];
      let offset = 1;
      for (;;) {
        const response = await rig.fetch(`/browsers/${id}/telemetry/events?offset=${offset}&limit=50`);
        viaGateway.push(...((await response.json()) as unknown[]).map((e) => JSON.stringify(e)));
        if (response.headers.get('x-has-more') !== 'true') break;
        offset = Number(response.headers.get('x-next-offset'));
      }
      const fromAgent = await everything((q) => agentFetch(agent.url, `/browsers/${id}/telemetry/events?${q}`));
      expect(viaGateway).toEqual(fromAgent);
    });

    it.each([
      [`offset=${ARCHIVED - 10}&limit=25`],
      [`offset=${ARCHIVED - 10}&limit=25&category=console`],
      [`order=desc&offset=${ARCHIVED + 10}&limit=25`],
      ['order=desc&limit=1000'],
    ])("a page across the switch (%s) is the agent's page", async (query) => {
      const [fromGateway, fromAgent] = await Promise.all([
        pageOf(await rig.fetch(`/browsers/${id}/telemetry/events?${query}`)),
        pageOf(await agentFetch(agent.url, `/browsers/${id}/telemetry/events?${query}`)),
      ]);
      expect(fromGateway).toEqual(fromAgent);
    });

    it("the stream with replay=all sends the archive, then the agent's events, then new ones: no gap, no duplicate", async () => {
      const stream = await SseClient.open(`${rig.url}/browsers/${id}/telemetry?replay=all`, rig.adminKey);
      const marker = uniqueName('after-switch');
      await tab.evaluate(`console.log(${JSON.stringify(marker)})`);
      await stream.waitFor((c) => c.envelopes.some((e) => e.event.type === 'console_log' && e.event.data?.text === marker), marker);
      stream.close();
      const ids = stream.frameIds;
      expect({
        first: ids[0],
        contiguous: ids.every((seq, i) => seq === i + 1),
        firstSeqHeader: stream.headers['x-first-seq'],
        problems: stream.problems,
      }).toEqual({
        first: 1,
        contiguous: true,
        firstSeqHeader: '1',
        problems: [],
      });
    });

    it('Last-Event-ID inside the archive resumes right after it, across the switch', async () => {
      const from = ARCHIVED - 5;
      const stream = await SseClient.open(`${rig.url}/browsers/${id}/telemetry`, rig.adminKey, { 'last-event-id': String(from) });
      await stream.waitFor((c) => c.frameIds.length >= 20, '20 frames');
      stream.close();
      expect({ ids: stream.frameIds.slice(0, 20), resume: stream.headers['x-resume'] }).toEqual({
        ids: Array.from({ length: 20 }, (_, i) => from + 1 + i),
        resume: 'exact',
      });
    });

    it('a filtered stream filters both parts', async () => {
      const stream = await SseClient.open(`${rig.url}/browsers/${id}/telemetry?replay=all&type=console_log`, rig.adminKey);
      await stream.waitFor((c) => c.frameIds.some((seq) => seq > ARCHIVED + 20), 'frames past the switch');
      stream.close();
      expect(stream.envelopes.every((e) => e.event.type === 'console_log')).toBe(true);
    });
  });

  describe('a session deleted through the gateway, after its agent process is gone', () => {
    let rig: GatewayRig;
    let agent: AgentProgram;
    let client: Kernel;
    let id: string;
    let projectId: string;
    const BURST = 500;
    let burstPrefix: string;

    beforeAll(async () => {
      [rig, agent] = await Promise.all([
        storages.fresh(backend).then((storage) => GatewayRig.start(storage, { archiveLeaseMs: 1000 })),
        AgentProgram.start(suite.bundles, AGENT_TOKEN),
      ]);
      id = agent.sessionId;
      client = rig.sdk();
      projectId = (await client.projects.create({ name: uniqueName('finished') })).id;
      await rig.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: AGENT_TOKEN, project_id: projectId });
      const { driver, tab } = await readyTab(agent.url, id, agent.browserWsUrl(), AGENT_TOKEN);
      await tab.navigate(suite.fixtures.url('/page'));
      await tab.evaluate(`console.error('one'); console.error('two')`);
      await tab.evaluate(`Promise.allSettled([fetch('/missing'), fetch('http://127.0.0.1:9/refused')])`);
      await snapshotTaken(agent.url, id);
      await eventually(async () => ((await sessionOf(rig, id))?.failed_request_count === 2 ? true : undefined), 'the failed requests archived');
      // A burst logged right before the DELETE, not waited for: the DELETE's drain must get it.
      burstPrefix = uniqueName('burst');
      await consoleLines(tab, burstPrefix, BURST);
      await client.browsers.deleteByID(id);
      await driver.close().catch(() => undefined);
      await agent.stop();
    }, 90_000);
    afterAll(async () => {
      await agent?.kill();
      await rig?.close();
    });

    it("the agent's process is gone", () => {
      expect(agent.process.exited).toBe(true);
    });

    it('the official SDK pages through every event of the session: seq 1 to the last, each once', async () => {
      const seqs: number[] = [];
      // Every category named: the opt-in ones (the DOM snapshots) too.
      for await (const item of client.browsers.telemetry.events(id, { limit: 200, category: [...FILTER_CATEGORIES] } as never))
        seqs.push((item as unknown as Envelope).seq);
      const session = (await sessionOf(rig, id))!;
      expect({ count: seqs.length, contiguous: seqs.every((seq, i) => seq === i + 1) }).toEqual({ count: session.event_count, contiguous: true });
    });

    it('keeps its page snapshots, for a reader that names their category', async () => {
      const snapshots = JSON.parse((await pageOf(await rig.fetch(`/browsers/${id}/telemetry/events?category=snapshot&limit=1000`))).body) as Envelope[];
      expect(snapshots.length).toBeGreaterThan(0);
    });

    it('the burst logged just before the DELETE is archived whole', async () => {
      const lines: string[] = [];
      for await (const item of client.browsers.telemetry.events(id, { category: ['console'], limit: 1000 } as never)) {
        const text = (item as unknown as Envelope).event.data?.text;
        if (text?.startsWith(`${burstPrefix}-`)) lines.push(text);
      }
      expect(lines).toEqual(Array.from({ length: BURST }, (_, i) => `${burstPrefix}-${i}`));
    });

    it('GET /browsers lists it ended by its DELETE, with its counts', async () => {
      const listed: SessionView[] = [];
      for await (const session of client.browsers.list({ status: 'all' })) listed.push(session as unknown as SessionView);
      const session = listed.find((s) => s.session_id === id)!;
      expect(session).toMatchObject({ project_id: projectId, status: 'ended', ended_reason: 'deleted', error_count: 2, failed_request_count: 2 });
    });

    it('status=deleted (the official name) lists it; the default (active) does not', async () => {
      const deleted = (await (await rig.fetch('/browsers?status=deleted')).json()) as SessionView[];
      const active = (await (await rig.fetch('/browsers')).json()) as SessionView[];
      expect([deleted.some((s) => s.session_id === id), active.some((s) => s.session_id === id)]).toEqual([true, false]);
    });

    it('the stream with replay=all replays the archive and ends', async () => {
      // Every category named: the opt-in ones (the DOM snapshots) too.
      const stream = await client.browsers.telemetry.stream(id, { replay: 'all', category: [...FILTER_CATEGORIES] } as never);
      const seqs: number[] = [];
      for await (const item of stream) seqs.push((item as unknown as Envelope).seq);
      const session = (await sessionOf(rig, id))!;
      expect({ count: seqs.length, contiguous: seqs.every((seq, i) => seq === i + 1) }).toEqual({ count: session.event_count, contiguous: true });
    });

    it('the stream resumes after Last-Event-ID and ends', async () => {
      const stream = await client.browsers.telemetry.stream(id, { 'Last-Event-ID': '10' });
      const seqs: number[] = [];
      for await (const item of stream) seqs.push((item as unknown as Envelope).seq);
      expect(seqs.slice(0, 3)).toEqual([11, 12, 13]);
    });

    it('the stream without replay or Last-Event-ID ends at once: nothing new will come', async () => {
      const response = await rig.fetch(`/browsers/${id}/telemetry`);
      expect([response.status, response.headers.get('content-type'), await response.text()]).toEqual([200, 'text/event-stream', '']);
    });

    it('the HAR comes from the archive: the request that answered 404 and the one refused', async () => {
      const response = await rig.fetch(`/browsers/${id}/har`);
      const har = (await response.json()) as { log: { creator: { name: string }; entries: Array<{ request: { url: string }; response: { status: number } }> } };
      const byUrl = new Map(har.log.entries.map((e) => [e.request.url, e.response.status]));
      expect([response.status, har.log.creator.name, byUrl.get(suite.fixtures.url('/missing')), byUrl.get('http://127.0.0.1:9/refused')]).toEqual([
        200,
        'browser-telemetry-gateway',
        404,
        0,
      ]);
    });

    it('GET /browsers/{id} is 404 afterwards, as before the archive', async () => {
      expect((await rig.fetch(`/browsers/${id}`)).status).toBe(404);
    });

    it('its id cannot be registered again while its archive is kept: 409 conflict', async () => {
      const response = await rig.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: AGENT_TOKEN });
      expect([response.status, ((await response.json()) as { code: string }).code]).toEqual([409, 'conflict']);
    });
  });

  describe('an agent that vanishes without a DELETE', () => {
    let rig: GatewayRig;
    let agent: AgentProgram;
    let id: string;

    beforeAll(async () => {
      [rig, agent] = await Promise.all([
        storages.fresh(backend).then((storage) => GatewayRig.start(storage, { archiveLeaseMs: 500, archiveSilenceMs: 1500 })),
        AgentProgram.start(suite.bundles, AGENT_TOKEN),
      ]);
      id = agent.sessionId;
      await rig.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: AGENT_TOKEN });
      const { driver, tab } = await readyTab(agent.url, id, agent.browserWsUrl(), AGENT_TOKEN);
      await consoleLines(tab, uniqueName('vanishing'), 50);
      await archivedUpToDate(rig, agent);
      await driver.close().catch(() => undefined);
      await agent.kill();
    }, 60_000);
    afterAll(async () => {
      await rig?.close();
    });

    it('is marked ended after the silence limit, by that reason', async () => {
      const session = await eventually(
        async () => {
          const s = await sessionOf(rig, id);
          return s?.status === 'ended' ? s : undefined;
        },
        'the session to end',
        15_000,
      );
      expect(session.ended_reason).toBe('agent_silent');
    });

    it('its events stay readable', async () => {
      const events = (await (await rig.fetch(`/browsers/${id}/telemetry/events?category=console&limit=1000`)).json()) as Envelope[];
      expect(events.filter((e) => e.event.data?.text?.startsWith('vanishing-')).length).toBe(50);
    });
  });
});
