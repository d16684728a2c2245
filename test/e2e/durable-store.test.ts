// The durable store end to end, on real Chromium (docs/storage.md): seq across kill -9 and
// graceful restarts, resuming from disk after the ring, being told when an id left retention or
// came from another incarnation, filters on the stream and the history (with the official client's
// auto-pagination), and the crash-loss window.

import Kernel from '@onkernel/sdk';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../injected/schema.ts';
import { startAgent, type Agent } from '../../src/agent.ts';
import { consoleText, Driver, FixtureServer, SseClient, TOKEN, type Tab } from './support/harness.ts';
import { AgentProcess, cleanEnv, embeddedChromium } from './support/agent-process.ts';

let server: FixtureServer;
const dirs: string[] = [];
const newDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'bta-durable-'));
  dirs.push(dir);
  return dir;
};

beforeAll(async () => {
  server = await new FixtureServer().start();
  server.route('/blank.html', '<!doctype html><title>blank</title>');
  server.route('/data.json', '{"ok":true}', 'application/json');
  server.route(
    '/mixed.html',
    `<!doctype html><title>mixed</title><script>
      console.log('mixed start');
      fetch('/missing-' + Math.random()).catch(() => {});
      fetch('http://127.0.0.1:1/refused').catch(() => console.log('refused'));
      fetch('/data.json').then(() => console.warn('fetched'));
      console.error('an error line');
    </script>`,
  );
});

afterAll(async () => {
  await server?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const seqsOf = (client: SseClient) => client.envelopes.map((e) => e.seq);
const flood = (tab: Tab, prefix: string, count: number) => tab.evaluate(`for (let i = 0; i < ${count}; i++) console.log(${JSON.stringify(prefix)} + i)`);

async function firstTab(agent: { browserWsUrl: string }): Promise<{ driver: Driver; tab: Tab }> {
  const driver = await Driver.connect(agent.browserWsUrl);
  return { driver, tab: await driver.firstPage() };
}

async function history(url: string, id: string, query: string): Promise<{ envelopes: Envelope[]; headers: Headers; status: number }> {
  const res = await fetch(`${url}/browsers/${id}/telemetry/events?${query}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const body = (await res.json()) as Envelope[];
  return { envelopes: res.status === 200 ? body : [], headers: res.headers, status: res.status };
}

async function allHistory(url: string, id: string, query = ''): Promise<Envelope[]> {
  const out: Envelope[] = [];
  let offset = 0;
  for (;;) {
    const page = await history(url, id, `offset=${offset}&limit=1000${query ? `&${query}` : ''}`);
    out.push(...page.envelopes);
    if (page.headers.get('x-has-more') !== 'true') return out;
    offset = Number(page.headers.get('x-next-offset'));
  }
}

describe('restarts of the built agent on one data directory', () => {
  const sessionId = 'durable-restart-session';
  let dataDir: string;
  let agent: AgentProcess | undefined;
  let url: string;

  const start = async () => {
    agent = AgentProcess.start(['--port', '0', '--token', TOKEN, '--session-id', sessionId, '--screenshots', 'off'], cleanEnv({ DATA_DIR: dataDir }));
    url = (await agent.listening()).url;
    return embeddedChromium(agent);
  };

  beforeAll(() => {
    dataDir = newDir();
  });
  afterAll(async () => {
    await agent?.stop();
  });

  it('kill -9 mid-flood: a client resuming with its last id gets every stored event after it once, then new ones; seq never repeats', async () => {
    const chromium = await start();
    const driver = await Driver.connect(chromium.browserWsUrl);
    const tab = await driver.firstPage();
    await tab.navigate(server.url('/blank.html'));
    // A client that reads everything live, and one that stops early (it will resume later).
    const watcher = await SseClient.open(`${url}/browsers/${sessionId}/telemetry?replay=all`, TOKEN);
    const early = await SseClient.open(`${url}/browsers/${sessionId}/telemetry?replay=all`, TOKEN);
    await flood(tab, 'before ', 300);
    await early.waitFor((c) => c.ofType('console_log').some((e) => consoleText(e) === 'before 299'), 'the first flood');
    early.close();
    const lastSeen = Math.max(...seqsOf(early));
    // Keep the page logging while the agent is killed.
    void tab.evaluate(`window.__flood = setInterval(() => { for (let i = 0; i < 20; i++) console.log('during ' + Date.now()); }, 5)`).catch(() => undefined);
    await watcher.waitFor((c) => c.ofType('console_log').filter((e) => consoleText(e)?.startsWith('during ')).length >= 500, 'the flood to run');
    const killedAt = Date.now();
    agent!.child.kill('SIGKILL');
    await agent!.waitForExit(5000);
    await driver.close().catch(() => undefined);
    watcher.close();
    const seenLive = seqsOf(watcher);

    await start();
    const resumed = await SseClient.open(`${url}/browsers/${sessionId}/telemetry`, TOKEN, { 'last-event-id': String(lastSeen) });
    expect(resumed.headers['x-resume']).toBe('exact');
    const stored = (await allHistory(url, sessionId)).filter((e) => e.seq > lastSeen);
    await resumed.waitFor((c) => c.envelopes.length >= stored.length, 'the stored events');
    const resumedSeqs = seqsOf(resumed);
    // Every stored event after the id, once, in order; nothing before it.
    expect(resumedSeqs.slice(0, stored.length)).toEqual(stored.map((e) => e.seq));
    expect(new Set(resumedSeqs).size).toBe(resumedSeqs.length);
    // New events of the restarted agent come after every seq the first one ever handed out.
    const { tab: newTab, driver: newDriver } = await firstTab({ browserWsUrl: (await embeddedChromium(agent!)).browserWsUrl });
    await newTab.navigate(server.url('/blank.html'));
    await flood(newTab, 'after ', 5);
    await resumed.waitFor((c) => c.ofType('console_log').some((e) => consoleText(e) === 'after 4'), 'the new events');
    const fresh = resumed.envelopes.filter((e) => consoleText(e.event)?.startsWith('after '));
    expect(Math.min(...fresh.map((e) => e.seq))).toBeGreaterThan(Math.max(...seenLive));
    // The crash lost at most what was admitted in the last 250 ms before the kill: the watcher
    // received each lost event within that window (a stream delivers within milliseconds).
    const storedSeqs = new Set(stored.map((e) => e.seq));
    const lostArrivals = watcher.envelopes.flatMap((e, i) => (e.seq > lastSeen && !storedSeqs.has(e.seq) ? [watcher.arrivals[i]!] : []));
    for (const arrival of lostArrivals) expect(killedAt - arrival).toBeLessThanOrEqual(250);
    resumed.close();
    await newDriver.close();
  }, 120_000);

  it('a graceful restart loses nothing: every event seen live is stored', async () => {
    const chromium = await embeddedChromium(agent!);
    const { driver, tab } = await firstTab(chromium);
    const watcher = await SseClient.open(`${url}/browsers/${sessionId}/telemetry`, TOKEN);
    await flood(tab, 'graceful ', 200);
    await watcher.waitFor((c) => c.ofType('console_log').some((e) => consoleText(e) === 'graceful 199'), 'the flood');
    await driver.close();
    await agent!.stop();
    await watcher.waitForEnd();
    await start();
    const stored = new Set((await allHistory(url, sessionId)).map((e) => e.seq));
    expect(seqsOf(watcher).filter((seq) => !stored.has(seq))).toEqual([]);
  }, 60_000);

  it('an id from another incarnation (wiped data directory) is told apart', async () => {
    const before = await fetch(`${url}/browsers/${sessionId}/telemetry/events?offset=0&limit=1`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const logId = before.headers.get('x-log-id');
    await before.arrayBuffer();
    await agent!.stop();
    rmSync(dataDir, { recursive: true, force: true });
    await start();
    const resumed = await SseClient.open(`${url}/browsers/${sessionId}/telemetry`, TOKEN, { 'last-event-id': '50000' });
    expect(resumed.headers['x-resume']).toBe('reset');
    expect(resumed.headers['x-log-id']).not.toBe(logId);
    resumed.close();
  }, 60_000);
});

describe('one agent with a small ring and store', () => {
  let agent: Agent;
  let driver: Driver;
  let tab: Tab;

  beforeAll(async () => {
    agent = await startAgent({ port: 0, token: TOKEN, logLevel: 'silent', screenshots: false, dataDir: newDir(), ringEvents: 100 });
    ({ driver, tab } = await firstTab(agent));
    await tab.navigate(server.url('/blank.html'));
  });
  afterAll(async () => {
    await driver?.close().catch(() => undefined);
    await agent?.close();
  });

  it('resumes a client that was away longer than the ring from disk, then live, without gap or duplicate', async () => {
    const first = await SseClient.open(`${agent.url}/browsers/${agent.sessionId}/telemetry`, TOKEN);
    await flood(tab, 'away ', 5);
    await first.waitFor((c) => c.ofType('console_log').some((e) => consoleText(e) === 'away 4'), 'the first lines');
    first.close();
    const last = Math.max(...seqsOf(first));
    await flood(tab, 'meanwhile ', 1500);
    const control = await SseClient.open(`${agent.url}/browsers/${agent.sessionId}/telemetry?replay=all`, TOKEN);
    const resumed = await SseClient.open(`${agent.url}/browsers/${agent.sessionId}/telemetry`, TOKEN, { 'last-event-id': String(last) });
    expect(resumed.headers['x-resume']).toBe('exact');
    expect(resumed.headers['x-first-seq']).toBe(String(last + 1));
    await flood(tab, 'live ', 3);
    await resumed.waitFor((c) => c.ofType('console_log').some((e) => consoleText(e) === 'live 2'), 'the live lines', 20_000);
    const seqs = seqsOf(resumed);
    expect(new Set(seqs).size).toBe(seqs.length);
    const texts = resumed.ofType('console_log').map((e) => consoleText(e));
    expect(texts.filter((t) => t?.startsWith('meanwhile '))).toEqual(Array.from({ length: 1500 }, (_, i) => `meanwhile ${i}`));
    // Contiguous: the same seqs as a client that read from the oldest event.
    await control.waitFor((c) => c.envelopes.some((e) => e.seq === seqs.at(-1)), 'the control client');
    expect(seqs).toEqual(seqsOf(control).filter((seq) => seq > last && seq <= seqs.at(-1)!));
    resumed.close();
    control.close();
  }, 60_000);

  it('filters the stream and the history to exactly the matching events, across a browser reconnect', async () => {
    const query = 'category=console&type=network_loading_failed';
    const all = await SseClient.open(`${agent.url}/browsers/${agent.sessionId}/telemetry`, TOKEN);
    const filtered = await SseClient.open(`${agent.url}/browsers/${agent.sessionId}/telemetry?${query}`, TOKEN);
    const fromSeq = (await history(agent.url, agent.sessionId, 'order=desc&limit=1')).envelopes[0]!.seq + 1;
    await tab.navigate(server.url('/mixed.html'));
    await all.waitFor((c) => c.ofType('console_log').some((e) => consoleText(e) === 'fetched'), 'the page');
    await all.waitFor(
      (c) => c.ofType('network_loading_failed').length > 0 && c.ofType('console_log').some((e) => consoleText(e) === 'refused'),
      'the failed fetch',
    );
    // A browser reconnect in between: the embedded browser is killed and relaunched.
    process.kill(agent.browserPid!, 'SIGKILL');
    await all.waitForEvent('monitor_reconnected');
    await driver.close().catch(() => undefined);
    ({ driver, tab } = await firstTab(agent));
    // The relaunched browser's tab is set up by the agent after the reconnect: a blank page's
    // request seen on the stream shows its network events are on before the page under test loads.
    await tab.navigate(server.url('/blank.html'));
    await all.waitFor((c) => c.ofType('network_request').some((e) => e.data?.url?.endsWith('/blank.html') === true), 'the tab set up again');
    await tab.navigate(server.url('/mixed.html'));
    await all.waitFor((c) => c.ofType('console_log').filter((e) => consoleText(e) === 'fetched').length >= 2, 'the page again');
    await all.waitFor(
      (c) => c.ofType('network_loading_failed').length >= 2 && c.ofType('console_log').filter((e) => consoleText(e) === 'refused').length >= 2,
      'the failed fetch again',
    );
    const wanted = (e: Envelope) => e.event.category === 'console' || e.event.type === 'network_loading_failed';
    const expected = all.envelopes.filter(wanted).map((e) => e.seq);
    expect(expected.length).toBeGreaterThanOrEqual(8);
    await filtered.waitFor((c) => c.envelopes.length >= expected.length, 'the filtered stream');
    expect(seqsOf(filtered)).toEqual(expected);
    // The history: the same events, checked against an unfiltered read of the same log.
    const unfiltered = (await allHistory(agent.url, agent.sessionId, '')).filter((e) => e.seq >= fromSeq && e.seq <= all.envelopes.at(-1)!.seq);
    const read = (await allHistory(agent.url, agent.sessionId, query)).filter((e) => e.seq >= fromSeq && e.seq <= all.envelopes.at(-1)!.seq);
    expect(read.map((e) => e.seq)).toEqual(unfiltered.filter(wanted).map((e) => e.seq));
    expect(read).toEqual(all.envelopes.filter(wanted));
    all.close();
    filtered.close();
  }, 60_000);

  it('answers invalid filter values with 400 naming the parameter', async () => {
    for (const [query, field] of [
      ['category=bogus', 'category'],
      ['type=console_nope', 'type'],
      ['nav_seq=-1', 'nav_seq'],
    ] as const) {
      for (const path of ['telemetry', 'telemetry/events']) {
        const res = await fetch(`${agent.url}/browsers/${agent.sessionId}/${path}?${query}`, { headers: { authorization: `Bearer ${TOKEN}` } });
        expect([path, query, res.status]).toEqual([path, query, 400]);
        expect(await res.json()).toMatchObject({ code: 'invalid_input', details: [{ field }] });
      }
    }
    const desc = await history(agent.url, agent.sessionId, 'order=desc&since=5m');
    expect(desc.status).toBe(400);
    const bad = await fetch(`${agent.url}/browsers/${agent.sessionId}/telemetry/events?since=yesterday`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect([bad.status, ((await bad.json()) as { details: Array<{ field: string }> }).details[0]!.field]).toEqual([400, 'since']);
  });

  it("accepts the official client's other categories: they match nothing", async () => {
    const res = await history(agent.url, agent.sessionId, 'offset=0&category=captcha&category=control');
    expect([res.status, res.envelopes]).toEqual([200, []]);
  });

  it('pages a 10k-event history with the official client (for await), every matching event once', async () => {
    const marker = `page-${Date.now()}`;
    await tab.evaluate(`for (let i = 0; i < 10000; i++) { if (i % 2) console.log('${marker} ' + i); else console.error('${marker} ' + i); }`);
    const client = new Kernel({ apiKey: TOKEN, baseURL: agent.url, maxRetries: 0 });
    const check = await SseClient.open(`${agent.url}/browsers/${agent.sessionId}/telemetry?replay=all&type=console_error`, TOKEN);
    await check.waitFor((c) => c.envelopes.some((e) => consoleText(e.event) === `${marker} 9998`), 'the flood on the stream', 30_000);
    check.close();
    const seen: number[] = [];
    for await (const envelope of client.browsers.telemetry.events(agent.sessionId, { category: ['console'], limit: 1000, offset: 1 })) {
      const text = consoleText(envelope.event as unknown as Envelope['event']);
      if (text?.startsWith(`${marker} `) && envelope.event.type === 'console_error') seen.push(Number(text.split(' ')[1]));
    }
    expect(seen).toEqual(Array.from({ length: 5000 }, (_, i) => i * 2));
  }, 60_000);
});

describe('an id that left retention', () => {
  it('is told with X-Resume: gap and the first seq served', async () => {
    const agent = await startAgent({
      port: 0,
      token: TOKEN,
      logLevel: 'silent',
      screenshots: false,
      dataDir: newDir(),
      ringEvents: 50,
      retainBytes: 200 * 1024,
    });
    try {
      const { driver, tab } = await firstTab(agent);
      await tab.navigate(server.url('/blank.html'));
      await tab.evaluate(`for (let i = 0; i < 4000; i++) console.log('retention ' + i + ' ${'x'.repeat(200)}')`);
      const check = await SseClient.open(`${agent.url}/browsers/${agent.sessionId}/telemetry?replay=all`, TOKEN);
      await check.waitFor((c) => c.ofType('console_log').some((e) => consoleText(e)?.startsWith('retention 3999')), 'the flood', 30_000);
      check.close();
      const resumed = await SseClient.open(`${agent.url}/browsers/${agent.sessionId}/telemetry`, TOKEN, { 'last-event-id': '1' });
      expect(resumed.headers['x-resume']).toBe('gap');
      const firstSeq = Number(resumed.headers['x-first-seq']);
      expect(firstSeq).toBeGreaterThan(2);
      await resumed.waitFor((c) => c.envelopes.length > 0, 'the first event');
      expect(resumed.envelopes[0]!.seq).toBe(firstSeq);
      resumed.close();
      await driver.close();
    } finally {
      await agent.close();
    }
  }, 60_000);
});
