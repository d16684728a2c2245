// GET /browsers/{id}/har on real Chromium (docs/export.md "HAR"): a page with a stylesheet, a
// script, an image and a fetch() of JSON is recorded through the agent, exported, checked against
// the HAR 1.2 schema, and then replayed offline by a real consumer (playwright-core's
// routeFromHAR, driving the same Chromium binary) with the origin server stopped.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HarEntry, HarPage } from '../../src/export/har.ts';
import { CHROMIUM_FLAGS, locateChromium } from '../../src/browser/chromium-launcher.ts';
import { harValidator } from '../unit/support/har-validator.ts';
import { consoleText, startRig, TOKEN, type Tab, type TestRig } from './support/harness.ts';

/** A 2×1 PNG: one red pixel and one blue pixel. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAEElEQVR4nGP4z8DAwPCfAQAU+gH/o0e0jAAAAABJRU5ErkJggg==', 'base64');

const PAGE = `<!doctype html><html><head><title>har fixture</title>
<link rel="stylesheet" href="/har/style.css">
<script src="/har/app.js"></script>
</head><body>
<h1 id="from-script">(script did not run)</h1>
<p id="from-json">(json not loaded)</p>
<img id="pixel" src="/har/pixel.png">
</body></html>`;
const STYLE = 'h1 { color: rgb(0, 128, 0); }';
const SCRIPT = `addEventListener('DOMContentLoaded', async () => {
  document.getElementById('from-script').textContent = 'script ran: ' + (6 * 7);
  const data = await (await fetch('/har/data.json?lang=en', { headers: { 'x-har-test': '1' } })).json();
  document.getElementById('from-json').textContent = data.greeting + ', ' + data.items.join('+');
  console.log('har-page-done');
});`;
const DATA = JSON.stringify({ greeting: 'hello from json', items: ['a', 'b', 'c'] });

/** What the page shows once everything loaded: texts, the stylesheet's color and the image size. */
const RENDERED = `(async () => {
  const img = document.getElementById('pixel');
  await (img.complete ? Promise.resolve() : new Promise((r) => { img.onload = r; img.onerror = r; }));
  return {
    script: document.getElementById('from-script').textContent,
    json: document.getElementById('from-json').textContent,
    color: getComputedStyle(document.getElementById('from-script')).color,
    image: img.naturalWidth + 'x' + img.naturalHeight,
  };
})()`;

interface Har {
  log: { version: string; creator: { name: string }; entries: HarEntry[]; pages: HarPage[] };
}

describe('GET /browsers/{id}/har', () => {
  let rig: TestRig;
  let tab: Tab;
  let pageUrl: string;
  let har: Har;
  let harText: string;
  let live: Record<string, string>;
  let response: Response;
  const dir = mkdtempSync(join(tmpdir(), 'bta-har-'));

  const harUrl = (query = '') => `${rig.agent.url}/browsers/${rig.agent.sessionId}/har${query}`;
  const get = (url: string) => fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  const entryOf = (path: string) => har.log.entries.find((e) => new URL(e.request.url).pathname === path);

  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
    const s = rig.server;
    pageUrl = s.route('/har/page.html', PAGE);
    s.route('/har/style.css', STYLE, 'text/css');
    s.route('/har/app.js', SCRIPT, 'application/javascript');
    s.handle('/har/pixel.png', (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(PNG));
    s.route('/har/data.json', DATA, 'application/json');
    // Every body a replay needs: scripts, stylesheets and images too (the default policy leaves them out).
    const patched = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        telemetry: {
          browser: {
            network: {
              bodies: {
                resource_types: ['Document', 'Stylesheet', 'Script', 'Image', 'Fetch', 'XHR', 'Other'],
                mime_types: ['text/*', 'application/javascript', 'application/json', 'image/*'],
              },
            },
          },
        },
      }),
    });
    expect(patched.status).toBe(200);

    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(pageUrl);
    await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'har-page-done');
    for (const path of ['/har/page.html', '/har/style.css', '/har/app.js', '/har/pixel.png', '/har/data.json']) {
      await rig.stream.waitForEvent('network_response', (e) => e.data!.url !== undefined && new URL(e.data!.url).pathname === path);
    }
    await rig.stream.waitForEvent('page_load', (e) => e.data!.target_id === tab.targetId && e.data!.url === pageUrl);
    live = (await tab.evaluate(RENDERED)).result.value;

    response = await get(harUrl(`?target_id=${tab.targetId}`));
    harText = await response.text();
    har = JSON.parse(harText) as Har;
  }, 60_000);

  afterAll(async () => {
    await rig?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 200 with a JSON HAR 1.2 document', () => {
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(har.log.version).toBe('1.2');
    expect(har.log.creator.name).toBe('browser-telemetry-agent');
  });

  it('validates against the HAR 1.2 JSON schema', () => {
    const validate = harValidator();
    expect(validate(har), JSON.stringify(validate.errors?.slice(0, 5))).toBe(true);
  });

  it('has one page for the navigation, with its DOMContentLoaded and load times', () => {
    const pages = har.log.pages.filter((p) => p.title === pageUrl);
    expect(pages).toHaveLength(1);
    const timings = pages[0]!.pageTimings;
    expect(timings.onContentLoad).toBeGreaterThan(0);
    expect(timings.onLoad).toBeGreaterThanOrEqual(timings.onContentLoad);
    for (const path of ['/har/page.html', '/har/style.css', '/har/app.js', '/har/pixel.png', '/har/data.json'])
      expect(entryOf(path)?.pageref, path).toBe(pages[0]!.id);
  });

  it('gives each entry its resource type, status and body', () => {
    expect(entryOf('/har/page.html')).toMatchObject({ _resourceType: 'document', response: { status: 200, content: { mimeType: 'text/html', text: PAGE } } });
    expect(entryOf('/har/style.css')).toMatchObject({ _resourceType: 'stylesheet', response: { content: { text: STYLE } } });
    expect(entryOf('/har/app.js')).toMatchObject({ _resourceType: 'script', response: { content: { text: SCRIPT } } });
    expect(entryOf('/har/data.json')).toMatchObject({ _resourceType: 'fetch', response: { content: { mimeType: 'application/json', text: DATA } } });
  });

  it('keeps the image bytes base64', () => {
    const content = entryOf('/har/pixel.png')!.response.content;
    expect(content.encoding).toBe('base64');
    expect(Buffer.from(content.text!, 'base64')).toEqual(PNG);
    expect(content.size).toBe(PNG.length);
  });

  it('gives the request headers, the query string, the server address and the protocol', () => {
    const json = entryOf('/har/data.json')!;
    expect(json.request.headers).toContainEqual({ name: 'x-har-test', value: '1' });
    expect(json.request.queryString).toEqual([{ name: 'lang', value: 'en' }]);
    expect(json.serverIPAddress).toBe('127.0.0.1');
    expect(json.request.httpVersion).toBe('HTTP/1.1');
    expect(json.response.headers).toContainEqual({ name: 'content-type', value: 'application/json' });
  });

  it('gives real timings: non-negative phases that add up to time, within the page load', () => {
    for (const path of ['/har/page.html', '/har/style.css', '/har/app.js', '/har/pixel.png', '/har/data.json']) {
      const { timings, time } = entryOf(path)!;
      for (const phase of ['send', 'wait', 'receive'] as const) expect(timings[phase], `${path} ${phase}`).toBeGreaterThanOrEqual(0);
      expect(timings.wait, path).toBeGreaterThan(0);
      const sum = [timings.blocked, timings.dns, timings.connect, timings.send, timings.wait, timings.receive].filter((v) => v > 0).reduce((a, b) => a + b, 0);
      expect(time, path).toBeCloseTo(sum, 2);
      expect(time, path).toBeLessThan(10_000);
    }
  });

  it('narrows to one navigation with nav_seq', async () => {
    const navSeq = (await rig.stream.waitForEvent('page_load', (e) => e.data!.url === pageUrl)).data!.nav_seq!;
    const one = (await (await get(harUrl(`?target_id=${tab.targetId}&nav_seq=${navSeq}`))).json()) as Har;
    expect(one.log.pages.map((p) => p.title)).toEqual([pageUrl]);
    expect(one.log.entries.map((e) => new URL(e.request.url).pathname)).toEqual(expect.arrayContaining(['/har/page.html', '/har/data.json']));
    const other = (await (await get(harUrl(`?target_id=${tab.targetId}&nav_seq=${navSeq + 100}`))).json()) as Har;
    expect(other.log.entries).toEqual([]);
  });

  it('answers a bad since with 400 invalid_input naming the field', async () => {
    const bad = await get(harUrl('?since=yesterday'));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'invalid_input', details: [{ field: 'since' }] });
  });

  it('needs a token', async () => {
    expect((await fetch(harUrl())).status).toBe(401);
  });

  it('replays offline in playwright-core (routeFromHAR): the page renders the same content', async () => {
    expect(live).toEqual({ script: 'script ran: 42', json: 'hello from json, a+b+c', color: 'rgb(0, 128, 0)', image: '2x1' });
    const harPath = join(dir, 'session.har');
    writeFileSync(harPath, harText);
    // The origin is gone: whatever the page gets comes from the HAR.
    await rig.server.close();
    expect(
      await fetch(pageUrl).then(
        () => 'reached',
        () => 'refused',
      ),
    ).toBe('refused');

    const binary = await locateChromium();
    let browser: Browser | undefined;
    try {
      // The binary's own headless flag (Playwright's `headless: true` adds plain --headless).
      const headless = binary.headlessFlag === '--headless';
      const args = [...CHROMIUM_FLAGS, ...(headless ? [] : [binary.headlessFlag])];
      browser = await chromium.launch({ executablePath: binary.path, env: { ...process.env, ...binary.env }, args, headless, timeout: 30_000 });
      const context = await browser.newContext();
      await context.routeFromHAR(harPath, { notFound: 'abort' });
      const page = await context.newPage();
      await page.goto(pageUrl);
      await page.waitForFunction(() => document.getElementById('from-json')?.textContent !== '(json not loaded)', undefined, { timeout: 10_000 });
      expect(await page.evaluate(RENDERED)).toEqual(live);
    } finally {
      await browser?.close();
    }
  }, 60_000);
});
