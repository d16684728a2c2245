import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventType, TelemetryEvent } from '../../injected/schema.ts';
import { startRig, type Tab, type TestRig } from './support/harness.ts';

describe('page lifecycle telemetry', () => {
  let rig: TestRig;
  let tab: Tab;
  let urlA: string;
  let urlB: string;
  let ofTab: TelemetryEvent[];

  beforeAll(async () => {
    rig = await startRig();
    urlA = rig.server.route('/a.html', '<!doctype html><title>A</title><p>a</p>');
    urlB = rig.server.route('/b.html', '<!doctype html><title>B</title><p>b</p>');
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(urlA);
    await rig.stream.waitForEvent('page_load', (e) => e.data!.target_id === tab.targetId && e.data!.nav_seq === 1);
    await tab.navigate(urlB);
    await rig.stream.waitForEvent('page_load', (e) => e.data!.target_id === tab.targetId && e.data!.nav_seq === 2);
    const pageTypes: EventType[] = ['page_navigation', 'page_dom_content_loaded', 'page_load'];
    ofTab = rig.stream.events.filter((e) => pageTypes.includes(e.type) && (e.data as { target_id?: string }).target_id === tab.targetId);
  });
  afterAll(() => rig?.close());

  it('gives navigation, DOMContentLoaded and load in order for each navigation', () => {
    expect(ofTab.map((e) => e.type)).toEqual([
      'page_navigation',
      'page_dom_content_loaded',
      'page_load',
      'page_navigation',
      'page_dom_content_loaded',
      'page_load',
    ]);
  });

  it('stamps nav_seq 1 then 2 on the events after each navigation', () => {
    expect(ofTab.filter((e) => e.type !== 'page_navigation').map((e) => (e.data as { nav_seq?: number }).nav_seq)).toEqual([1, 1, 2, 2]);
  });

  it('reports page_navigation with exactly its fields and no nav_seq', () => {
    const [first, second] = ofTab.filter((e) => e.type === 'page_navigation');
    expect(first!.data).toEqual({
      url: urlA,
      frame_id: tab.targetId,
      loader_id: expect.any(String),
      session_id: expect.any(String),
      target_id: tab.targetId,
      target_type: 'page',
    });
    expect((second!.data as { url: string }).url).toBe(urlB);
    expect((second!.data as { loader_id: string }).loader_id).not.toBe((first!.data as { loader_id: string }).loader_id);
  });

  it('gives page_load the monotonic cdp_timestamp and a ts converted to Unix microseconds', () => {
    const load = ofTab.find((e) => e.type === 'page_load')!;
    const data = load.data as { cdp_timestamp: number; url: string; loader_id: string };
    expect(data.url).toBe(urlA);
    expect(data.cdp_timestamp).toBeGreaterThan(0);
    expect(data.cdp_timestamp).toBeLessThan(1e9);
    const nav = ofTab.find((e) => e.type === 'page_navigation')!;
    expect(load.ts).toBeGreaterThanOrEqual(nav.ts - 50_000);
    expect(Math.abs(load.ts - Date.now() * 1000)).toBeLessThan(60_000_000);
  });
});
