// The viewer's page snapshot panel (docs/viewer.md "Page snapshots") on real Chromium: a computer
// batch clicks a button that changes a heading; the viewer, in a second headless Chromium, selects
// the click on the timeline and shows the page before and after it, with its external style
// sheet, the point the click hit, and nothing of the page run or fetched.

import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_FLAGS, locateChromium } from '../../src/browser/chromium-launcher.ts';
import { centerOf, postBatch } from './support/computer-api.ts';
import { SseClient, startRig, TOKEN, type Tab, type TestRig } from './support/harness.ts';

const STYLE_SHEET = `h1 { color: rgb(12, 34, 56); } .bg { width: 40px; height: 40px; background-image: url(/vsnap/bg.png); }`;

const PAGE = `<!doctype html><html><head><title>snapshot panel</title>
<link rel="stylesheet" href="/vsnap/site.css"></head><body style="margin: 20px">
<h1 id="heading">Before the click</h1>
<button id="change" style="width: 200px; height: 60px" onclick="document.getElementById('heading').textContent = 'After the click'">Change</button>
<img id="pixel" src="/vsnap/pixel.png" alt="" width="10" height="10" onerror="window.imgFailed = true">
<div class="bg"></div>
<script>window.ranInPage = true; window.fixtureReady = true;</script>
</body></html>`;

interface PanelState {
  caption: string;
  sandbox: string | null;
  heading: string | undefined;
  color: string | undefined;
  scripts: number;
  sources: number;
  ranInSnapshot: boolean;
  hit: { hidden: boolean; left: number; top: number };
  scale: number;
}

/** What the panel shows now, read in the viewer page. */
const PANEL_STATE = `(() => {
  const frame = document.querySelector('.snapshot-stage iframe');
  const doc = frame?.contentDocument;
  const heading = doc?.getElementById('heading');
  const marker = document.querySelector('.snapshot-hit');
  const scale = frame ? frame.getBoundingClientRect().width / frame.offsetWidth : 0;
  return {
    caption: document.querySelector('.snapshot-panel .caption').textContent,
    sandbox: frame ? frame.getAttribute('sandbox') : null,
    heading: heading?.textContent,
    color: heading ? frame.contentWindow.getComputedStyle(heading).color : undefined,
    scripts: doc ? doc.querySelectorAll('script').length : -1,
    sources: doc ? doc.querySelectorAll('[src], [href], [srcset], [onclick], [onerror]').length : -1,
    ranInSnapshot: frame ? frame.contentWindow.ranInPage === true || frame.contentWindow.imgFailed === true : false,
    hit: { hidden: marker.hidden, left: parseFloat(marker.style.left), top: parseFloat(marker.style.top) },
    scale,
  };
})()`;

describe('the viewer snapshot panel', () => {
  let rig: TestRig;
  let tab: Tab;
  let browser: Browser;
  let viewer: Page;
  let clickPoint: { x: number; y: number };
  let actionId: string;
  /** Every URL the viewer page and its frames asked for. */
  const requested: string[] = [];
  const errors: string[] = [];

  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
    rig.server.route('/vsnap/site.css', STYLE_SHEET, 'text/css');
    const pageUrl = rig.server.route('/vsnap/page.html', PAGE);
    tab = await rig.driver.newTab();
    await tab.send('Emulation.setDeviceMetricsOverride', { width: 800, height: 600, deviceScaleFactor: 1, mobile: false });
    await tab.ready(rig.stream);
    await tab.navigate(pageUrl);
    await rig.stream.waitForEvent('page_navigation_settled', (e) => e.data!.target_id === tab.targetId && e.data!.url === pageUrl);

    const snapshots = await SseClient.open(`${rig.streamUrl}?replay=all&category=snapshot`, TOKEN);
    try {
      clickPoint = await centerOf(tab, '#change');
      const batch = await postBatch(rig, [{ type: 'click_mouse', click_mouse: clickPoint }]);
      expect(batch.status).toBe(204);
      const click = await rig.stream.waitForEvent('computer_action', (e) => e.data!.action === 'click_mouse');
      actionId = click.data!.action_id;
      await snapshots.waitForEvent('page_snapshot', (e) => e.data!.actions?.some((a) => a.action_id === actionId && a.phase === 'after') === true);
    } finally {
      snapshots.close();
    }

    const minted = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/viewer/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(minted.status).toBe(201);
    const { url } = (await minted.json()) as { url: string };
    const binary = await locateChromium();
    const headless = binary.headlessFlag === '--headless';
    browser = await chromium.launch({
      executablePath: binary.path,
      env: { ...process.env, ...binary.env },
      args: [...CHROMIUM_FLAGS, ...(headless ? [] : [binary.headlessFlag])],
      headless,
      timeout: 30_000,
    });
    viewer = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    viewer.on('request', (request) => requested.push(request.url()));
    viewer.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    viewer.on('pageerror', (err) => errors.push(err.message));
    await viewer.goto(url);
    await viewer.waitForFunction(() => document.querySelector<HTMLElement>('.conn-status')?.dataset.state === 'live');
    await viewer.waitForFunction(() => document.querySelector<HTMLElement>('.timeline-canvas')?.dataset.lanes?.split(',').includes('Actions') === true);
    // '[' steps back from the newest action until the batch's click is selected.
    await viewer.waitForFunction((id) => {
      const canvas = document.querySelector<HTMLElement>('.timeline-canvas')!;
      if (canvas.dataset.selectedAction !== id) canvas.dispatchEvent(new KeyboardEvent('keydown', { key: '[' }));
      return canvas.dataset.selectedAction === id;
    }, actionId);
    await viewer.waitForFunction(() => document.querySelector('.snapshot-stage iframe') !== null);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await rig?.close();
  });

  const state = () => viewer.evaluate<PanelState>(PANEL_STATE);

  it('shows the page after the selected click, with the new heading', async () => {
    const after = await state();
    expect(after.caption).toMatch(/^After the action/);
    expect(after.heading).toBe('After the click');
  });

  it('shows the page before it, with the old heading, when Before is chosen', async () => {
    await viewer.getByRole('button', { name: 'Before' }).click();
    await viewer.waitForFunction(() => document.querySelector('.snapshot-panel .caption')!.textContent.startsWith('Before the action'));
    expect((await state()).heading).toBe('Before the click');
    await viewer.getByRole('button', { name: 'After' }).click();
    await viewer.waitForFunction(() => document.querySelector('.snapshot-panel .caption')!.textContent.startsWith('After the action'));
  });

  it("applies the page's external style sheet", async () => {
    expect((await state()).color).toBe('rgb(12, 34, 56)');
  });

  it('marks the point the click hit, scaled with the page', async () => {
    const { hit, scale } = await state();
    expect(hit.hidden).toBe(false);
    expect(scale).toBeGreaterThan(0);
    expect(hit.left).toBeCloseTo(clickPoint.x * scale, 1);
    expect(hit.top).toBeCloseTo(clickPoint.y * scale, 1);
  });

  it('shows it in a frame sandboxed without scripts, holding no script, handler or source', async () => {
    const shown = await state();
    expect(shown.sandbox).toBe('allow-same-origin');
    expect(shown.scripts).toBe(0);
    expect(shown.sources).toBe(0);
    expect(shown.ranInSnapshot).toBe(false);
  });

  it("asks nothing of the page's origin: every request goes to the agent", () => {
    const agentOrigin = new URL(rig.agent.url).origin;
    expect(requested.length).toBeGreaterThan(0);
    expect(requested.filter((url) => new URL(url).origin !== agentOrigin)).toEqual([]);
    expect(requested.filter((url) => url.includes('/vsnap/'))).toEqual([]);
    expect(errors).toEqual([]);
  });
});
