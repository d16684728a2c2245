// Dialogs, file choosers and downloads (docs/events.md "Dialogs and file choosers", "Downloads") on
// real Chromium. Every dialog is answered by the test's own CDP connection (a CDP client beside
// the agent); the agent only watches.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { startRig, type Tab, type TestRig } from './support/harness.ts';

describe('dialogs and file choosers', () => {
  let rig: TestRig;
  let tab: Tab;
  let pageUrl: string;

  beforeAll(async () => {
    rig = await startRig();
    pageUrl = rig.server.route(
      '/dialogs.html',
      '<!doctype html><title>D</title><input type=file id=f style="position:absolute;left:10px;top:10px;width:200px;height:40px">' +
        '<button id=b style="position:absolute;left:10px;top:100px;width:100px;height:40px">b</button>',
    );
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.send('Page.enable');
    await tab.navigate(pageUrl);
    await rig.stream.waitForEvent('page_load', (e) => e.data!.target_id === tab.targetId && e.data!.url === pageUrl);
  });
  afterAll(() => rig?.close());

  /** Opens a dialog with `expression`, waits for the agent's event, answers it from the test's CDP client. */
  async function answer(
    expression: string,
    accept: boolean,
    promptText?: string,
  ): Promise<{ opened: TelemetryEvent<'page_dialog_opened'>; closed: TelemetryEvent<'page_dialog_closed'>; result: unknown }> {
    const before = rig.stream.events.length;
    const evaluation = tab.evaluate(expression);
    const opened = await rig.stream.waitForEvent('page_dialog_opened', (e) => rig.stream.events.indexOf(e) >= before);
    await tab.send('Page.handleJavaScriptDialog', { accept, ...(promptText !== undefined && { promptText }) });
    const closed = await rig.stream.waitForEvent('page_dialog_closed', (e) => rig.stream.events.indexOf(e) >= before);
    const result = ((await evaluation) as { result: { value?: unknown } }).result.value;
    return { opened, closed, result };
  }

  it('reports an alert opening and its closing by a CDP client', async () => {
    const { opened, closed } = await answer('alert("hello")', true);
    expect(opened.data).toMatchObject({ target_id: tab.targetId, url: pageUrl, dialog_type: 'alert', message: 'hello', has_browser_handler: false });
    expect(opened.data!.default_prompt).toBeUndefined();
    expect(opened.source).toMatchObject({ kind: 'cdp', event: 'Page.javascriptDialogOpening' });
    expect(closed.data).toMatchObject({ target_id: tab.targetId, dialog_type: 'alert', accepted: true, closed_by: 'cdp_client' });
    expect(closed.data!.open_ms).toBeGreaterThanOrEqual(0);
  });

  it('reports a confirm dismissed', async () => {
    const { opened, closed, result } = await answer('confirm("sure?")', false);
    expect(result).toBe(false);
    expect(opened.data).toMatchObject({ dialog_type: 'confirm', message: 'sure?' });
    expect(closed.data).toMatchObject({ dialog_type: 'confirm', accepted: false, closed_by: 'cdp_client' });
  });

  it('reports a prompt with its default and the text it was answered with', async () => {
    const { opened, closed, result } = await answer('prompt("name?", "anon")', true, 'Ada');
    expect(result).toBe('Ada');
    expect(opened.data).toMatchObject({ dialog_type: 'prompt', message: 'name?', default_prompt: 'anon' });
    expect(closed.data).toMatchObject({ dialog_type: 'prompt', accepted: true, user_input: 'Ada' });
  });

  it('reports a beforeunload dialog on leaving a page the user touched, and the navigation it let through', async () => {
    await tab.evaluate('addEventListener("beforeunload", (e) => { e.preventDefault(); e.returnValue = "stay"; })');
    // beforeunload dialogs need a user gesture on the page first.
    for (const type of ['mousePressed', 'mouseReleased']) await tab.send('Input.dispatchMouseEvent', { type, x: 50, y: 120, button: 'left', clickCount: 1 });
    const before = rig.stream.events.length;
    const otherUrl = rig.server.route('/after-unload.html', '<!doctype html><p>after');
    const navigation = tab.send('Page.navigate', { url: otherUrl });
    const opened = await rig.stream.waitForEvent('page_dialog_opened', (e) => rig.stream.events.indexOf(e) >= before);
    expect(opened.data).toMatchObject({ dialog_type: 'beforeunload', target_id: tab.targetId });
    await tab.send('Page.handleJavaScriptDialog', { accept: true });
    const closed = await rig.stream.waitForEvent('page_dialog_closed', (e) => rig.stream.events.indexOf(e) >= before);
    expect(closed.data).toMatchObject({ dialog_type: 'beforeunload', accepted: true, closed_by: 'cdp_client' });
    await navigation;
    await rig.stream.waitForEvent('page_load', (e) => e.data!.url === otherUrl);
  });

  it('reports a file chooser without intercepting it', async () => {
    await tab.navigate(pageUrl);
    await rig.stream.waitForEvent('page_load', (e) => e.data!.url === pageUrl && (e.data!.nav_seq ?? 0) >= 3);
    const before = rig.stream.events.length;
    // The page learns of the outcome as it would without the agent: a chooser that is not intercepted.
    await tab.evaluate(
      'window.__outcome = new Promise((r) => { f.addEventListener("cancel", () => r("cancel")); f.addEventListener("change", () => r("change")); }); 0',
    );
    for (const type of ['mousePressed', 'mouseReleased']) await tab.send('Input.dispatchMouseEvent', { type, x: 60, y: 30, button: 'left', clickCount: 1 });
    const opened = await rig.stream.waitForEvent('page_file_chooser_opened', (e) => rig.stream.events.indexOf(e) >= before);
    expect(opened.data).toMatchObject({ target_id: tab.targetId, url: pageUrl, mode: 'selectSingle', chooser_frame_id: tab.targetId });
    expect(opened.data!.node_id).toBeGreaterThan(0);
  });
});

describe('downloads', () => {
  let rig: TestRig;
  let tab: Tab;
  let downloadDir: string;

  beforeAll(async () => {
    rig = await startRig();
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    // As an automation client does (Playwright): the client, not the agent, lets downloads happen.
    downloadDir = mkdtempSync(join(tmpdir(), 'bta-downloads-'));
    await rig.driver.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloadDir, eventsEnabled: true });
  });
  afterAll(async () => {
    await rig?.close();
    rmSync(downloadDir, { recursive: true, force: true });
  });

  it('reports a download from its start to its completion, with the file it wrote', async () => {
    const body = Buffer.alloc(200_000, 7);
    const url = rig.server.handle('/report.bin', (_req, res) => {
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-disposition': 'attachment; filename="report.bin"',
        'content-length': String(body.length),
      });
      res.end(body);
    });
    const page = rig.server.route('/dl.html', `<!doctype html><a id=a href="${url}">get</a>`);
    await tab.navigate(page);
    await rig.stream.waitForEvent('page_load', (e) => e.data!.url === page);
    await tab.evaluate('document.getElementById("a").click()');
    const started = await rig.stream.waitForEvent('network_download_started', (e) => e.data!.url === url);
    expect(started.data).toMatchObject({ target_id: tab.targetId, suggested_filename: 'report.bin', mime_type: 'application/octet-stream' });
    const finished = await rig.stream.waitForEvent('network_download_finished', (e) => e.data!.guid === started.data!.guid);
    expect(finished.data).toMatchObject({ state: 'completed', received_bytes: body.length, total_bytes: body.length, target_id: tab.targetId });
    expect(finished.data!.file_path).toBe(join(downloadDir, 'report.bin'));
  });

  it('reports a download canceled by a CDP client, with progress at most once a second', async () => {
    const url = rig.server.handle('/slow.bin', (req, res) => {
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-disposition': 'attachment; filename="slow.bin"',
        'content-length': String(10_000_000),
      });
      const timer = setInterval(() => res.write(Buffer.alloc(10_000, 1)), 50);
      req.on('close', () => clearInterval(timer));
      res.on('close', () => clearInterval(timer));
    });
    await tab.evaluate(`(() => { const a = document.createElement('a'); a.href = ${JSON.stringify(url)}; document.body.append(a); a.click(); })()`);
    const started = await rig.stream.waitForEvent('network_download_started', (e) => e.data!.url === url);
    await new Promise((resolve) => setTimeout(resolve, 3500));
    await rig.driver.send('Browser.cancelDownload', { guid: started.data!.guid });
    const finished = await rig.stream.waitForEvent('network_download_finished', (e) => e.data!.guid === started.data!.guid);
    expect(finished.data).toMatchObject({ state: 'canceled', suggested_filename: 'slow.bin' });
    expect(finished.data!.file_path).toBeUndefined();
    const progress = rig.stream.ofType('network_download_progress').filter((e) => e.data!.guid === started.data!.guid);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.length).toBeLessThanOrEqual(5);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.ts - progress[i - 1]!.ts).toBeGreaterThanOrEqual(990_000);
    expect(progress.at(-1)!.data!.received_bytes).toBeGreaterThan(progress[0]!.data!.received_bytes);
  });
});
