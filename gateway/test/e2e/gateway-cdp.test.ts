// The CDP endpoint through the gateway (docs/gateway.md "CDP endpoint"), with a real agent program
// on real headless Chromium: Playwright connects to `/browsers/{id}/cdp` with an API key, drives a
// page, and the agent's stream shows the connection and one cdp_command per gesture; a key of
// another project, no key, or an unknown session is refused before any byte reaches the agent; a
// registration whose agent token lacks the `cdp` scope answers 502. On SQLite and PostgreSQL.

import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { digestApiKey } from '../../src/api-key.ts';
import { BACKENDS, GatewayRig, uniqueName } from './support/gateway-harness.ts';
import { AgentProgram } from './support/gateway-processes.ts';
import { gatewaySuite } from './support/gateway-suite.ts';
import { SseClient } from '../../../test/e2e/support/harness.ts';

const AGENT_TOKEN = 'agent-token-of-the-cdp-tests';
/** An agent token with every scope but `cdp`. */
const NO_CDP_TOKEN = 'agent-token-without-cdp-scope';
const TYPED = 'gateway-typed-secret';
const PAGE = `<!doctype html><title>gateway cdp</title>
<form action="/done" method="get"><input id="q" autofocus><button type="button" id="b" onclick="document.title='clicked'">b</button></form>`;
const suite = gatewaySuite('gateway-cdp-test', PAGE);

type Ev = { type: string; data?: Record<string, unknown> };

/** The status of a refused WebSocket handshake (the body is the gateway's error). */
function refusedStatus(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('unexpected-response', (_request, response) => {
      resolve(response.statusCode ?? 0);
      ws.terminate();
    });
    ws.once('open', () => {
      ws.close();
      reject(new Error('the handshake was accepted'));
    });
    ws.once('error', (err) => reject(err));
  });
}

describe.each(BACKENDS)('the CDP endpoint through the gateway on %s', (backend) => {
  let rig: GatewayRig;
  let agent: AgentProgram;
  let stream: SseClient;
  let id: string;
  let projectKey: string;
  let otherKey: string;
  let host: string;
  let registration: Record<string, unknown>;

  beforeAll(async () => {
    const tokensFile = join(tmpdir(), `gateway-cdp-tokens-${process.pid}-${backend.replace(/\W/g, '-')}.json`);
    const scopes = ['telemetry:read', 'telemetry:write', 'computer', 'fs', 'browser:delete', 'metrics:read'];
    writeFileSync(tokensFile, JSON.stringify([{ token: NO_CDP_TOKEN, scopes }]));
    [rig, agent] = await Promise.all([
      suite.storages.fresh(backend).then((storage) => GatewayRig.start(storage)),
      AgentProgram.start(suite.bundles, AGENT_TOKEN, ['--tokens-file', tokensFile]),
    ]);
    id = agent.sessionId;
    suite.fixtures.route('/done', '<!doctype html><title>done</title>');
    host = new URL(rig.url).host;
    const [mine, other] = await Promise.all([rig.gateway.store.createProject(uniqueName('cdp')), rig.gateway.store.createProject(uniqueName('cdp-other'))]);
    const registered = await rig.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: AGENT_TOKEN, project_id: mine.id });
    expect(registered.status).toBe(201);
    registration = (await registered.json()) as Record<string, unknown>;
    [projectKey, otherKey] = await Promise.all([rig.createKey({ projectId: mine.id }), rig.createKey({ projectId: other.id })]);
    stream = await SseClient.open(`${agent.url}/browsers/${id}/telemetry`, AGENT_TOKEN);
  }, 120_000);

  afterAll(async () => {
    stream?.close();
    await agent?.kill();
    await rig?.close();
  });

  const events = (from: number) => stream.events.slice(from) as Ev[];

  it("gives the session object the gateway's cdp_ws_url", async () => {
    const response = await rig.fetch(`/browsers/${id}`, { key: projectKey });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { session_id: string; cdp_ws_url?: string };
    expect(body.session_id).toBe(id);
    expect(body.cdp_ws_url).toBe(`ws://${host}/browsers/${id}/cdp`);
    // The registration's answer and the listing carry it too (an ended session's does not).
    expect(registration).toMatchObject({ session_id: id, cdp_ws_url: `ws://${host}/browsers/${id}/cdp` });
    const list = (await (await rig.fetch('/browsers', { key: projectKey })).json()) as Array<{ session_id: string; cdp_ws_url?: string }>;
    expect(list.find((s) => s.session_id === id)?.cdp_ws_url).toBe(`ws://${host}/browsers/${id}/cdp`);
  });

  it('answers the discovery paths with URLs at the gateway', async () => {
    const version = (await (await rig.fetch(`/browsers/${id}/cdp/json/version`, { key: projectKey })).json()) as Record<string, string>;
    expect(version.Browser).toMatch(/Chrom/);
    expect(version.webSocketDebuggerUrl).toBe(`ws://${host}/browsers/${id}/cdp`);
    for (const path of ['json/list', 'json', 'json/list/']) {
      const response = await rig.fetch(`/browsers/${id}/cdp/${path}`, { key: projectKey });
      expect(response.status, path).toBe(200);
      const list = (await response.json()) as Array<{ id: string; type: string; webSocketDebuggerUrl: string }>;
      const page = list.find((t) => t.type === 'page')!;
      expect(page, path).toBeDefined();
      expect(page.webSocketDebuggerUrl).toBe(`ws://${host}/browsers/${id}/cdp/devtools/page/${page.id}`);
    }
  });

  it('relays Playwright: one cdp_command per gesture, connect and disconnect on the stream', async () => {
    const from = stream.events.length;
    const browser = await chromium.connectOverCDP(`${rig.url}/browsers/${id}/cdp`, { headers: { Authorization: `Bearer ${projectKey}` } });
    const page = await browser.contexts()[0]!.newPage();
    await page.goto(suite.fixtures.url('/page'));
    await page.click('#b');
    expect(await page.title()).toBe('clicked');
    await page.fill('#q', TYPED);
    await Promise.all([page.waitForURL(/\/done/), page.press('#q', 'Enter')]);
    const shot = await page.screenshot();
    expect(shot.subarray(1, 4).toString()).toBe('PNG');
    await page.close();
    await browser.close();

    await stream.waitFor(() => events(from).some((e) => e.type === 'cdp_disconnect'), 'cdp_disconnect');
    const connect = events(from).find((e) => e.type === 'cdp_connect')!;
    expect(connect).toBeDefined();
    const mine = events(from).filter((e) => e.data?.connection_id === connect.data!.connection_id);
    const commands = mine.filter((e) => e.type === 'cdp_command');
    const gestures = commands.map((e) => `${e.data!.method as string}${e.data!.event_type === undefined ? '' : `:${e.data!.event_type as string}`}`);
    expect(gestures.filter((g) => g === 'Page.navigate')).toHaveLength(1);
    expect(gestures.filter((g) => g === 'Input.dispatchMouseEvent:mousePressed')).toHaveLength(1);
    expect(gestures.filter((g) => g === 'Page.captureScreenshot')).toHaveLength(1);
    const enter = commands.find((e) => e.data!.key === 'Enter')!;
    expect(enter).toBeDefined();
    // The Enter's navigation carries its action_id (docs/events.md "Control events").
    await stream.waitFor(
      () => events(from).some((e) => e.type === 'page_navigation' && String(e.data!.url).includes('/done') && e.data!.caused_by === enter.data!.action_id),
      'the navigation of the Enter',
    );
    const disconnect = mine.find((e) => e.type === 'cdp_disconnect')!;
    expect(disconnect.data!.reason).toBe('client_close');
    expect(disconnect.data!.message_count).toBeGreaterThan(gestures.length * 2);
    expect(JSON.stringify(stream.events)).not.toContain(TYPED);
    // The relay is gone once both sides closed.
    await expect.poll(() => rig.gateway.openExchanges).toBe(0);
  });

  it('refuses a key of another project, no key, and an unknown session before a byte reaches the agent', async () => {
    const from = stream.events.length;
    const ws = `ws://${host}/browsers/${id}/cdp`;
    expect(await refusedStatus(ws, { Authorization: `Bearer ${otherKey}` })).toBe(403);
    expect(await refusedStatus(ws, {})).toBe(401);
    expect(await refusedStatus(`ws://${host}/browsers/no-such-session/cdp`, { Authorization: `Bearer ${projectKey}` })).toBe(404);
    expect(await refusedStatus(`ws://${host}/browsers/${id}/elsewhere`, { Authorization: `Bearer ${projectKey}` })).toBe(404);
    expect((await rig.fetch(`/browsers/${id}/cdp/json/version`, { key: otherKey })).status).toBe(403);
    expect((await rig.fetch(`/browsers/${id}/cdp/json/list`, { key: null })).status).toBe(401);
    await expect(
      chromium.connectOverCDP(`${rig.url}/browsers/${id}/cdp`, { headers: { Authorization: `Bearer ${otherKey}` }, timeout: 10_000 }),
    ).rejects.toThrow(/403/);
    // A connection the agent saw would be on its stream by now (it is written at the handshake).
    const probe = await fetch(`${agent.url}/browsers/${id}/cdp/json/version`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
    expect(probe.status).toBe(200);
    expect(events(from).filter((e) => e.type === 'cdp_connect')).toHaveLength(0);
  });

  it('ends a relayed connection when its key is deleted', async () => {
    const key = await rig.createKey({ projectId: (await rig.gateway.store.findBrowser(id))!.projectId });
    const ws = new WebSocket(`ws://${host}/browsers/${id}/cdp`, { headers: { Authorization: `Bearer ${key}` } });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const reply = new Promise<string>((resolve) => ws.once('message', (data) => resolve((data as Buffer).toString())));
    ws.send(JSON.stringify({ id: 1, method: 'Browser.getVersion' }));
    expect(JSON.parse(await reply)).toMatchObject({ id: 1, result: { product: expect.stringMatching(/Chrom/) } });
    const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
    const keyId = (await rig.gateway.store.findKeyCredential(digestApiKey(key)))!.id;
    expect((await rig.fetch(`/org/api_keys/${keyId}`, { method: 'DELETE' })).status).toBeLessThan(300);
    await closed;
  });

  it('answers 502 when the registered agent token lacks the cdp scope, and the agent sees no connection', async () => {
    // A second gateway, on a fresh database, registers the same session with the narrower token.
    const narrow = await GatewayRig.start(await suite.storages.fresh(backend));
    try {
      const from = stream.events.length;
      expect((await narrow.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: NO_CDP_TOKEN })).status).toBe(201);
      const key = await narrow.createKey({});
      const narrowHost = new URL(narrow.url).host;
      expect(await refusedStatus(`ws://${narrowHost}/browsers/${id}/cdp`, { Authorization: `Bearer ${key}` })).toBe(502);
      const discovery = await narrow.fetch(`/browsers/${id}/cdp/json/version`, { key });
      expect(discovery.status).toBe(502);
      expect(((await discovery.json()) as { code: string }).code).toBe('browser_unavailable');
      // The same token still reads the telemetry through that gateway: only the scope is missing.
      expect((await narrow.fetch(`/browsers/${id}/telemetry/events?limit=1`, { key })).status).toBe(200);
      expect(events(from).filter((e) => e.type === 'cdp_connect')).toHaveLength(0);
    } finally {
      await narrow.close();
    }
  });
});
