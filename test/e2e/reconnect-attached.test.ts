import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../src/agent.ts';
import { ChromiumProcess } from '../../src/browser/chromium-launcher.ts';
import { consoleText, Driver, SseClient, TOKEN } from './support/harness.ts';

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Attached mode: the browser on a fixed port dies and another one comes up on the same port. */
describe('reconnecting to an external browser', () => {
  let port: number;
  let chromium: ChromiumProcess | undefined;
  let agent: Agent;
  let stream: SseClient;
  const launch = async () => (chromium = await ChromiumProcess.launch({ port }));
  const kill = async () => {
    chromium!.child.kill('SIGKILL');
    await chromium!.close();
    chromium = undefined;
  };

  beforeAll(async () => {
    port = await freePort();
    await launch();
    // Short backoff so ten failed attempts take about 2 s instead of 33 s; the spec's schedule
    // is unit-tested in reconnector.test.ts.
    agent = await startAgent({
      cdpUrl: `http://127.0.0.1:${port}`,
      port: 0,
      token: TOKEN,
      logLevel: 'silent',
      screenshots: false,
      timing: { backoffInitialMs: 50, backoffMaxMs: 200 },
    });
    stream = await SseClient.open(`${agent.url}/browsers/${agent.sessionId}/telemetry?replay=all`, TOKEN);
  });
  afterAll(async () => {
    stream?.close();
    await agent?.close();
    await chromium?.close();
  });

  async function logFromNewBrowser(text: string): Promise<void> {
    const driver = await Driver.connect(agent.browserWsUrl);
    try {
      const tab = await driver.firstPage();
      await tab.evaluate(`console.log(${JSON.stringify(text)})`);
      await stream.waitForEvent('console_log', (e) => consoleText(e) === text);
    } finally {
      await driver.close();
    }
  }

  it('reconnects to a new browser started on the same port', async () => {
    await kill();
    await stream.waitForEvent('monitor_disconnected');
    expect(stream.ofType('monitor_disconnected')[0]!.data).toEqual({ reason: 'browser_closed' });
    await launch();
    const reconnected = await stream.waitForEvent('monitor_reconnected');
    expect(reconnected.data!.reconnect_duration_ms).toBeGreaterThan(0);
    expect(agent.cdpConnected).toBe(true);
    await logFromNewBrowser('from-second-browser');
  });

  it('reports reconnect_failed after 10 failed attempts, then reconnects when the browser is back', async () => {
    await kill();
    await stream.waitFor((s) => s.ofType('monitor_disconnected').length === 2, 'second disconnect');
    const failed = await stream.waitForEvent('monitor_reconnect_failed');
    expect(failed.data).toEqual({ reason: 'reconnect_exhausted', attempts: 10 });
    expect(agent.cdpConnected).toBe(false);
    const health = await fetch(`${agent.url}/healthz`);
    expect(health.status).toBe(503);
    await launch();
    await stream.waitFor((s) => s.ofType('monitor_reconnected').length === 2, 'second reconnect');
    await logFromNewBrowser('from-third-browser');
    expect(stream.ofType('monitor_reconnect_failed')).toHaveLength(1);
    const ids = stream.frameIds;
    for (let i = 1; i < ids.length; i++) expect(ids[i]).toBe(ids[i - 1]! + 1);
  });
});

describe('starting before the external browser is up', () => {
  it('reports monitor_init_failed with step and error, serves 503 health, then connects when the browser appears', async () => {
    const port = await freePort();
    const agent = await startAgent({
      cdpUrl: `http://127.0.0.1:${port}`,
      port: 0,
      token: TOKEN,
      logLevel: 'silent',
      screenshots: false,
      timing: { backoffInitialMs: 50, backoffMaxMs: 200 },
    });
    const stream = await SseClient.open(`${agent.url}/browsers/${agent.sessionId}/telemetry?replay=all`, TOKEN);
    let chromium: ChromiumProcess | undefined;
    try {
      const failed = await stream.waitForEvent('monitor_init_failed');
      expect(failed.data).toEqual({ step: 'connect', error: expect.stringMatching(/fetch failed|ECONNREFUSED/) });
      expect((await fetch(`${agent.url}/healthz`)).status).toBe(503);
      chromium = await ChromiumProcess.launch({ port });
      await stream.waitForEvent('monitor_reconnected');
      expect((await fetch(`${agent.url}/healthz`)).status).toBe(200);
    } finally {
      stream.close();
      await agent.close();
      await chromium?.close();
    }
  });
});
