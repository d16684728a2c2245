// The CDP endpoint for automation clients (docs/operations.md "CDP endpoint") and the cause side's
// events (docs/events.md "Control events"): Playwright, Puppeteer and a raw ws client drive real
// Chromium through the agent; the stream shows the connection, one cdp_command per gesture, and the
// effects of the Enter linked to it by caused_by.

import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Envelope, TelemetryEvent } from '../../injected/schema.ts';
import { postBatch } from './support/computer-api.ts';
import { startRig, TOKEN, until, type TestRig } from './support/harness.ts';
import { compileAgainstSdk, sdkEventTypes } from './support/sdk-types.ts';

const TYPED = 'secret-typed-words';

const FORM = `<!doctype html><title>form</title>
<form action="/result.html" method="get"><input id="q" autofocus><button type="button" id="b" onclick="document.title='clicked'">b</button></form>`;
const RESULT = `<!doctype html><title>result</title><p>result</p><script src="/app.js"></script>`;
const APP = `fetch('/api?x=1').then(() => console.error('boom after enter'));`;

type Ev = TelemetryEvent & { data?: Record<string, unknown> };

describe('CDP endpoint', () => {
  let rig: TestRig;
  let formUrl: string;
  const headers = { Authorization: `Bearer ${TOKEN}` };

  beforeAll(async () => {
    rig = await startRig();
    formUrl = rig.server.route('/form.html', FORM);
    rig.server.route('/result.html', RESULT);
    rig.server.route('/app.js', APP, 'text/javascript');
    rig.server.route('/api', '{}', 'application/json');
  });
  afterAll(() => rig?.close());

  const events = (from: number) => rig.stream.events.slice(from) as Ev[];

  /** goto, click, fill, Enter, screenshot with any client's page; returns nothing. */
  async function checkGestures(from: number, connectionId: string): Promise<void> {
    const mine = () => events(from).filter((e) => e.data?.connection_id === connectionId);
    await rig.stream.waitFor(() => mine().some((e) => e.type === 'cdp_disconnect'), 'cdp_disconnect');
    const commands = mine().filter((e) => e.type === 'cdp_command');
    const gestures = commands.map((e) => `${e.data!.method}${e.data!.event_type === undefined ? '' : `:${e.data!.event_type}`}`);
    expect(gestures.filter((g) => g === 'Page.navigate')).toHaveLength(1);
    expect(gestures.filter((g) => g === 'Input.dispatchMouseEvent:mousePressed')).toHaveLength(1);
    expect(gestures.filter((g) => g === 'Page.captureScreenshot')).toHaveLength(1);
    const enter = commands.find((e) => e.data!.key === 'Enter')!;
    expect(enter).toBeDefined();
    expect(commands.every((e) => e.data!.outcome === 'ok' && typeof e.data!.action_id === 'string')).toBe(true);
    const disconnect = mine().find((e) => e.type === 'cdp_disconnect')!;
    expect(disconnect.data!.message_count).toBeGreaterThan(gestures.length * 2);
    expect(disconnect.data!.reason).toBe('client_close');
    expect(mine()[0]!.type).toBe('cdp_connect');
    // The Enter's effects: the navigation, the requests (the script's fetch by initiator) and the console error.
    const actionId = enter.data!.action_id;
    await rig.stream.waitFor(() => events(from).some((e) => e.type === 'console_error' && e.data?.caused_by === actionId), 'the console error of the Enter');
    const caused = events(from).filter((e) => e.data?.caused_by === actionId);
    expect(caused.some((e) => e.type === 'page_navigation' && String(e.data!.url).includes('/result.html'))).toBe(true);
    expect(caused.some((e) => e.type === 'network_request' && String(e.data!.url).includes('/app.js'))).toBe(true);
    expect(caused.some((e) => e.type === 'network_request' && String(e.data!.url).includes('/api?x=1'))).toBe(true);
    // No typed character anywhere in the log.
    expect(JSON.stringify(rig.stream.events)).not.toContain(TYPED.slice(0, 6));
  }

  it('Playwright connectOverCDP through the agent', async () => {
    const from = rig.stream.events.length;
    const browser = await chromium.connectOverCDP(rig.agent.url, { headers });
    const page = await browser.contexts()[0]!.newPage();
    await page.goto(formUrl);
    await page.click('#b');
    await page.fill('#q', TYPED);
    await Promise.all([page.waitForURL(/result\.html/), page.press('#q', 'Enter')]);
    await page.waitForFunction(() => document.readyState === 'complete');
    await page.screenshot();
    await page.close();
    await browser.close();
    const connect = events(from).find((e) => e.type === 'cdp_connect')!;
    await checkGestures(from, connect.data!.connection_id);
    // The four types, and the events stamped with caused_by, against the official client 0.84's types.
    const checked = events(from).filter((e) => e.category === 'control' || e.category === 'connection' || e.data?.caused_by !== undefined);
    expect(checked.some((e) => e.type === 'cdp_disconnect') && checked.some((e) => e.type === 'console_error')).toBe(true);
    // Computed events have source kind `agent`, which the official types do not name; the agent's own
    // types (cdp_command, computer_action aside, checked against the control envelope) have no official type.
    const sdkTypes = sdkEventTypes();
    const official = checked.filter((e) => e.source.kind !== 'agent' && (sdkTypes.has(e.type) || e.type === 'cdp_command' || e.type === 'computer_action'));
    // One event made wrong on purpose: the check must name it, and only it.
    const messages = compileAgainstSdk([...official, { ...connect, category: 'control' }]);
    expect(messages).toHaveLength(1);
  }, 90_000);

  it('Puppeteer connects with browserWSEndpoint and headers', async () => {
    const from = rig.stream.events.length;
    const session = (await (await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}`, { headers })).json()) as { cdp_ws_url: string };
    expect(session.cdp_ws_url).toBe(`ws://${new URL(rig.agent.url).host}/browsers/${rig.agent.sessionId}/cdp`);
    const browser = await puppeteer.connect({ browserWSEndpoint: session.cdp_ws_url, headers, defaultViewport: null });
    const page = await browser.newPage();
    await page.goto(formUrl);
    await page.click('#b');
    await page.type('#q', TYPED);
    await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
    await page.screenshot();
    await page.close();
    await browser.disconnect();
    const connect = events(from).find((e) => e.type === 'cdp_connect')!;
    await checkGestures(from, connect.data!.connection_id);
  });

  it('a raw ws client: discovery, a command, the answer relayed as it is', async () => {
    const from = rig.stream.events.length;
    const version = (await (await fetch(`${rig.agent.url}/json/version`, { headers })).json()) as { webSocketDebuggerUrl: string; Browser: string };
    expect(version.Browser).toMatch(/Chrome/);
    expect(version.webSocketDebuggerUrl.startsWith(`ws://${new URL(rig.agent.url).host}/devtools/browser/`)).toBe(true);
    const list = (await (await fetch(`${rig.agent.url}/json/list`, { headers })).json()) as Array<{ type: string; webSocketDebuggerUrl: string }>;
    expect(list.some((t) => t.type === 'page')).toBe(true);
    const ws = new WebSocket(version.webSocketDebuggerUrl, { headers });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const answers: Array<{ id: number; result?: { targetId?: string }; error?: unknown }> = [];
    ws.on('message', (data: Buffer) => answers.push(JSON.parse(data.toString('utf8')) as (typeof answers)[number]));
    ws.send(JSON.stringify({ id: 1, method: 'Target.createTarget', params: { url: formUrl } }));
    await rig.stream.waitFor(() => answers.some((a) => a.id === 1), 'the answer');
    ws.send(JSON.stringify({ id: 2, method: 'Target.closeTarget', params: { targetId: 'no-such-target' } }));
    await rig.stream.waitFor(() => answers.some((a) => a.id === 2), 'the error answer');
    ws.send(JSON.stringify({ id: 3, method: 'Target.closeTarget', params: { targetId: answers[0]!.result!.targetId } }));
    await rig.stream.waitFor(() => answers.some((a) => a.id === 3), 'the close');
    ws.close();
    await rig.stream.waitFor(() => events(from).some((e) => e.type === 'cdp_disconnect'), 'cdp_disconnect');
    const commands = events(from).filter((e) => e.type === 'cdp_command');
    expect(commands.map((e) => [e.data!.method, e.data!.outcome])).toEqual([
      ['Target.createTarget', 'ok'],
      ['Target.closeTarget', 'error'],
      ['Target.closeTarget', 'ok'],
    ]);
    // No URL: control.include_urls is off.
    expect(commands[0]!.data!.url).toBeUndefined();
    expect(commands[1]!.data!.error).toMatch(/target/i);
    expect(events(from).find((e) => e.type === 'cdp_disconnect')!.data).toMatchObject({ message_count: 6, reason: 'client_close' });
  });

  it('refuses a token without the cdp scope (401, 403) before reaching the browser', async () => {
    const { startAgent } = await import('../../src/agent.ts');
    const agent = await startAgent({
      port: 0,
      logLevel: 'silent',
      cdpUrl: rig.agent.browserWsUrl,
      tokens: [
        { token: 'reader', scopes: ['telemetry:read'] },
        { token: 'driver', scopes: ['cdp'] },
        { token: 'ops', scopes: ['metrics:read'] },
      ],
    } as never);
    try {
      const host = new URL(agent.url).host;
      const tryWs = (token: string | undefined) =>
        new Promise<number>((resolve) => {
          const ws = new WebSocket(`ws://${host}/devtools/browser/x`, { headers: token === undefined ? {} : { Authorization: `Bearer ${token}` } });
          ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
          ws.once('open', () => {
            ws.close();
            resolve(101);
          });
        });
      expect(await tryWs(undefined)).toBe(401);
      expect(await tryWs('nope')).toBe(401);
      expect(await tryWs('reader')).toBe(403);
      expect((await fetch(`${agent.url}/json/version`, { headers: { Authorization: 'Bearer reader' } })).status).toBe(403);
      // Nothing was dialled: no connection to the browser was made for the refused clients.
      const connections = async () =>
        /^bta_cdp_proxy_connections_total (\d+)$/m.exec(await (await fetch(`${agent.url}/metrics`, { headers: { Authorization: 'Bearer ops' } })).text())?.[1];
      expect(await connections()).toBe('0');
      expect(await tryWs('driver')).toBe(101);
      expect(await connections()).toBe('1');
    } finally {
      await agent.close();
    }
  });

  it('api_call and computer_action for a computer batch; caused_by filters the history', async () => {
    const page = await rig.driver.newTab();
    await page.ready(rig.stream);
    await page.navigate(formUrl);
    const from = rig.stream.events.length;
    const res = await postBatch(rig, [
      { type: 'click_mouse', click_mouse: { x: 10, y: 10 } },
      { type: 'type_text', type_text: { text: TYPED } },
      { type: 'press_key', press_key: { keys: ['Return'] } },
    ]);
    expect(res.status).toBe(204);
    const requestId = res.headers.get('x-request-id')!;
    expect(requestId).toMatch(/^req-/);
    await rig.stream.waitFor(() => events(from).some((e) => e.type === 'api_call'), 'api_call');
    const call = events(from).find((e) => e.type === 'api_call')!;
    expect(call.data).toMatchObject({ operation_id: 'computerBatch', request_id: requestId, status: 204, outcome: 'ok', target_id: page.targetId });
    const actions = events(from).filter((e) => e.type === 'computer_action');
    expect(actions.map((e) => [e.data!.action, e.data!.index, e.data!.request_id])).toEqual([
      ['click_mouse', 0, requestId],
      ['type_text', 1, requestId],
      ['press_key', 2, requestId],
    ]);
    expect(actions[1]!.data!.text_length).toBe(TYPED.length);
    expect(actions[2]!.data!.key).toBe('Return');
    const enterId = actions[2]!.data!.action_id;
    await rig.stream.waitFor(() => events(from).some((e) => e.type === 'page_navigation' && e.data?.caused_by === enterId), 'the navigation of Return');
    const filtered = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/telemetry/events?limit=1000&caused_by=${enterId}`, { headers });
    const envelopes = (await filtered.json()) as Envelope[];
    expect(envelopes.length).toBeGreaterThan(1);
    expect(
      envelopes.every(
        (e) =>
          (e.event.data as { caused_by?: string; action_id?: string }).caused_by === enterId || (e.event.data as { action_id?: string }).action_id === enterId,
      ),
    ).toBe(true);
    expect(envelopes.some((e) => e.event.type === 'computer_action')).toBe(true);
    expect(compileAgainstSdk([call, ...actions])).toEqual([]);
    const bad = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/telemetry/events?caused_by=a%25b`, { headers });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(rig.stream.events)).not.toContain(TYPED.slice(0, 6));
  });

  it('cuts a client that does not read, and counts it', async () => {
    const { startAgent } = await import('../../src/agent.ts');
    const agent = await startAgent({ port: 0, logLevel: 'silent', token: TOKEN, cdpUrl: rig.agent.browserWsUrl, timing: { cdpClientBufferBytes: 256 * 1024 } });
    try {
      const ws = new WebSocket(`ws://${new URL(agent.url).host}/devtools/browser/x`, { headers });
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
      const answers = new Map<number, { result?: { targetInfos?: Array<{ targetId: string; type: string }>; sessionId?: string } }>();
      ws.on('message', (data: Buffer) => {
        if (data.length < 10_000) {
          const answer = JSON.parse(data.toString('utf8')) as { id: number; result?: never };
          answers.set(answer.id, answer);
        }
      });
      const ask = async (id: number, method: string, params: object) => {
        ws.send(JSON.stringify({ id, method, params }));
        await until(() => answers.has(id), method);
        return answers.get(id)!.result!;
      };
      const { targetInfos } = await ask(1, 'Target.getTargets', {});
      const page = targetInfos!.find((t) => t.type === 'page')!;
      const { sessionId } = await ask(2, 'Target.attachToTarget', { targetId: page.targetId, flatten: true });
      const closed = new Promise<{ code: number; reason: string }>((resolve) =>
        ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
      );
      // Big answers, not read: the client's socket stops taking data and the bound is crossed.
      ws.pause();
      for (let i = 0; i < 48; i++) {
        ws.send(JSON.stringify({ id: 10 + i, sessionId, method: 'Runtime.evaluate', params: { expression: "'x'.repeat(1 << 20)", returnByValue: true } }));
      }
      const cuts = async () => /^bta_cdp_proxy_slow_client_cuts_total 1$/m.test(await (await fetch(`${agent.url}/metrics`, { headers })).text());
      for (let i = 0; i < 100 && !(await cuts()); i++) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await cuts()).toBe(true);
      ws.resume();
      const { code, reason } = await closed;
      expect(code).toBe(1008);
      expect(reason).toMatch(/^slow_client/);
    } finally {
      await agent.close();
    }
  });

  // Last: it restarts the rig's browser.
  it('closes proxied clients with upstream_changed when the browser restarts', async () => {
    const from = rig.stream.events.length;
    const browser = await chromium.connectOverCDP(rig.agent.url, { headers });
    const ws = new WebSocket(`ws://${new URL(rig.agent.url).host}/devtools/browser/x`, { headers });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    const disconnected = new Promise<void>((resolve) => browser.once('disconnected', () => resolve()));
    process.kill(rig.agent.browserPid!, 'SIGKILL');
    const { code, reason } = await closed;
    expect(code).toBe(1012);
    expect(reason).toMatch(/^upstream_changed/);
    await disconnected;
    await rig.stream.waitFor(() => events(from).filter((e) => e.type === 'cdp_disconnect').length === 2, 'both cdp_disconnect');
    expect(
      events(from)
        .filter((e) => e.type === 'cdp_disconnect')
        .map((e) => e.data!.reason),
    ).toEqual(['upstream_changed', 'upstream_changed']);
    // The new browser takes clients again.
    await until(() => rig.agent.cdpConnected, 'the reconnect', 20_000);
    const again = await chromium.connectOverCDP(rig.agent.url, { headers });
    expect(again.contexts().length).toBeGreaterThan(0);
    await again.close();
  });
});
