import parsePrometheusTextFormat, { type MetricFamily as Family } from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startAgent } from '../../src/agent.ts';
import { consoleText, startRig, TOKEN, type TestRig } from './support/harness.ts';

describe('GET /metrics', () => {
  let rig: TestRig;
  beforeAll(async () => {
    rig = await startRig({
      screenshots: false,
      tokens: [
        { token: 'scraper', scopes: ['metrics:read'] },
        { token: 'reader', scopes: ['telemetry:read'] },
      ],
    });
  });
  afterAll(() => rig?.close());

  const scrape = async (token = 'scraper', url = rig.agent.url): Promise<Map<string, Family>> => {
    const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const families = parsePrometheusTextFormat(await response.text());
    return new Map(families.map((f) => [f.name, f]));
  };
  const value = (families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number => {
    const family = families.get(name);
    if (!family) return 0;
    const metric = family.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
    return metric ? Number(metric.value) : 0;
  };

  it('answers 403 to a token without metrics:read and 401 without a token', async () => {
    expect((await fetch(`${rig.agent.url}/metrics`, { headers: { authorization: 'Bearer reader' } })).status).toBe(403);
    expect((await fetch(`${rig.agent.url}/metrics`)).status).toBe(401);
  });

  it('parses as Prometheus text and lists every metric family of the agent', async () => {
    const families = await scrape();
    for (const name of [
      'bta_events_admitted_total',
      'bta_events_dropped_total',
      'bta_stream_subscribers',
      'bta_stream_bytes_written_total',
      'bta_cdp_connected',
      'bta_cdp_reconnects_total',
      'bta_cdp_messages_total',
      'bta_cdp_socket_reads_total',
      'bta_targets_attached',
      'bta_body_fetches_total',
      'bta_nodejs_eventloop_lag_seconds',
      'bta_nodejs_eventloop_utilization',
      'bta_nodejs_heap_size_used_bytes',
      'bta_nodejs_gc_duration_seconds',
      'bta_process_cpu_seconds_total',
      'bta_process_resident_memory_bytes',
    ]) {
      expect(families.has(name), name).toBe(true);
    }
    expect(value(families, 'bta_cdp_connected')).toBe(1);
    expect(value(families, 'bta_stream_subscribers')).toBe(1);
    expect(value(families, 'bta_targets_attached', { type: 'page' })).toBeGreaterThanOrEqual(1);
  });

  it('runs no event-loop delay monitor (its timer would wake an idle agent 50 times a second)', async () => {
    const families = await scrape();
    expect([...families.keys()].filter((name) => name.startsWith('bta_nodejs_eventloop_lag_') && name !== 'bta_nodejs_eventloop_lag_seconds')).toEqual([]);
    const utilization = value(families, 'bta_nodejs_eventloop_utilization');
    expect(utilization).toBeGreaterThanOrEqual(0);
    expect(utilization).toBeLessThanOrEqual(1);
  });

  it('moves the counters as events flow', async () => {
    const tab = await rig.driver.firstPage();
    await tab.ready(rig.stream);
    const before = await scrape();
    const url = rig.server.route('/m.html', '<!doctype html><script>console.log("metric-line")</script>');
    await tab.navigate(url);
    await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'metric-line');
    await rig.stream.waitForEvent('network_response', (e) => (e.data as { url?: string }).url === url);
    const after = await scrape();
    expect(value(after, 'bta_events_admitted_total', { type: 'console_log' })).toBeGreaterThan(
      value(before, 'bta_events_admitted_total', { type: 'console_log' }),
    );
    expect(value(after, 'bta_events_admitted_total', { type: 'network_response' })).toBeGreaterThan(
      value(before, 'bta_events_admitted_total', { type: 'network_response' }),
    );
    expect(value(after, 'bta_stream_bytes_written_total')).toBeGreaterThan(value(before, 'bta_stream_bytes_written_total'));
    expect(value(after, 'bta_cdp_messages_total')).toBeGreaterThan(value(before, 'bta_cdp_messages_total'));
    expect(value(after, 'bta_cdp_socket_reads_total')).toBeGreaterThan(value(before, 'bta_cdp_socket_reads_total'));
    expect(value(after, 'bta_cdp_socket_reads_total')).toBeLessThanOrEqual(value(after, 'bta_cdp_messages_total'));
    expect(value(after, 'bta_body_fetches_total', { outcome: 'fetched' })).toBeGreaterThan(value(before, 'bta_body_fetches_total', { outcome: 'fetched' }));
  });

  it('counts events dropped because their category is off', async () => {
    const tab = await rig.driver.firstPage();
    const patch = (enabled: boolean) =>
      fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ telemetry: { browser: { console: { enabled } } } }),
      });
    const before = value(await scrape(), 'bta_events_dropped_total', { reason: 'category_off' });
    await patch(false);
    await tab.evaluate(`console.log('dropped-line')`);
    await tab.navigate(rig.server.url('/m.html?again'));
    await rig.stream.waitForEvent('page_load', (e) => (e.data as { url?: string }).url === rig.server.url('/m.html?again'));
    await patch(true);
    expect(value(await scrape(), 'bta_events_dropped_total', { reason: 'category_off' })).toBeGreaterThan(before);
  });

  it('counts the failures its best-effort commands let pass for itself only, beside a second agent in the process', async () => {
    const other = await startAgent({ port: 0, token: 'other', logLevel: 'silent', screenshots: false });
    try {
      const ignored = (families: Map<string, Family>) => value(families, 'bta_cdp_ignored_failures_total', { kind: 'gone' });
      const before = ignored(await scrape());
      // A tab closed the moment it opens: the agent's best-effort setup commands on it (its page
      // script's registration among them) fail as a gone target.
      await vi.waitFor(
        async () => {
          const { targetId } = (await rig.driver.send('Target.createTarget', { url: 'about:blank' })) as { targetId: string };
          await rig.driver.send('Target.closeTarget', { targetId });
          expect(ignored(await scrape())).toBeGreaterThan(before);
        },
        { timeout: 15_000, interval: 100 },
      );
      const others = await scrape('other', other.url);
      expect([value(others, 'bta_cdp_ignored_failures_total', { kind: 'gone' }), value(others, 'bta_cdp_ignored_failures_total', { kind: 'other' })]).toEqual([
        0, 0,
      ]);
    } finally {
      await other.close();
    }
  }, 30_000);
});
