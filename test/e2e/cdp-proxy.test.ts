// The CDP endpoint for automation clients (docs/operations.md "CDP endpoint") and the cause side's
// events (docs/events.md "Control events"): Playwright, Puppeteer and a raw ws client drive real
// Chromium through the agent; the stream shows the connection, one cdp_command per gesture, and the
// effects of the Enter linked to it by caused_by.

import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { startRig, TOKEN, type TestRig } from './support/harness.ts';

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
    const gestures = commands.map((e) => `${String(e.data!.method)}${e.data!.event_type === undefined ? '' : `:${String(e.data!.event_type)}`}`);
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
    const actionId = enter.data!.action_id as string;
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
    await checkGestures(from, connect.data!.connection_id as string);
  });
});
