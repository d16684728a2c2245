// The live session viewer (docs/viewer.md), end to end: a real agent watching a real Chromium,
// and the viewer page driven in a second headless Chromium over CDP. Screenshots of the viewer
// go to .tmp/viewer/ as test artifacts.

import CDP from 'chrome-remote-interface';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../src/agent.ts';
import { ChromiumProcess } from '../../src/browser/chromium-launcher.ts';
import { consoleText, startRig, TOKEN, type Tab, type TestRig } from './support/harness.ts';
import { clickOn } from './support/page-input.ts';

const ARTIFACTS = '.tmp/viewer';
const RING_EVENTS = 3000;

const PAGE = `<!doctype html><html><head><title>watched</title><style>
  body { font: 16px sans-serif; margin: 20px; }
  button { font-size: 20px; padding: 10px 20px; }
</style></head><body>
<h1>Watched page</h1>
<button id="go" type="button">Go</button>
<p id="out"></p>
<script>
  document.getElementById('go').addEventListener('click', () => { document.getElementById('out').textContent = 'clicked'; });
  console.info('watched page ready');
  console.warn('a warning from the watched page');
</script>
</body></html>`;

/**
 * A TCP proxy in front of the agent for the viewer's browser: `drop()` cuts every connection (a
 * network drop), `refuse(true)` turns new ones away until `refuse(false)`.
 */
class DropProxy {
  private readonly sockets = new Set<net.Socket>();
  private refusing = false;
  private readonly server = net.createServer((client) => {
    if (this.refusing) {
      client.destroy();
      return;
    }
    const upstream = net.connect(this.targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  port = 0;

  constructor(private readonly targetPort: number) {}

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  drop(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  refuse(on: boolean): void {
    this.refusing = on;
  }

  async close(): Promise<void> {
    this.drop();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** The viewer's browser: a second headless Chromium, its one tab driven over CDP. */
class ViewerBrowser {
  /** Exceptions, console errors and error log entries of the viewer page. */
  readonly errors: string[] = [];

  /** Forget the failed requests of the stream that a test's own network drop caused. */
  forgetDroppedStreams(): void {
    const dropped = /^log: Failed to load resource: net::ERR_[A-Z_]+ \S+\/telemetry$/;
    const kept = this.errors.filter((e) => !dropped.test(e));
    this.errors.splice(0, this.errors.length, ...kept);
  }

  private constructor(
    private readonly chromium: ChromiumProcess,
    readonly client: CDP.Client,
  ) {}

  static async launch(): Promise<ViewerBrowser> {
    const chromium = await ChromiumProcess.launch();
    const port = Number(new URL(chromium.browserWsUrl).port);
    const targets = await CDP.List({ port });
    const page = targets.find((t) => t.type === 'page');
    if (!page) throw new Error('the viewer browser has no page');
    const client = await CDP({ port, target: page.id, local: true });
    const browser = new ViewerBrowser(chromium, client);
    client.on('Runtime.exceptionThrown', (params: any) =>
      browser.errors.push(`exception: ${params.exceptionDetails?.exception?.description ?? params.exceptionDetails?.text}`),
    );
    client.on('Runtime.consoleAPICalled', (params: any) => {
      if (params.type === 'error' || params.type === 'assert')
        browser.errors.push(`console.${params.type}: ${JSON.stringify(params.args?.map((a: any) => a.value ?? a.description))}`);
    });
    client.on('Log.entryAdded', (params: any) => {
      if (params.entry?.level === 'error') browser.errors.push(`log: ${params.entry.text} ${params.entry.url ?? ''}`);
    });
    await client.send('Runtime.enable');
    await client.send('Log.enable');
    await client.send('Page.enable');
    await client.send('Emulation.setDeviceMetricsOverride', { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false });
    return browser;
  }

  async evaluate<T = unknown>(expression: string): Promise<T> {
    const { result, exceptionDetails } = (await this.client.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true })) as any;
    if (exceptionDetails) throw new Error(`viewer: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
    return result.value as T;
  }

  /** Polls `expression` in the viewer until it is truthy; resolves with its value. */
  async waitFor<T = unknown>(expression: string, what: string, timeoutMs = 10_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await this.evaluate<T>(expression);
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`viewer: timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async navigate(url: string): Promise<void> {
    await this.client.send('Page.navigate', { url });
  }

  async screenshot(name: string, scale = 1): Promise<void> {
    const clip = { x: 0, y: 0, width: 1280, height: 800, scale };
    const { data } = await this.client.send('Page.captureScreenshot', { format: 'png', ...(scale === 1 ? {} : { clip }) });
    mkdirSync(ARTIFACTS, { recursive: true });
    writeFileSync(`${ARTIFACTS}/${name}.png`, Buffer.from(data, 'base64'));
  }

  async close(): Promise<void> {
    await this.client.close().catch(() => undefined);
    await this.chromium.close();
  }
}

/** The text of a file once a download has written it whole. */
async function waitForFile(path: string, timeoutMs = 10_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (existsSync(path)) {
      const text = readFileSync(path, 'utf8');
      if (text.endsWith('\n') || text.endsWith('}')) return text;
    }
    if (Date.now() > deadline) throw new Error(`no download at ${path}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Mints a viewer URL (through `base`, so the URL names that host). */
async function mintViewerUrl(base: string, sessionId: string, token = TOKEN): Promise<Response> {
  return fetch(`${base}/browsers/${sessionId}/viewer/sessions`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
}

/** An expression: the tooltips the timeline shows as the pointer sweeps along a lane. */
const laneTips = (lane: string) => `(async () => {
  await new Promise((r) => requestAnimationFrame(() => r()));
  const canvas = document.querySelector('.timeline-canvas');
  const tooltip = document.querySelector('.timeline-tooltip');
  const rect = canvas.getBoundingClientRect();
  const y = rect.top + 20 + canvas.dataset.lanes.split(',').indexOf(${JSON.stringify(lane)}) * 22 + 11;
  const seen = new Set();
  for (let x = rect.left + 97; x < rect.right; x += 2) {
    canvas.dispatchEvent(new PointerEvent('pointermove', { clientX: x, clientY: y, bubbles: true }));
    if (!tooltip.hidden) seen.add(tooltip.textContent);
  }
  canvas.dispatchEvent(new PointerEvent('pointerleave', { bubbles: true }));
  return [...seen];
})()`;

/** JS run in the viewer: the texts of the rendered rows of a panel matching `cellSelector`. */
const rowTexts = (panel: string, cellSelector: string) =>
  `[...document.querySelectorAll('#panel-${panel} .vrow:not([hidden]) ${cellSelector}')].map((e) => e.textContent)`;

describe('the live viewer', () => {
  let rig: TestRig;
  let tab: Tab;
  let proxy: DropProxy;
  let viewer: ViewerBrowser;

  beforeAll(async () => {
    // RAM only: what leaves the ring is lost, as the lost-events test needs.
    rig = await startRig({ ringEvents: RING_EVENTS, dataDir: 'none' });
    const pageUrl = rig.server.route('/watched.html', PAGE);
    tab = await rig.driver.firstPage();
    await tab.send('Emulation.setDeviceMetricsOverride', { width: 800, height: 600, deviceScaleFactor: 1, mobile: false });
    await tab.ready(rig.stream);
    await tab.navigate(pageUrl);
    await rig.stream.waitForEvent('page_load', (e) => e.data!.url === pageUrl);

    proxy = await new DropProxy(Number(new URL(rig.agent.url).port)).start();
    const minted = await mintViewerUrl(proxy.url, rig.agent.sessionId);
    expect(minted.status).toBe(201);
    const { url } = (await minted.json()) as { url: string };
    viewer = await ViewerBrowser.launch();
    await viewer.navigate(url);
    await viewer.waitFor(`document.querySelector('.conn-status')?.dataset.state === 'live'`, 'the stream to be live');
  }, 60_000);

  afterAll(async () => {
    await viewer?.close();
    await proxy?.close();
    await rig?.close();
  });

  it('opens on the viewer path with the ticket gone from the URL, and loads without console errors', async () => {
    const location = await viewer.evaluate<string>('location.pathname + location.search');
    expect(location).toBe(`/browsers/${rig.agent.sessionId}/viewer`);
    await viewer.waitFor(
      `[...document.querySelectorAll('#panel-console .console-row .text')].some((e) => e.textContent.includes('watched page ready'))`,
      'the console line of the watched page',
    );
    // The history endpoint and the stream filters are found in the agent's OpenAPI document.
    await viewer.waitFor(`document.querySelector('.downloads button').title.includes('from the agent')`, 'the history endpoint to be found');
    await viewer.screenshot('loaded');
    expect(viewer.errors).toEqual([]);
  });

  it('shows a click in the watched page in the interactions list within 1 s', async () => {
    await viewer.evaluate(`document.getElementById('tab-interactions').click()`);
    const clicked = Date.now();
    await clickOn(tab, '#go');
    await viewer.waitFor(`${rowTexts('interactions', '.selector')}.includes('#go')`, 'the click in the interactions list', 5_000);
    expect(Date.now() - clicked).toBeLessThan(1000);
    await viewer.screenshot('interactions');
  });

  it('highlights the moment of an interaction on the timeline when it is chosen', async () => {
    const click = await rig.stream.waitForEvent('interaction_click', (e) => e.data!.selector === '#go');
    await viewer.evaluate(
      `[...document.querySelectorAll('#panel-interactions .interaction-row:not([hidden])')].find((r) => r.querySelector('.selector').textContent === '#go').click()`,
    );
    const highlighted = await viewer.waitFor<string>(`document.querySelector('.timeline-canvas').dataset.highlight`, 'the highlight');
    expect(Number(highlighted)).toBe(click.ts);
  });

  it("draws a CDP client's commands as the Actions lane, and highlights a selected action's effects", async () => {
    const effectPage = rig.server.route('/watched-action.html', PAGE.replace('</script>', "console.error('effect of the action');</script>"));
    // A raw CDP client on the agent's endpoint (docs/operations.md "CDP endpoint") navigates the tab.
    const list = (await (await fetch(`${rig.agent.url}/json/list`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as Array<{
      type: string;
      webSocketDebuggerUrl: string;
    }>;
    const ws = new WebSocket(list.find((t) => t.type === 'page')!.webSocketDebuggerUrl, { headers: { authorization: `Bearer ${TOKEN}` } });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const answered = new Promise((resolve) => ws.once('message', resolve));
    ws.send(JSON.stringify({ id: 1, method: 'Page.navigate', params: { url: effectPage } }));
    await answered;
    ws.close();
    const command = await rig.stream.waitForEvent('cdp_command', (e) => e.data!.method === 'Page.navigate');
    const actionId = command.data!.action_id;
    await rig.stream.waitForEvent('console_error', (e) => e.data!.caused_by === actionId);

    await viewer.waitFor(`document.querySelector('.timeline-canvas').dataset.lanes.split(',').includes('Actions')`, 'the Actions lane');
    await viewer.evaluate(`document.getElementById('tab-console').click()`);
    // The viewer holds the navigation once it holds the error it caused (events come in seq order):
    // stepping before that would start from an older action and step away from it.
    await viewer.waitFor(`${rowTexts('console', '.text')}.some((t) => t.includes('effect of the action'))`, 'the error the navigation caused');
    // '[' steps back from the newest action until the navigation is selected.
    const selected = await viewer.waitFor<string>(
      `(() => { const c = document.querySelector('.timeline-canvas'); if (c.dataset.selectedAction !== ${JSON.stringify(actionId)}) c.dispatchEvent(new KeyboardEvent('keydown', { key: '[' })); return c.dataset.selectedAction === ${JSON.stringify(actionId)} && c.dataset.effects; })()`,
      'the navigation selected',
    );
    expect(selected.split(',')).toContain('network_request');
    // Effects that arrive after the selection join it.
    const effects = await viewer.waitFor<string>(
      `(() => { const e = document.querySelector('.timeline-canvas').dataset.effects.split(','); return e.includes('page_navigation') && e.includes('console_error') && e.join(','); })()`,
      'the navigation and the console error among the effects',
    );
    expect(effects.split(',')).toEqual(expect.arrayContaining(['page_navigation', 'console_error', 'network_request']));
    const marked = await viewer.waitFor<string[]>(
      `(() => { const t = [...document.querySelectorAll('#panel-console .vrow.effect:not([hidden]) .text')].map((e) => e.textContent); return t.length > 0 && t; })()`,
      'the console error marked as an effect',
    );
    expect(marked.some((text) => text.includes('effect of the action'))).toBe(true);
    // Rows the action did not cause are not marked.
    const unmarked = await viewer.evaluate<string[]>(
      `[...document.querySelectorAll('#panel-console .vrow:not(.effect):not([hidden]) .text')].map((e) => e.textContent)`,
    );
    expect(unmarked.some((text) => text.includes('watched page ready'))).toBe(true);
    await viewer.screenshot('actions');
    // Escape clears the selection and the marks.
    await viewer.evaluate(`document.querySelector('.timeline-canvas').dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape' }))`);
    await viewer.waitFor(`document.querySelectorAll('#panel-console .vrow.effect').length === 0`, 'the marks cleared');
    expect(viewer.errors).toEqual([]);
  });

  it('draws a step as the Steps lane, named with how it was marked in its tooltip', async () => {
    const marked = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/telemetry/steps`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'watch the page' }),
    });
    expect(marked.status).toBe(200);
    await viewer.waitFor(`document.querySelector('.timeline-canvas').dataset.lanes.split(',').includes('Steps')`, 'the Steps lane');
    // Sweep the pointer along the lane: the step runs from its mark to the live edge.
    const tips = await viewer.evaluate<string[]>(laneTips('Steps'));
    expect(tips.join('\n')).toMatch(/\d\d:\d\d:\d\d\.\d{3} step watch the page \(http, token:1\)/);
    await viewer.screenshot('steps');
    expect(viewer.errors).toEqual([]);
  });

  it('shows a 404 fetch in the network panel, with its headers and body on demand', async () => {
    await viewer.evaluate(`document.getElementById('tab-network').click()`);
    await tab.evaluate(`fetch('/viewer-missing').then((r) => r.text())`);
    const row = `[...document.querySelectorAll('#panel-network .net-row:not([hidden])')].find((r) => r.querySelector('.url').textContent.includes('viewer-missing'))`;
    await viewer.waitFor(`${row}?.querySelector('.status').textContent === '404'`, 'the 404 in the network panel');
    expect(await viewer.evaluate(`${row}.classList.contains('failed')`)).toBe(true);
    await viewer.evaluate(`${row}.click()`);
    const details = await viewer.waitFor<string>(
      `!document.querySelector('.network-details').hidden && document.querySelector('.network-details').textContent`,
      'the request details',
    );
    expect(details).toContain('Response headers');
    expect(details).toContain('content-type');
    expect(details).toContain('not found');
    await viewer.screenshot('network');
  });

  it('shows a thrown error in the console panel, with its stack trace expandable', async () => {
    await viewer.evaluate(`document.getElementById('tab-console').click()`);
    await tab.evaluate(`setTimeout(function viewerThrower() { throw new Error('viewer-boom'); }, 0)`);
    const row = `[...document.querySelectorAll('#panel-console .console-row:not([hidden])')].find((r) => r.querySelector('.text').textContent.includes('viewer-boom'))`;
    await viewer.waitFor(row, 'the exception in the console panel');
    expect(await viewer.evaluate(`${row}.querySelector('.level').textContent`)).toBe('exception');
    await viewer.evaluate(`${row}.click()`);
    const frames = await viewer.waitFor<string[]>(
      `${row}.getAttribute('aria-expanded') === 'true' && [...${row}.querySelectorAll('.stack .frame')].map((f) => f.textContent)`,
      'the stack trace',
    );
    expect(frames[0]).toMatch(/^at viewerThrower \(/);
    await viewer.screenshot('console-stack');
  });

  it('downloads the events as JSON lines from the history, and the HAR when the agent has it', async () => {
    const dir = `${process.cwd()}/${ARTIFACTS}/downloads-${process.pid}`;
    rmSync(dir, { recursive: true, force: true });
    await viewer.client.send('Page.setDownloadBehavior', { behavior: 'allow', downloadPath: dir });
    await viewer.evaluate(`document.querySelector('.downloads button').click()`);
    const lines = await waitForFile(`${dir}/session-${rig.agent.sessionId}-events.jsonl`);
    const envelopes = lines
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { seq: number; event: { type: string } });
    expect(envelopes.length).toBeGreaterThan(10);
    expect(envelopes.map((e) => e.seq)).toEqual([...envelopes.map((e) => e.seq)].sort((a, b) => a - b));
    expect(envelopes.some((e) => e.event.type === 'interaction_click')).toBe(true);

    await viewer.waitFor(`!document.querySelector('.downloads a').hidden`, 'the HAR button');
    await viewer.evaluate(`document.querySelector('.downloads a').click()`);
    const har = JSON.parse(await waitForFile(`${dir}/${rig.agent.sessionId}.har`)) as {
      log: { version: string; entries: Array<{ request: { url: string } }> };
    };
    expect(har.log.version).toBe('1.2');
    expect(har.log.entries.some((e) => e.request.url.endsWith('/viewer-missing'))).toBe(true);
  });

  it('moves between the panels with the arrow keys', async () => {
    await viewer.evaluate(`document.getElementById('tab-console').focus()`);
    await viewer.client.send('Input.dispatchKeyEvent', { type: 'keyDown', key: 'ArrowRight', code: 'ArrowRight', windowsVirtualKeyCode: 39 });
    await viewer.client.send('Input.dispatchKeyEvent', { type: 'keyUp', key: 'ArrowRight', code: 'ArrowRight', windowsVirtualKeyCode: 39 });
    expect(await viewer.evaluate(`document.activeElement.id`)).toBe('tab-network');
    expect(await viewer.evaluate(`document.getElementById('panel-network').hidden`)).toBe(false);
    await viewer.evaluate(`document.getElementById('tab-console').click()`);
  });

  it('draws dialogs, downloads, EventSource messages and Web Vitals in the Activity lane', async () => {
    // A dialog, answered by the test's own CDP client (the agent never answers one).
    await tab.send('Page.enable');
    const confirming = tab.evaluate('confirm("proceed?")');
    await rig.stream.waitForEvent('page_dialog_opened', (e) => e.data!.message === 'proceed?');
    await tab.send('Page.handleJavaScriptDialog', { accept: true });
    await confirming;
    await rig.stream.waitForEvent('page_dialog_closed', (e) => e.data!.dialog_type === 'confirm');
    // An EventSource message.
    const sse = rig.server.handle('/activity-sse', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
      res.end('event: tick\ndata: hello-activity\n\n');
    });
    await tab.evaluate(
      `new Promise((resolve) => { const es = new EventSource(${JSON.stringify(sse)}); es.addEventListener('tick', (e) => { es.close(); resolve(e.data); }); })`,
    );
    await rig.stream.waitForEvent('network_eventsource_message', (e) => e.data!.event_name === 'tick');
    // A download, let through as an automation client does.
    const downloadDir = mkdtempSync(join(tmpdir(), 'bta-viewer-downloads-'));
    try {
      await rig.driver.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloadDir, eventsEnabled: true });
      const file = rig.server.handle('/activity.bin', (_req, res) => {
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-disposition': 'attachment; filename="activity.bin"',
          'content-length': '5000',
        });
        res.end(Buffer.alloc(5000, 1));
      });
      await tab.evaluate(
        `(() => { const a = document.createElement('a'); a.href = ${JSON.stringify(file)}; document.body.append(a); a.click(); a.remove(); })()`,
      );
      await rig.stream.waitForEvent('network_download_finished', (e) => e.data!.suggested_filename === 'activity.bin');
    } finally {
      await rig.driver.send('Browser.setDownloadBehavior', { behavior: 'default', eventsEnabled: true }).catch(() => undefined);
      rmSync(downloadDir, { recursive: true, force: true });
    }
    // Web Vitals of the watched document: reported when the tab commits another document.
    const watched = rig.server.route('/watched.html', PAGE);
    await tab.navigate(watched);
    await rig.stream.waitForEvent('page_web_vitals', (e) => e.data!.reason === 'navigated');

    const summary = await viewer.waitFor<string>(
      `(() => { const l = document.querySelector('.timeline-canvas').getAttribute('aria-label'); return /Web Vitals reports/.test(l) && /download events/.test(l) && l; })()`,
      'the activity in the timeline summary',
    );
    expect(summary).toMatch(/2 dialog events/);
    expect(summary).toMatch(/[2-9] socket events/);
    const lanes = (await viewer.evaluate<string>(`document.querySelector('.timeline-canvas').dataset.lanes`)).split(',');
    expect(lanes).toContain('Activity');
    // Sweep the pointer along the Activity lane (the whole session in view): the tooltips name each mark.
    await viewer.evaluate(`[...document.querySelectorAll('.timeline-bar button')].find((b) => b.textContent === 'Fit').click()`);
    const tips = await viewer.evaluate<string[]>(laneTips('Activity'));
    const all = tips.join('\n');
    expect(all).toContain('confirm opened “proceed?”');
    expect(all).toMatch(/confirm accepted after \d+ ms \(cdp_client\)/);
    expect(all).toMatch(/EventSource tick \d+ B/);
    expect(all).toMatch(/download completed: activity\.bin \(4\.9 KiB\)/);
    expect(all).toMatch(/Web Vitals \(navigated\): TTFB \d+ ms/);
    await viewer.screenshot('activity');
    expect(viewer.errors).toEqual([]);
  });

  it('zooms with the wheel around the pointer, pans with a drag and fits with 0', async () => {
    // Real input (CDP Input.*), so pointer capture and the wheel go through the browser as a user's would.
    const canvas = `document.querySelector('.timeline-canvas')`;
    const parse = (label: string) => {
      const m = /from (\d\d):(\d\d):(\d\d)\.(\d{3}) to (\d\d):(\d\d):(\d\d)\.(\d{3})/.exec(label);
      if (!m) throw new Error(`no range in ${JSON.stringify(label)}`);
      const ms = (i: number) => ((Number(m[i]) * 60 + Number(m[i + 1])) * 60 + Number(m[i + 2])) * 1000 + Number(m[i + 3]);
      const from = ms(1);
      const to = ms(5) < from ? ms(5) + 86_400_000 : ms(5);
      return { from, to, span: to - from, label };
    };
    const shown = async () => parse(await viewer.evaluate<string>(`${canvas}.getAttribute('aria-label')`));
    const changed = async (before: string, what: string) =>
      viewer.waitFor(`${canvas}.getAttribute('aria-label') !== ${JSON.stringify(before)}`, what).then(shown);
    const mouse = async (
      type: 'mousePressed' | 'mouseReleased' | 'mouseMoved' | 'mouseWheel',
      x: number,
      y: number,
      extra: { button?: 'left'; buttons?: number; clickCount?: number; deltaX?: number; deltaY?: number } = {},
    ): Promise<void> => {
      await viewer.client.send('Input.dispatchMouseEvent', { type, x, y, ...extra });
    };

    await viewer.evaluate(`${canvas}.scrollIntoView({ block: 'center' })`);
    await viewer.evaluate(`${canvas}.dispatchEvent(new KeyboardEvent('keydown', { key: '0' }))`);
    await viewer.evaluate(`new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r())))`);
    const rect = await viewer.evaluate<{ left: number; top: number; width: number }>(
      `(() => { const r = ${canvas}.getBoundingClientRect(); return { left: r.left, top: r.top, width: r.width }; })()`,
    );
    const plotLeft = rect.left + 96;
    const plotWidth = rect.width - 96;
    const y = rect.top + 30;
    // The whole session keeps growing as events arrive (the Activity lane's EventSource and the
    // like): the range zoomed is the one on screen when the wheel turns, read then.
    await viewer.evaluate(`addEventListener('wheel', () => { window.rangeAtWheel = ${canvas}.getAttribute('aria-label'); }, { capture: true, once: true })`);
    // Wheel up at the middle of the plot: about twice as close (1.0015^-462 ≈ 0.5), the middle stays.
    await mouse('mouseWheel', plotLeft + plotWidth / 2, y, { deltaX: 0, deltaY: -462 });
    const fit = parse(await viewer.waitFor<string>('window.rangeAtWheel', 'the range at the wheel'));
    const zoomed = await changed(fit.label, 'the zoomed range');
    expect(zoomed.span / fit.span).toBeGreaterThan(0.4);
    expect(zoomed.span / fit.span).toBeLessThan(0.6);
    expect(Math.abs((zoomed.from + zoomed.to) / 2 - (fit.from + fit.to) / 2)).toBeLessThan(fit.span * 0.05);

    // Drag 200 px to the right: the same span, 200 px of it earlier.
    await mouse('mousePressed', plotLeft + 100, y, { button: 'left', buttons: 1, clickCount: 1 });
    await mouse('mouseMoved', plotLeft + 200, y, { button: 'left', buttons: 1 });
    await mouse('mouseMoved', plotLeft + 300, y, { button: 'left', buttons: 1 });
    await mouse('mouseReleased', plotLeft + 300, y, { button: 'left', buttons: 0, clickCount: 1 });
    const panned = await changed(zoomed.label, 'the panned range');
    expect(Math.abs(panned.span - zoomed.span)).toBeLessThanOrEqual(2);
    const expected = (200 / plotWidth) * zoomed.span;
    expect(Math.abs(zoomed.from - panned.from - expected)).toBeLessThan(expected * 0.05 + 2);
    // A drag pins nothing (only a click does).
    await mouse('mouseMoved', rect.left + 10, rect.top - 40);

    // 0 fits the whole session again.
    await viewer.evaluate(`${canvas}.dispatchEvent(new KeyboardEvent('keydown', { key: '0' }))`);
    const refit = await changed(panned.label, 'the whole session');
    expect(refit.span).toBeGreaterThanOrEqual(fit.span);
    expect(refit.from).toBeLessThanOrEqual(fit.from);
    expect(viewer.errors).toEqual([]);
  });

  it('asks the agent to filter the stream when a category is hidden, and fills it in when shown again', async () => {
    const status = `document.querySelector('.conn-status').textContent`;
    await viewer.evaluate(`document.querySelector('.filters input[value=console]').click()`);
    await viewer.waitFor(`${status}.includes('stream filtered by the agent')`, 'the filtered stream');
    await tab.evaluate(`console.log('while-hidden')`);
    const hidden = await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'while-hidden');
    // Something after it reaches the viewer, so it would have arrived by now.
    await tab.evaluate(`fetch('/after-hidden').catch(() => {})`);
    await viewer.waitFor(
      `${status}.includes('stream filtered by the agent') && Number(/seq (\\d+)/.exec(${status})[1]) > ${rig.stream.envelopes.find((e) => e.event === hidden)?.seq ?? 0}`,
      'a later event',
    );
    await viewer.evaluate(`document.querySelector('.filters input[value=console]').click()`);
    await viewer.waitFor(`!${status}.includes('stream filtered')`, 'the unfiltered stream');
    await viewer.waitFor(`${rowTexts('console', '.text')}.includes('while-hidden')`, 'the hidden message, replayed');
  });

  it('keeps the Steps lane live while a category is hidden (control events still asked for)', async () => {
    const status = `document.querySelector('.conn-status').textContent`;
    await viewer.evaluate(`document.querySelector('.filters input[value=network]').click()`);
    await viewer.waitFor(`${status}.includes('stream filtered by the agent')`, 'the filtered stream');
    const marked = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/telemetry/steps`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'while filtered' }),
    });
    expect(marked.status).toBe(200);
    await viewer.waitFor(`(async () => (await ${laneTips('Steps')}).some((tip) => tip.includes('step while filtered')))()`, 'the step marked while filtered');
    await viewer.evaluate(`document.querySelector('.filters input[value=network]').click()`);
    await viewer.waitFor(`!${status}.includes('stream filtered')`, 'the unfiltered stream');
  });

  it('resumes after a network drop with Last-Event-ID, without duplicates, and says so', async () => {
    const count = async (text: string) => {
      await viewer.evaluate(
        `(() => { const s = document.querySelector('#panel-console input[type=search]'); s.value = ${JSON.stringify(text)}; s.dispatchEvent(new Event('input')); })()`,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      return viewer.evaluate<number>(`${rowTexts('console', '.text')}.filter((t) => t.includes(${JSON.stringify(text)})).length`);
    };
    await tab.evaluate(`console.log('before-drop')`);
    await viewer.waitFor(`${rowTexts('console', '.text')}.includes('before-drop')`, 'before-drop');
    proxy.refuse(true);
    proxy.drop();
    await viewer.waitFor(`document.querySelector('.conn-status').dataset.state === 'reconnecting'`, 'the viewer to notice the drop');
    await tab.evaluate(`console.log('during-drop')`);
    await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'during-drop');
    proxy.refuse(false);
    await viewer.waitFor(`${rowTexts('console', '.text')}.includes('during-drop')`, 'during-drop after the resume');
    expect(await count('before-drop')).toBe(1);
    expect(await count('during-drop')).toBe(1);
    await count('');
    await viewer.waitFor(`document.querySelector('.notices [data-kind="stream_resumed"]')`, 'the resumed notice');
    expect(await viewer.evaluate(`document.querySelector('.notices [data-kind="gap"]')`)).toBe(null);
    viewer.forgetDroppedStreams();
    expect(viewer.errors).toEqual([]);
  });

  it('marks the events lost while it was away (the agent no longer retained them)', async () => {
    proxy.refuse(true);
    proxy.drop();
    await viewer.waitFor(`document.querySelector('.conn-status').dataset.state === 'reconnecting'`, 'the viewer to notice the drop');
    // More than the agent keeps: the oldest of them leave its log before the viewer is back.
    await tab.evaluate(`for (let i = 0; i < ${RING_EVENTS + 500}; i++) console.log('flood ' + i)`);
    await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === `flood ${RING_EVENTS + 499}`);
    proxy.refuse(false);
    const notice = await viewer.waitFor<string>(`document.querySelector('.notices [data-kind="gap"]')?.textContent`, 'the lost-events notice', 20_000);
    expect(notice).toMatch(/\d+ events lost while the viewer was away \(seq \d+–\d+\)/);
    await viewer.screenshot('events-lost');
    viewer.forgetDroppedStreams();
  });

  it('marks the watched browser disconnecting and reconnecting', async () => {
    process.kill(rig.agent.browserPid!, 'SIGKILL');
    await rig.stream.waitForEvent('monitor_reconnected');
    const disconnected = await viewer.waitFor<string>(`document.querySelector('.notices [data-kind="disconnected"]')?.textContent`, 'the disconnected notice');
    expect(disconnected).toContain('browser disconnected');
    const reconnected = await viewer.waitFor<string>(`document.querySelector('.notices [data-kind="reconnected"]')?.textContent`, 'the reconnected notice');
    expect(reconnected).toMatch(/browser reconnected after/);
    // The kill is a crash of the browser (service_crashed): a notice, and a mark in the Health lane.
    const crashed = await viewer.waitFor<string>(`document.querySelector('.notices [data-kind="service_crashed"]')?.textContent`, 'the crash notice');
    expect(crashed).toMatch(/chromium crashed \(running, pid \d+, SIGKILL\)/);
    expect(await viewer.evaluate<string>(`document.querySelector('.timeline-canvas').dataset.lanes`)).toContain('Health');
    await viewer.screenshot('browser-reconnected');
    // The picture in docs/viewer.md: the network panel with a request open, the notices above.
    await viewer.evaluate(`document.getElementById('tab-network').click()`);
    await viewer.evaluate(
      `[...document.querySelectorAll('#panel-network .net-row:not([hidden])')].find((r) => r.querySelector('.url').textContent.includes('viewer-missing'))?.click()`,
    );
    await viewer.screenshot('overview', 0.75);
  });

  it('is readable in the dark color scheme too', async () => {
    await viewer.client.send('Emulation.setEmulatedMedia', { features: [{ name: 'prefers-color-scheme', value: 'dark' }] });
    expect(await viewer.evaluate(`getComputedStyle(document.body).backgroundColor`)).toBe('rgb(15, 18, 22)');
    await viewer.screenshot('dark');
    await viewer.client.send('Emulation.setEmulatedMedia', { features: [] });
    expect(viewer.errors).toEqual([]);
  });
});

// ---- auth ------------------------------------------------------------------------------------

const READER = 'viewer-test-reader-token';
const COMPUTER = 'viewer-test-computer-token';

describe('viewer auth', () => {
  let agent: Agent;
  let base: string;
  const lines: string[] = [];
  /** Every ticket and cookie value handed out: none may reach the logs. */
  const secrets: string[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    agent = await startAgent({
      port: 0,
      token: TOKEN,
      tokens: [
        { token: READER, scopes: ['telemetry:read'] },
        { token: COMPUTER, scopes: ['computer'] },
      ],
      screenshots: false,
      logger: pino({ level: 'trace' }, sink),
    });
    base = `${agent.url}/browsers/${agent.sessionId}`;
  });
  afterAll(() => agent?.close());

  async function ticketUrl(token = TOKEN): Promise<string> {
    const response = await mintViewerUrl(agent.url, agent.sessionId, token);
    expect(response.status).toBe(201);
    const { url } = (await response.json()) as { url: string };
    secrets.push(new URL(url).searchParams.get('code')!);
    return url;
  }

  async function redeem(url: string): Promise<Response> {
    return fetch(url, { redirect: 'manual' });
  }

  async function viewerCookie(): Promise<string> {
    const response = await redeem(await ticketUrl());
    expect(response.status).toBe(303);
    const cookie = /^(bta_viewer=[^;]+)/.exec(response.headers.get('set-cookie') ?? '')![1]!;
    secrets.push(cookie.slice('bta_viewer='.length));
    return cookie;
  }

  /** Status and body of a GET of the stream with these headers (the stream is not read). */
  async function streamStatus(url: string, headers: Record<string, string>): Promise<{ status: number; type: string | null; body: any }> {
    const controller = new AbortController();
    const response = await fetch(url, { headers, signal: controller.signal });
    const type = response.headers.get('content-type');
    const body = response.status === 200 ? undefined : await response.json();
    controller.abort();
    return { status: response.status, type, body };
  }

  it('mints a one-time URL for a telemetry:read token, and refuses other tokens', async () => {
    const response = await mintViewerUrl(agent.url, agent.sessionId, READER);
    expect(response.status).toBe(201);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as { url: string; expires_at: string };
    secrets.push(new URL(body.url).searchParams.get('code')!);
    expect(body.url).toMatch(new RegExp(`^${agent.url}/browsers/${agent.sessionId}/viewer/open\\?code=[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`));
    const ttl = Date.parse(body.expires_at) - Date.now();
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    expect((await mintViewerUrl(agent.url, agent.sessionId, COMPUTER)).status).toBe(403);
    const anonymous = await fetch(`${base}/viewer/sessions`, { method: 'POST' });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ code: 'unauthorized' });
  });

  it('exchanges the ticket for an HttpOnly, SameSite=Strict cookie on the session path, and redirects without it', async () => {
    const response = await redeem(await ticketUrl());
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe(`/browsers/${agent.sessionId}/viewer`);
    const setCookie = response.headers.get('set-cookie')!;
    secrets.push(/^bta_viewer=([^;]+)/.exec(setCookie)![1]!);
    const attributes = setCookie
      .split(';')
      .slice(1)
      .map((a) => a.trim());
    expect(attributes).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Strict', `Path=/browsers/${agent.sessionId}/`]));
    expect(attributes.find((a) => a.startsWith('Max-Age='))).toBeDefined();
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
  });

  it('refuses a reused, forged or other-session ticket with 401', async () => {
    const url = await ticketUrl();
    expect((await redeem(url)).status).toBe(303);
    const reused = await redeem(url);
    expect(reused.status).toBe(401);
    expect(await reused.json()).toMatchObject({ code: 'unauthorized', message: expect.stringContaining('already used') });

    const fresh = new URL(await ticketUrl());
    const [payload, signature] = fresh.searchParams.get('code')!.split('.');
    const forgedSignature = `${signature!.slice(0, -2)}${signature!.endsWith('AA') ? 'BB' : 'AA'}`;
    for (const code of [
      `${payload}.${forgedSignature}`,
      `${Buffer.from('{"k":"ticket","sid":"x","exp":1e15,"jti":"j"}').toString('base64url')}.${signature}`,
      'garbage',
      '',
    ]) {
      const forged = await fetch(`${base}/viewer/open?code=${encodeURIComponent(code)}`, { redirect: 'manual' });
      expect(forged.status, code).toBe(401);
    }
    // The untouched ticket still works once: the forgeries did not use it up.
    expect((await redeem(fresh.href)).status).toBe(303);

    const other = new URL(await ticketUrl());
    other.pathname = '/browsers/another-session/viewer/open';
    expect((await redeem(other.href)).status).toBe(401);
  });

  it('answers the stream 401 JSON without a cookie, and streams with one', async () => {
    const none = await streamStatus(`${base}/telemetry`, {});
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ code: 'unauthorized' });
    const cookie = await viewerCookie();
    for (const path of ['/telemetry', '/telemetry/stream', '/telemetry?category=console', '/telemetry/events?limit=1']) {
      const withCookie = await streamStatus(`${base}${path}`, { cookie });
      expect(withCookie.status, path).toBe(200);
    }
    expect((await streamStatus(`${base}/telemetry`, { cookie })).type).toBe('text/event-stream');
  });

  it("accepts the cookie only for reading this session's telemetry paths", async () => {
    const cookie = await viewerCookie();
    const json = { cookie, 'content-type': 'application/json' };
    // Another session's paths, the session object itself, writes, other scopes.
    expect((await streamStatus(`${agent.url}/browsers/another-session/telemetry`, { cookie })).status).toBe(401);
    expect((await fetch(base, { headers: { cookie } })).status).toBe(401);
    expect((await fetch(base, { method: 'PATCH', headers: json, body: '{"telemetry":{}}' })).status).toBe(401);
    expect(
      (await fetch(`${base}/computer/batch`, { method: 'POST', headers: json, body: '{"actions":[{"type":"sleep","sleep":{"duration_ms":0}}]}' })).status,
    ).toBe(401);
    expect((await fetch(`${base}/viewer/sessions`, { method: 'POST', headers: { cookie } })).status).toBe(401);
    expect((await fetch(`${agent.url}/metrics`, { headers: { cookie } })).status).toBe(401);
    // A wrong bearer token is not rescued by a good cookie.
    expect((await streamStatus(`${base}/telemetry`, { cookie, authorization: 'Bearer wrong' })).status).toBe(401);
    // A tampered cookie.
    const tampered = await streamStatus(`${base}/telemetry`, { cookie: `${cookie.slice(0, -3)}xyz` });
    expect(tampered.status).toBe(401);
    expect(tampered.body.message).toContain('viewer session');
  });

  it('serves the page and its assets with a CSP without inline script, no framing and nosniff', async () => {
    for (const path of ['/viewer', '/viewer/assets/viewer.js', '/viewer/assets/viewer.css', '/viewer/open?code=x']) {
      const response = await fetch(`${base}${path}`, { redirect: 'manual' });
      const csp = response.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).toContain("script-src 'self'");
      expect(csp, path).toContain("default-src 'none'");
      expect(csp, path).not.toContain('unsafe-inline');
      expect(csp, path).not.toContain('unsafe-eval');
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(response.headers.get('x-frame-options'), path).toBe('DENY');
    }
    const page = await fetch(`${base}/viewer`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=/);
    const script = await fetch(`${base}/viewer/assets/viewer.js`);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const etag = script.headers.get('etag')!;
    expect((await fetch(`${base}/viewer/assets/viewer.js`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    const missing = await fetch(`${base}/viewer/assets/nope.js`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 'not_found' });
  });

  it('never writes a ticket or a cookie to the logs', () => {
    expect(secrets.length).toBeGreaterThan(5);
    const all = lines.join('\n');
    expect(all).toContain('/viewer/open?code=[REDACTED]');
    for (const secret of secrets) {
      expect(all).not.toContain(secret);
      expect(all).not.toContain(secret.split('.')[1]);
    }
    expect(all.toLowerCase()).not.toContain('bta_viewer');
  });
});
