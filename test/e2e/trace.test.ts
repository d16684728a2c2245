// GET /browsers/{id}/trace on real Chromium (docs/export.md "Playwright trace"): a page is driven
// through the computer batch (a click, a form typed into and sent, a link followed), the page
// itself fetches a URL that fails, logs a console error and throws; the exported trace is then
// read by Playwright's own command line (`playwright trace open`, `actions`, `requests`,
// `console`, `errors`), which must list exactly what the session did, and opened in Playwright's
// own viewer (`show-trace`), whose action list, network tab and console tab are read off its DOM.
//
// Then a CDP client (Playwright's connectOverCDP through the agent's CDP endpoint) drives the same
// tab: its commands (cdp_command) are actions, as the batch (api_call) and its actions
// (computer_action) are, with what each caused (caused_by) nested under it.

import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { centerOf, postBatch, waitUntil } from './support/computer-api.ts';
import { consoleText, startRig, TOKEN, type Tab, type TestRig } from './support/harness.ts';
import { openTraceViewer, readTraceListings } from './support/playwright-trace.ts';

const DOCS_SCREENSHOT = fileURLToPath(new URL('../../docs/trace-viewer.png', import.meta.url));

const FORM_PAGE = `<!doctype html><html><head><title>trace form</title></head><body>
<form id="form"><input id="name" autocomplete="off"><button id="send" type="submit">Send</button></form>
<p id="sent">(not sent)</p>
<a id="next" href="/trace/next.html">next page</a>
<script>
document.getElementById('form').addEventListener('submit', async (e) => {
  e.preventDefault();
  document.getElementById('sent').textContent = 'sent: ' + document.getElementById('name').value;
  try { await fetch('http://127.0.0.1:9/trace-unreachable'); } catch (err) { console.error('trace-fetch-failed', String(err)); }
  setTimeout(function throwsLater() { null.traceBoom(); }, 0);
});
window.fixtureReady = true;
</script></body></html>`;
const NEXT_PAGE = `<!doctype html><html><head><title>trace next</title></head><body><p>next</p><script>console.log('trace-next-loaded')</script></body></html>`;

describe('GET /browsers/{id}/trace', () => {
  let rig: TestRig;
  let tab: Tab;
  let formUrl: string;
  let nextUrl: string;
  let response: Response;
  const dir = mkdtempSync(join(tmpdir(), 'bta-trace-'));
  const zip = join(dir, 'session.trace.zip');
  /** Output of each `playwright trace` subcommand. */
  const cli: Record<string, string> = {};

  const traceUrl = (query = '') => `${rig.agent.url}/browsers/${rig.agent.sessionId}/trace${query}`;
  const get = (url: string) => fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });

  beforeAll(async () => {
    rig = await startRig({ screenshots: true });
    formUrl = rig.server.route('/trace/form.html', FORM_PAGE);
    nextUrl = rig.server.route('/trace/next.html', NEXT_PAGE);
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(formUrl);
    await waitUntil<boolean>(tab, 'window.fixtureReady === true', (v) => v);
    await rig.stream.waitForEvent('page_load', (e) => e.data!.target_id === tab.targetId && e.data!.url === formUrl);
    // The monitor's picture of the loaded page (taken after a quiet second): the filmstrip's frame.
    await rig.stream.waitForEvent('monitor_screenshot', () => true, 15_000);

    const field = await centerOf(tab, '#name');
    const link = await centerOf(tab, '#next');
    const sent = await postBatch(rig, [
      { type: 'click_mouse', click_mouse: field },
      { type: 'type_text', type_text: { text: 'Ada' } },
      { type: 'press_key', press_key: { keys: ['Return'] } },
    ]);
    expect(sent.status).toBe(204);
    await rig.stream.waitForEvent('console_error', (e) => consoleText(e) === 'trace-fetch-failed');
    await rig.stream.waitForEvent('console_error', (e) => e.data!.text.includes('traceBoom'));
    await rig.stream.waitForEvent('network_loading_failed', (e) => e.data!.url?.includes('trace-unreachable') === true);
    const followed = await postBatch(rig, [{ type: 'click_mouse', click_mouse: link }]);
    expect(followed.status).toBe(204);
    await rig.stream.waitForEvent('page_load', (e) => e.data!.target_id === tab.targetId && e.data!.url === nextUrl);
    // A CDP client through the agent's CDP endpoint drives the same tab: back to the form, a
    // text filled in, the button clicked (cdp_command actions, their effects caused_by them).
    const client = await chromium.connectOverCDP(rig.agent.url, { headers: { Authorization: `Bearer ${TOKEN}` } });
    try {
      const page = client
        .contexts()
        .flatMap((c) => c.pages())
        .find((p) => p.url() === nextUrl)!;
      expect(page).toBeDefined();
      await page.goto(formUrl);
      await page.fill('#name', 'Bo');
      await page.click('#send');
      await page.waitForFunction(() => document.getElementById('sent')!.textContent === 'sent: Bo');
    } finally {
      await client.close();
    }
    await rig.stream.waitForEvent('cdp_command', (e) => e.data!.method === 'Input.dispatchMouseEvent');
    await rig.stream.waitForEvent('cdp_disconnect');
    // A document's response event (its loading finished) may come after its load event.
    for (const url of [formUrl, nextUrl]) await rig.stream.waitForEvent('network_response', (e) => e.data!.url === url);

    response = await get(traceUrl(`?target_id=${tab.targetId}`));
    writeFileSync(zip, Buffer.from(await response.arrayBuffer()));
    Object.assign(cli, await readTraceListings(dir, zip));
  }, 90_000);

  afterAll(async () => {
    await rig?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 200 with a zip', () => {
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/zip');
    expect(response.headers.get('content-disposition')).toContain('.trace.zip');
  });

  it("opens in Playwright's command line as a chromium trace with the session's pages and requests", () => {
    expect(cli.open).toMatch(/Browser:\s+chromium/);
    expect(cli.open).toMatch(/Pages:\s+1\b/);
    expect(cli.open).toMatch(/Network:\s+[1-9]\d* requests/);
  });

  it("lists the actions: the batches with their clicks and keys, the CDP client's commands, each with what it caused", () => {
    // Indented: nested under the action that caused it (caused_by). A client library's own
    // emulation of the page it attaches to is left out here.
    const titles = actionTitles(cli.actions!)
      .filter((t) => !t.startsWith('Emulation.'))
      .map((t) => t.replace(/ at [\d.]+,[\d.]+$/, ' at x,y'));
    expect(titles).toEqual([
      `navigate to ${formUrl}`,
      'computerBatch → 204',
      '  click_mouse at x,y',
      '    click #name',
      '  type_text 3 chars',
      '    press A',
      '    press d',
      '    press a',
      '  press_key Return',
      '    press Enter',
      // Enter in a form clicks its submit button: the page saw that click too.
      '    click #send',
      'computerBatch → 204',
      '  click_mouse at x,y',
      '    click #next',
      `    navigate to ${nextUrl}`,
      'Page.navigate',
      `  navigate to ${formUrl}`,
      'Input.insertText 2 chars',
      'Input.dispatchMouseEvent mousePressed at x,y',
      '  click #send',
    ]);
  });

  it('lists the requests: the two documents, and the failed fetch as an error', () => {
    const lines = cli.requests!.split('\n').filter((l) => /^\s+\d+\./.test(l));
    expect(
      lines.some((l) => /GET\s+200\s+form\.html/.test(l)),
      cli.requests,
    ).toBe(true);
    expect(
      lines.some((l) => /GET\s+200\s+next\.html/.test(l)),
      cli.requests,
    ).toBe(true);
    expect(
      lines.some((l) => /GET\s+ERR\s+trace-unreachable/.test(l)),
      cli.requests,
    ).toBe(true);
  });

  it("lists the console: the page's messages and its uncaught error", () => {
    expect(cli.console).toMatch(/error\s+trace-fetch-failed/);
    expect(cli.console).toMatch(/log\s+trace-next-loaded/);
    expect(cli.console).toMatch(/error\s+.*traceBoom/);
  });

  it('lists the errors: the uncaught error, with its stack', () => {
    expect(cli.errors).toMatch(/traceBoom/);
    expect(cli.errors).toMatch(/at form\.html:\d+:\d+/);
    expect(cli.errors).not.toMatch(/trace-fetch-failed/);
  });

  it('answers 400 naming the field for a bad query', async () => {
    const res = await get(traceUrl('?since=yesterday'));
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'invalid_input', details: [{ field: 'since' }] });
  });

  describe("in Playwright's viewer", () => {
    let viewer: ChildProcess;
    let browser: Browser;
    let texts: { actions: string; network: string; console: string };

    beforeAll(async () => {
      let page: Page;
      ({ process: viewer, browser, page } = await openTraceViewer(zip, dir));
      // The viewer's own class names: the action tree, and one `tab-content tab-<name>` per tab.
      const actionList = page.locator('.actions-tree-view');
      await actionList.locator('.action-title-method', { hasText: 'Input.dispatchMouseEvent' }).waitFor({ timeout: 20_000 });
      // Nested actions show once their parent is expanded (the arrow key on the chosen action).
      await actionList.locator('.action-title-method', { hasText: 'computerBatch' }).first().click();
      await page.keyboard.press('ArrowRight');
      await actionList.locator('.action-title-method', { hasText: 'click_mouse' }).first().click();
      await page.keyboard.press('ArrowRight');
      await actionList.locator('.action-title-method', { hasText: 'click #name' }).click();
      const actions = await actionList.innerText();
      await page.locator('.tabbed-pane-tab-label', { hasText: 'Network' }).click();
      const networkTab = page.locator('.tab-content.tab-network');
      await networkTab.getByText('trace-unreachable').first().waitFor();
      const network = await networkTab.innerText();
      // The picture in docs/export.md, refreshed on request only (each run has a new session id).
      await page.screenshot({ path: process.env.UPDATE_DOCS_SCREENSHOTS === '1' ? DOCS_SCREENSHOT : join(dir, 'viewer.png') });
      await page.locator('.tabbed-pane-tab-label', { hasText: 'Console' }).click();
      const consoleTab = page.locator('.tab-content.tab-console');
      await consoleTab.getByText('trace-fetch-failed').first().waitFor();
      const consoleText = await consoleTab.innerText();
      texts = { actions, network, console: consoleText };
    }, 90_000);

    afterAll(async () => {
      await browser?.close();
      viewer?.kill();
    });

    it('shows the action list', () => {
      for (const title of ['computerBatch → 204', 'click_mouse', 'click #name', 'Page.navigate', 'Input.insertText', 'Input.dispatchMouseEvent'])
        expect(texts.actions).toContain(title);
    });

    it('shows the network tab with the documents and the failed fetch', () => {
      expect(texts.network).toContain('form.html');
      expect(texts.network).toContain('next.html');
      expect(texts.network).toContain('trace-unreachable');
    });

    it('shows the console tab with the messages and the uncaught error', () => {
      expect(texts.console).toContain('trace-fetch-failed');
      expect(texts.console).toContain('traceBoom');
    });
  });
});

/** The action titles of `playwright trace actions`, in order, indented as nested (the columns: #, time, title, duration). */
function actionTitles(text: string): string[] {
  return text
    .split('\n')
    .map((l) => /^\s+\d+\.\s+\d+:\d+\.\d+ {2}(.*?)\s{2,}\S+\s*✗?$/.exec(l)?.[1]?.trimEnd())
    .filter((t): t is string => t !== undefined);
}
