import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { consoleText, Driver, SseClient, startRig, TOKEN, type TestRig } from './support/harness.ts';
import { SCREENSHOT_QUIET_MS } from '../../src/telemetry/screenshot-family.ts';

function pngSize(base64: string): { width: number; height: number; signatureOk: boolean } {
  const bytes = Buffer.from(base64, 'base64');
  const signatureOk = bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20), signatureOk };
}

function assertContiguous(stream: SseClient): void {
  const ids = stream.frameIds;
  for (let i = 1; i < ids.length; i++) expect(ids[i]).toBe(ids[i - 1]! + 1);
}

describe('reconnecting after the embedded browser dies', () => {
  let rig: TestRig;
  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
  });
  afterAll(() => rig?.close());

  it('reports disconnected then reconnected on the same stream, 5 times in a row, with contiguous seq and no growth', async () => {
    const handlesAt: number[] = [];
    const rssAt: number[] = [];
    for (let round = 1; round <= 5; round++) {
      const pid = rig.agent.browserPid!;
      process.kill(pid, 'SIGKILL');
      await rig.stream.waitFor((s) => s.ofType('monitor_reconnected').length >= round, `reconnect ${round}`);
      const disconnected = rig.stream.ofType('monitor_disconnected');
      expect(disconnected).toHaveLength(round);
      expect(disconnected[round - 1]!.data!.reason).toBe('browser_closed');
      expect(disconnected[round - 1]!.source).toEqual({ kind: 'agent' });
      expect(rig.agent.browserPid).not.toBe(pid);

      const driver = await Driver.connect(rig.agent.browserWsUrl);
      try {
        const tab = await driver.firstPage();
        await tab.evaluate(`console.log('after-restart-${round}')`);
        await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === `after-restart-${round}`);
      } finally {
        await driver.close();
      }
      global.gc?.();
      handlesAt.push(process.getActiveResourcesInfo().length);
      rssAt.push(process.memoryUsage().rss);
    }
    const reconnected = rig.stream.ofType('monitor_reconnected');
    for (const event of reconnected) expect(event.data!.reconnect_duration_ms).toBeGreaterThan(0);
    // monitor_disconnected comes before its monitor_reconnected.
    const order = rig.stream.events.filter((e) => e.type.startsWith('monitor_')).map((e) => e.type);
    expect(order).toEqual(Array(5).fill(['monitor_disconnected', 'monitor_reconnected']).flat());
    assertContiguous(rig.stream);
    expect(rig.stream.problems).toEqual([]);
    // Steady state after the first round: no handle leak, bounded memory.
    expect(handlesAt[4]! - handlesAt[0]!).toBeLessThanOrEqual(2);
    expect(rssAt[4]! - rssAt[0]!).toBeLessThan(40 * 1024 * 1024);
  }, 90_000);
});

describe('a crashed renderer', () => {
  let rig: TestRig;
  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
  });
  afterAll(() => rig?.close());

  it('does not break the agent: other tabs keep reporting', async () => {
    // Two sites, so two renderer processes: only the victim's dies.
    rig.server.route('/crash.html', '<!doctype html><p>tab</p>');
    const victim = await rig.driver.newTab();
    await victim.ready(rig.stream);
    await victim.navigate(rig.server.url('/crash.html'));
    await rig.stream.waitForEvent('page_load', (e) => e.data!.target_id === victim.targetId);
    const survivor = await rig.driver.newTab();
    await survivor.ready(rig.stream);
    await survivor.navigate(rig.server.crossSiteUrl('/crash.html'));
    await rig.stream.waitForEvent('page_load', (e) => e.data!.target_id === survivor.targetId);
    await victim.send('Inspector.enable');
    const crashed = rig.driver.waitForCdpEvent('Inspector.targetCrashed', victim.sessionId);
    // Page.crash itself gets no answer until the next command; wait for the crash event instead.
    void victim.send('Page.crash').catch(() => undefined);
    await crashed;
    await survivor.evaluate(`console.log('still-here')`);
    await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'still-here');
    expect(rig.agent.cdpConnected).toBe(true);
    // The crashed tab recovers with a reload and is followed again.
    await victim.send('Page.reload');
    await victim.ready(rig.stream);
  });
});

describe('monitor screenshots', () => {
  let rig: TestRig;
  beforeAll(async () => {
    rig = await startRig();
    rig.server.route('/shot.html', '<!doctype html><body style="background:#3a6"><h1>shot</h1></body>');
  });
  afterAll(() => rig?.close());

  it('takes one screenshot of the viewport after a page load', async () => {
    const tab = await rig.driver.firstPage();
    await tab.ready(rig.stream);
    await new Promise((r) => setTimeout(r, 2100)); // let the 2 s throttle window of start-up pass
    const before = rig.stream.ofType('monitor_screenshot').length;
    await tab.navigate(rig.server.url('/shot.html'));
    await rig.stream.waitFor((s) => s.ofType('monitor_screenshot').length > before, 'a screenshot');
    const shot = rig.stream.ofType('monitor_screenshot').at(-1)!;
    const { width, height, signatureOk } = pngSize(shot.data!.png!);
    const viewport = (await tab.evaluate('[innerWidth * devicePixelRatio, innerHeight * devicePixelRatio]')).result.value;
    expect(signatureOk).toBe(true);
    expect([width, height]).toEqual(viewport);
    expect(Buffer.from(shot.data!.png!, 'base64').length).toBeLessThan(750 * 1024);
    expect(Object.keys(shot.data!)).toEqual(['png']);
  });

  it('takes the screenshot once the tab stayed on the loaded page, not of a page it left at once', async () => {
    const tab = await rig.driver.firstPage();
    await new Promise((r) => setTimeout(r, 2100)); // a fresh throttle window
    const before = rig.stream.ofType('monitor_screenshot').length;
    const loadsBefore = rig.stream.ofType('page_load').length;
    // The first page is left right after its load: no screenshot of it.
    rig.server.route(
      '/leave.html',
      `<!doctype html><body><script>addEventListener('load', () => setTimeout(() => location.href = ${JSON.stringify(rig.server.url('/shot.html?stay'))}, 50))</script></body>`,
    );
    await tab.navigate(rig.server.url('/leave.html'));
    await rig.stream.waitFor((s) => s.ofType('page_load').length >= loadsBefore + 2, 'both loads');
    await rig.stream.waitFor((s) => s.ofType('monitor_screenshot').length > before, 'a screenshot');
    const loads = rig.stream.ofType('page_load').slice(loadsBefore);
    const shots = rig.stream.ofType('monitor_screenshot').slice(before);
    // One screenshot, taken SCREENSHOT_QUIET_MS after the second load (timestamps are µs).
    expect(shots.length).toBe(1);
    expect(shots[0]!.ts - loads[1]!.ts).toBeGreaterThanOrEqual(SCREENSHOT_QUIET_MS * 1000 * 0.9);
  });

  it('takes at most one screenshot for 10 loads within 2 s', async () => {
    const tab = await rig.driver.firstPage();
    await new Promise((r) => setTimeout(r, 2100)); // a fresh throttle window
    const before = rig.stream.ofType('monitor_screenshot').length;
    const loadsBefore = rig.stream.ofType('page_load').length;
    const started = Date.now();
    for (let i = 0; i < 10; i++) {
      await tab.navigate(rig.server.url(`/shot.html?${i}`));
      await rig.stream.waitFor((s) => s.ofType('page_load').length >= loadsBefore + i + 1, `load ${i}`);
    }
    const elapsed = Date.now() - started;
    // The last load's screenshot would have been taken by now if the throttle let it through.
    await new Promise((r) => setTimeout(r, 500));
    // At most one per 2 s window: one when the loads fit in 2 s (the usual case), and never more
    // than the windows they spanned on a slow machine.
    expect(rig.stream.ofType('monitor_screenshot').length - before).toBeLessThanOrEqual(Math.floor(elapsed / 2000) + 1);
  });
});

describe('DELETE /browsers/{id}', () => {
  let rig: TestRig;
  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
  });
  afterAll(() => rig?.close());

  const del = () => fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}`, { method: 'DELETE', headers: { authorization: `Bearer ${TOKEN}` } });

  it('flushes every admitted event to open streams, ends them, stops the browser; then the id is 404', async () => {
    const tab = await rig.driver.firstPage();
    await tab.ready(rig.stream);
    const second = await SseClient.open(`${rig.streamUrl}?replay=all`, TOKEN);
    await tab.evaluate(`for (let i = 0; i < 200; i++) console.log('before-delete-' + i)`);
    const pid = rig.agent.browserPid!;
    const response = await del();
    expect(response.status).toBe(204);
    await Promise.all([rig.stream.waitForEnd(), second.waitForEnd()]);
    const texts = (s: SseClient) => s.ofType('console_log').map((e: TelemetryEvent) => consoleText(e));
    expect(texts(rig.stream)).toContain('before-delete-199');
    expect(second.frameIds.at(-1)).toBe(rig.stream.frameIds.at(-1));
    expect(() => process.kill(pid, 0)).toThrow();

    const again = await del();
    expect(again.status).toBe(404);
    expect(again.headers.get('x-should-retry')).toBe('false');
    expect(await again.json()).toMatchObject({ code: 'not_found' });
    const get = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(get.status).toBe(404);
    const stream = await fetch(rig.streamUrl, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(stream.status).toBe(404);
    const health = await fetch(`${rig.agent.url}/healthz`);
    expect(await health.json()).toMatchObject({ status: 'terminated' });
  });
});

describe('an unresponsive embedded browser', () => {
  let rig: TestRig;
  beforeAll(async () => {
    rig = await startRig({ screenshots: false, timing: { probeIntervalMs: 200, probeTimeoutMs: 500 } });
  });
  afterAll(() => rig?.close());

  it('is detected by the health probe, replaced, and reported as unresponsive then reconnected', async () => {
    const pid = rig.agent.browserPid!;
    process.kill(pid, 'SIGSTOP');
    const disconnected = await rig.stream.waitForEvent('monitor_disconnected');
    expect(disconnected.data).toEqual({ reason: 'unresponsive' });
    await rig.stream.waitForEvent('monitor_reconnected');
    expect(rig.agent.browserPid).not.toBe(pid);
    expect(() => process.kill(pid, 0)).toThrow();
  });
});

describe('a frozen browser with the default probe', () => {
  let rig: TestRig;
  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
  });
  afterAll(() => rig?.close());

  it('turns /healthz to 503 unavailable within 3 s of the freeze', async () => {
    const pid = rig.agent.browserPid!;
    expect((await fetch(`${rig.agent.url}/healthz`)).status).toBe(200);
    const frozenAt = Date.now();
    process.kill(pid, 'SIGSTOP');
    let seenAfterMs: number | undefined;
    let body: unknown;
    while (Date.now() - frozenAt < 6000) {
      const health = await fetch(`${rig.agent.url}/healthz`);
      if (health.status === 503) {
        seenAfterMs = Date.now() - frozenAt;
        body = await health.json();
        break;
      }
      await health.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(body).toMatchObject({ status: 'unavailable', cdp_connected: false });
    // The probe's interval (1 s) plus its timeout (2 s), and one poll period of slack.
    expect(seenAfterMs).toBeLessThanOrEqual(3100);
    await rig.stream.waitForEvent('monitor_reconnected');
  });
});
