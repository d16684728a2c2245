import CDP from 'chrome-remote-interface';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsoleLogData, TelemetryEvent } from '../../injected/schema.ts';
import { startAgent, type Agent } from '../../src/agent.ts';
import { ChromiumProcess } from '../../src/browser/chromium-launcher.ts';
import { consoleText, Driver, FixtureServer, SseClient, TOKEN, type Tab } from './support/harness.ts';

/** Attached mode on a browser that was busy before the agent started. */
describe('attaching to a running browser', () => {
  let chromium: ChromiumProcess;
  let server: FixtureServer;
  let driver: Driver;
  let agent: Agent;
  let stream: SseClient;
  let busyTab: Tab;
  let pausedPopupOpener: Tab;
  let openerCall: Promise<unknown>;
  let existingTabIds: string[];
  const httpEndpoint = () => chromium.browserWsUrl.replace(/^ws:\/\/([^/]+)\/.*$/, 'http://$1');

  beforeAll(async () => {
    server = await new FixtureServer().start();
    server.route('/busy.html', `<!doctype html><script>console.log('before-agent'); setTimeout(() => { throw new Error('early') })</script>`);
    server.route('/opener.html', '<!doctype html><p>opener</p>');
    server.route('/popup.html', `<!doctype html><script>console.log('popup-left-paused')</script>`);
    chromium = await ChromiumProcess.launch();
    driver = await Driver.connect(chromium.browserWsUrl);
    busyTab = await driver.newTab();
    await busyTab.navigate(server.url('/busy.html'));
    await waitUntil(async () => (await busyTab.evaluate('document.readyState')).result.value === 'complete');
    pausedPopupOpener = await driver.newTab();
    await pausedPopupOpener.navigate(server.url('/opener.html'));
    await waitUntil(async () => (await pausedPopupOpener.evaluate('document.readyState')).result.value === 'complete');

    // An earlier client that paused new targets and went away leaves a popup waiting for the
    // debugger (its opener's window.open() call hangs until someone resumes it).
    const earlier = await CDP({ target: chromium.browserWsUrl, local: true });
    await earlier.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true });
    openerCall = pausedPopupOpener.send('Runtime.evaluate', { expression: `window.open('/popup.html'); 'opened'`, userGesture: true, returnByValue: true });
    await waitUntil(async () => {
      const { targetInfos } = await driver.send('Target.getTargets');
      return targetInfos.filter((t: { type: string }) => t.type === 'page').length === 4;
    });
    await earlier.close();

    const { targetInfos } = await driver.send('Target.getTargets');
    existingTabIds = targetInfos.filter((t: { type: string }) => t.type === 'page').map((t: { targetId: string }) => t.targetId);
    agent = await startAgent({ cdpUrl: httpEndpoint(), port: 0, token: TOKEN, logLevel: 'silent' });
    stream = await SseClient.open(`${agent.url}/browsers/${agent.sessionId}/telemetry?replay=all`, TOKEN);
    await stream.waitFor((s) => s.ofType('page_tab_opened').length >= existingTabIds.length, 'tabs announced');
  });

  afterAll(async () => {
    stream?.close();
    await agent?.close();
    await driver?.close().catch(() => undefined);
    await chromium?.close();
    await server?.close();
  });

  const tabOpened = (targetId: string) => stream.ofType('page_tab_opened').filter((e) => e.data!.target_id === targetId);

  it('announces every tab that existed before the agent started, once each', () => {
    for (const id of existingTabIds) expect(tabOpened(id)).toHaveLength(1);
    expect(stream.ofType('page_tab_opened')).toHaveLength(existingTabIds.length);
  });

  it('reports page_tab_opened with exactly its fields', () => {
    const data = tabOpened(busyTab.targetId)[0]!.data!;
    expect(data).toEqual({ target_id: busyTab.targetId, target_type: 'page', url: server.url('/busy.html'), title: expect.any(String) });
  });

  it('resumes a popup that an earlier connection left paused', async () => {
    const result = await openerCall;
    expect((result as { result: { value: string } }).result.value).toBe('opened');
    const event = await stream.waitForEvent('console_log', (e) => consoleText(e) === 'popup-left-paused');
    expect((event.data as ConsoleLogData).target_type).toBe('page');
  });

  it('reports the console history of an existing tab exactly once', async () => {
    await stream.waitForEvent('console_log', (e) => consoleText(e) === 'before-agent');
    await stream.waitForEvent('console_error', (e) => consoleText(e) === 'Uncaught Error: early');
    await busyTab.ready(stream);
    expect(stream.events.filter((e) => consoleText(e) === 'before-agent')).toHaveLength(1);
    expect(stream.events.filter((e) => consoleText(e) === 'Uncaught Error: early')).toHaveLength(1);
  });

  it("instruments an existing tab's current document: later lines carry its url and loader", async () => {
    await busyTab.evaluate(`console.log('after-attach')`);
    const data = (await stream.waitForEvent('console_log', (e) => consoleText(e) === 'after-attach')).data as ConsoleLogData;
    expect(data).toMatchObject({ url: server.url('/busy.html'), frame_id: busyTab.targetId, nav_seq: 0, loader_id: expect.any(String) });
  });

  it('announces a tab opened later exactly once, and a popup with its opener', async () => {
    const tab = await driver.newTab();
    await tab.ready(stream);
    await pausedPopupOpener.send('Runtime.evaluate', { expression: `window.open('/opener.html')`, userGesture: true });
    const popup = await stream.waitForEvent(
      'page_tab_opened',
      (e) => e.data!.opener_id === pausedPopupOpener.targetId && !existingTabIds.includes(e.data!.target_id),
    );
    await tab.navigate(server.url('/opener.html'));
    await stream.waitForEvent('page_load', (e) => e.data!.target_id === tab.targetId);
    expect(tabOpened(tab.targetId)).toHaveLength(1);
    expect(tabOpened(popup.data!.target_id)).toHaveLength(1);
  });

  it('leaves an external browser running when the agent stops, and a new agent announces each tab once', async () => {
    const second = await startAgent({ cdpUrl: chromium.browserWsUrl, port: 0, token: TOKEN, logLevel: 'silent' });
    const secondStream = await SseClient.open(`${second.url}/browsers/${second.sessionId}/telemetry?replay=all`, TOKEN);
    try {
      const { targetInfos } = await driver.send('Target.getTargets');
      const pageIds: string[] = targetInfos.filter((t: { type: string }) => t.type === 'page').map((t: { targetId: string }) => t.targetId);
      await secondStream.waitFor((s) => s.ofType('page_tab_opened').length >= pageIds.length, 'all tabs announced');
      await busyTab.ready(secondStream);
      const announced = secondStream.ofType('page_tab_opened').map((e: TelemetryEvent<'page_tab_opened'>) => e.data!.target_id);
      expect(announced.sort()).toEqual([...pageIds].sort());
    } finally {
      secondStream.close();
      await second.close();
    }
    expect(chromium.hasExited).toBe(false);
    expect((await busyTab.evaluate('1 + 1')).result.value).toBe(2);
  });
});

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
