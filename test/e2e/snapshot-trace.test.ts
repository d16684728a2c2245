// DOM snapshots in the Playwright trace (docs/export.md "Snapshots in the trace") on real
// Chromium: Playwright, through the agent's CDP endpoint, clicks a button that changes a heading,
// fills a form (a password too) and follows a link; a computer batch clicks on the next page. The
// exported trace is opened in Playwright's own viewer (`show-trace`), whose snapshot iframes are
// read: the page before and after the click, with its external style sheet applied, its open
// shadow root and its cross-origin iframe; and no byte of the zip holds the typed password.

import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type FrameLocator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { centerOf, postBatch } from './support/computer-api.ts';
import { SseClient, startRig, TOKEN, type Tab, type TestRig } from './support/harness.ts';
import { openTraceViewer, unzipEntries } from './support/playwright-trace.ts';

const SECRET = 'hunter2-zebra-secret';

const STYLE_SHEET = `h1 { color: rgb(12, 34, 56); } .card { border: 3px solid rgb(200, 100, 50); }`;

const FORM_PAGE = (frameUrl: string) => `<!doctype html><html><head><title>snapshot form</title>
<link rel="stylesheet" href="/snap/site.css"></head><body>
<h1 id="heading">Before the click</h1>
<button id="change" onclick="document.getElementById('heading').textContent = 'After the click'">Change</button>
<form id="form" onsubmit="event.preventDefault()"><input id="user" autocomplete="off"><input id="secret" type="password"></form>
<div id="host" class="card"></div>
<iframe id="frame" src="${frameUrl}" width="400" height="120"></iframe>
<p><a id="next" href="/snap/next.html">next page</a></p>
<script>
document.getElementById('host').attachShadow({ mode: 'open' }).innerHTML = '<span id="inside">inside the shadow root</span>';
</script></body></html>`;

const FRAME_PAGE = `<!doctype html><html><body><p id="framed">in the cross-origin frame</p></body></html>`;

const NEXT_PAGE = `<!doctype html><html><head><title>snapshot next</title></head><body>
<button id="toggle" style="width:200px;height:60px" onclick="this.textContent = 'pressed by the batch'">not pressed</button>
<script>window.fixtureReady = true</script></body></html>`;

describe('DOM snapshots in the trace', () => {
  let rig: TestRig;
  let snapshots: SseClient;
  let tab: Tab;
  let formUrl: string;
  let nextUrl: string;
  const dir = mkdtempSync(join(tmpdir(), 'bta-snapshot-trace-'));
  const zip = join(dir, 'session.trace.zip');
  let entries: Map<string, Buffer>;

  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
    snapshots = await SseClient.open(`${rig.streamUrl}?replay=all&category=snapshot`, TOKEN);
    rig.server.route('/snap/site.css', STYLE_SHEET, 'text/css');
    rig.server.route('/snap/frame.html', FRAME_PAGE);
    formUrl = rig.server.route('/snap/form.html', FORM_PAGE(rig.server.crossSiteUrl('/snap/frame.html')));
    nextUrl = rig.server.route('/snap/next.html', NEXT_PAGE);
    const startUrl = rig.server.route('/snap/start.html', '<!doctype html><title>start</title>');
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(startUrl);
    await rig.stream.waitForEvent('page_load', (e) => e.data!.target_id === tab.targetId && e.data!.url === startUrl);

    const client = await chromium.connectOverCDP(rig.agent.url, { headers: { Authorization: `Bearer ${TOKEN}` } });
    try {
      const page = client
        .contexts()
        .flatMap((c) => c.pages())
        .find((p) => p.url() === startUrl)!;
      await page.goto(formUrl);
      await page.frameLocator('#frame').locator('#framed').waitFor();
      await page.click('#change');
      await page.fill('#user', 'ada');
      await page.fill('#secret', SECRET);
      await page.click('#next');
      await page.waitForURL(nextUrl);
      await page.waitForFunction(() => (window as unknown as { fixtureReady?: boolean }).fixtureReady === true);
    } finally {
      await client.close();
    }
    const batch = await postBatch(rig, [{ type: 'click_mouse', click_mouse: await centerOf(tab, '#toggle') }]);
    expect(batch.status).toBe(204);
    // The batch's click: its after-snapshot ends the session's snapshots.
    const click = await rig.stream.waitForEvent('computer_action', (e) => e.data!.action === 'click_mouse');
    await snapshots.waitForEvent('page_snapshot', (e) => e.data!.actions?.some((a) => a.action_id === click.data!.action_id && a.phase === 'after') === true);

    const response = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/trace?target_id=${tab.targetId}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(response.status).toBe(200);
    const bytes = Buffer.from(await response.arrayBuffer());
    writeFileSync(zip, bytes);
    entries = unzipEntries(bytes);
  }, 120_000);

  afterAll(async () => {
    snapshots?.close();
    await rig?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores a snapshot before and after each click, the fills and the navigation, none on the default stream', () => {
    const named = snapshots.ofType('page_snapshot').flatMap((e) => (e.data!.actions ?? []).map((a) => a.phase));
    expect(named.filter((p) => p === 'before').length).toBeGreaterThanOrEqual(5);
    expect(named.filter((p) => p === 'after').length).toBeGreaterThanOrEqual(5);
    expect(rig.stream.ofType('page_snapshot')).toEqual([]);
  });

  it('writes no typed character of the password anywhere in the zip', () => {
    for (const [name, data] of entries) expect(data.includes(SECRET), name).toBe(false);
    // Typed into a masked field: the snapshots after the fill show it masked, not empty.
    const masked = snapshots.ofType('page_snapshot').some((e) => JSON.stringify(e.data).includes('"__playwright_value_":"••••••••"'));
    expect(masked).toBe(true);
  });

  it('names each frame snapshot before@ or after@ an action of the trace', () => {
    const lines = entries
      .get('trace.trace')!
      .toString('utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, any>);
    const names = new Set(lines.filter((l) => l.type === 'before' || l.type === 'after').flatMap((l) => [l.beforeSnapshot, l.afterSnapshot]));
    const frames = lines.filter((l) => l.type === 'frame-snapshot').map((l) => l.snapshot as { snapshotName: string; callId: string });
    expect(frames.length).toBeGreaterThan(0);
    for (const frame of frames) {
      expect(frame.snapshotName).toMatch(/^(before|after)@call@\d+$/);
      expect(names.has(frame.snapshotName)).toBe(true);
    }
  });

  describe("in Playwright's viewer", () => {
    let viewer: ChildProcess;
    let browser: Browser;
    let page: Page;

    beforeAll(async () => {
      ({ process: viewer, browser, page } = await openTraceViewer(zip, dir));
      await page.locator('.actions-tree-view .action-title-method', { hasText: 'Input.dispatchMouseEvent' }).first().waitFor({ timeout: 20_000 });
    }, 60_000);

    afterAll(async () => {
      await browser?.close();
      viewer?.kill();
    });

    /** The viewer's snapshot of the `index`-th action titled `title`, in `phase`. */
    async function snapshotOf(title: string, index: number, phase: 'Before' | 'After'): Promise<FrameLocator> {
      await page.locator('.actions-tree-view .action-title-method', { hasText: title }).nth(index).click();
      await page.getByRole('tab', { name: phase, exact: true }).click();
      const frame = page.frameLocator('iframe.snapshot-visible[name=snapshot]');
      await frame.locator('body').waitFor();
      return frame;
    }

    it("shows the page before Playwright's click with the old heading, and after it with the new one", async () => {
      const before = await snapshotOf('Input.dispatchMouseEvent', 0, 'Before');
      await expect.poll(() => before.locator('#heading').textContent()).toBe('Before the click');
      const after = await snapshotOf('Input.dispatchMouseEvent', 0, 'After');
      await expect.poll(() => after.locator('#heading').textContent()).toBe('After the click');
    });

    it('applies the external style sheet', async () => {
      const frame = await snapshotOf('Input.dispatchMouseEvent', 0, 'After');
      await expect.poll(() => frame.locator('#heading').evaluate((el) => getComputedStyle(el).color)).toBe('rgb(12, 34, 56)');
      await expect.poll(() => frame.locator('#host').evaluate((el) => getComputedStyle(el).borderTopColor)).toBe('rgb(200, 100, 50)');
    });

    it('renders the open shadow root and the cross-origin iframe', async () => {
      const frame = await snapshotOf('Input.dispatchMouseEvent', 0, 'Before');
      await expect.poll(() => frame.locator('#host').evaluate((el) => el.shadowRoot?.textContent ?? '')).toBe('inside the shadow root');
      await expect.poll(() => frame.frameLocator('#frame').locator('#framed').textContent()).toBe('in the cross-origin frame');
    });

    it('shows the filled password field masked', async () => {
      const frame = await snapshotOf('Input.dispatchMouseEvent', 1, 'Before');
      await expect.poll(() => frame.locator('#user').inputValue()).toBe('ada');
      await expect.poll(() => frame.locator('#secret').inputValue()).toBe('••••••••');
    });

    it("shows the page before and after the batch's click", async () => {
      // Nested under its batch: shown once the batch is expanded (the arrow key on it).
      await page.locator('.actions-tree-view .action-title-method', { hasText: 'computerBatch' }).first().click();
      await page.keyboard.press('ArrowRight');
      const before = await snapshotOf('click_mouse', 0, 'Before');
      await expect.poll(() => before.locator('#toggle').textContent()).toBe('not pressed');
      const after = await snapshotOf('click_mouse', 0, 'After');
      await expect.poll(() => after.locator('#toggle').textContent()).toBe('pressed by the batch');
    });
  });
});
