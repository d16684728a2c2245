import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsoleLogData, TelemetryEvent } from '../../injected/schema.ts';
import { consoleText, startRig, type Tab, type TestRig } from './support/harness.ts';

const JS = 'application/javascript';

describe('following every target', () => {
  let rig: TestRig;
  let tab: Tab;

  beforeAll(async () => {
    rig = await startRig();
    const s = rig.server;
    s.route('/frames.html', `<!doctype html><iframe src="${s.crossSiteUrl('/inner.html')}"></iframe><script>new Worker('/worker.js')</script>`);
    s.route('/inner.html', `<!doctype html><script>console.log('iframe-first-line')</script>`);
    s.route('/worker.js', `console.log('worker-first-line')`, JS);
    s.route('/popup.html', `<!doctype html><script>console.log('popup-first-line')</script>`);
    s.route('/shared.html', `<!doctype html><script>new SharedWorker('/shared-worker.js')</script>`);
    s.route('/shared-worker.js', `console.log('shared-first-line')`, JS);
    s.route('/sw.html', `<!doctype html><script>navigator.serviceWorker.register('/sw.js')</script>`);
    s.route('/sw.js', `console.log('sw-first-line')`, JS);
    tab = await rig.driver.firstPage();
    await tab.ready(rig.stream);
  });
  afterAll(() => rig?.close());

  const lineOf = (text: string) => rig.stream.waitForEvent('console_log', (e) => consoleText(e) === text);

  it("reports a cross-site iframe's first script line with its own target type and the tab's nav_seq", async () => {
    await tab.navigate(rig.server.url('/frames.html'));
    const event = await lineOf('iframe-first-line');
    const data = event.data as ConsoleLogData;
    expect(data.target_type).toBe('iframe');
    expect(data.target_id).not.toBe(tab.targetId);
    expect(data.url).toBe(rig.server.crossSiteUrl('/inner.html'));
    expect(data.frame_id).toBe(data.target_id);
    const tabNav = rig.stream.ofType('page_navigation').filter((e) => e.data!.frame_id === tab.targetId).length;
    expect(data.nav_seq).toBe(tabNav);
  });

  it("reports a dedicated worker's first script line with target type worker and the tab's nav_seq", async () => {
    const event = await lineOf('worker-first-line');
    const data = event.data as ConsoleLogData;
    expect(data.target_type).toBe('worker');
    expect(data.url).toBe(rig.server.url('/worker.js'));
    const iframeEvent = rig.stream.ofType('console_log').find((e) => consoleText(e) === 'iframe-first-line')!;
    expect(data.nav_seq).toBe((iframeEvent.data as ConsoleLogData).nav_seq);
    expect(event.source.metadata!.target_type).toBe('worker');
  });

  it("reports a window.open popup's first console line", async () => {
    await tab.send('Runtime.evaluate', { expression: `window.open('/popup.html')`, userGesture: true });
    const event = await lineOf('popup-first-line');
    const data = event.data as ConsoleLogData;
    expect(data.target_type).toBe('page');
    expect(data.target_id).not.toBe(tab.targetId);
    expect(data.nav_seq).toBe(1);
  });

  it("reports a shared worker's console line without nav_seq", async () => {
    await tab.navigate(rig.server.url('/shared.html'));
    const data = (await lineOf('shared-first-line')).data as ConsoleLogData;
    expect(data.target_type).toBe('shared_worker');
    expect(data.nav_seq).toBeUndefined();
    expect(data.url).toBe(rig.server.url('/shared-worker.js'));
  });

  it("reports a service worker's console line once, without nav_seq", async () => {
    await tab.navigate(rig.server.url('/sw.html'));
    const data = (await lineOf('sw-first-line')).data as ConsoleLogData;
    expect(data.target_type).toBe('service_worker');
    expect(data.nav_seq).toBeUndefined();
    // Reload so the page is controlled and the worker is in scope of a second page session.
    await tab.navigate(rig.server.url('/sw.html'));
    await rig.stream.waitForEvent('page_load', (e) => e.data!.nav_seq === navSeqOf(rig.stream.ofType('page_navigation'), tab.targetId));
    expect(rig.stream.ofType('console_log').filter((e) => consoleText(e) === 'sw-first-line')).toHaveLength(1);
  });
});

function navSeqOf(navigations: Array<TelemetryEvent<'page_navigation'>>, tabId: string): number {
  return navigations.filter((e) => e.data!.frame_id === tabId).length;
}
