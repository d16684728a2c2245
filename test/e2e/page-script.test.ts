import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventType, TelemetryEvent } from '../../injected/schema.ts';
import { startRig, type Tab, type TestRig } from './support/harness.ts';
import { click, typeText, wheel } from './support/page-input.ts';

/**
 * A 600×400 image with enough bytes per pixel to count for LCP (Chromium ignores low-entropy
 * images, such as a plain rectangle).
 */
const HERO_SVG = (() => {
  let seed = 7;
  const next = (n: number) => (seed = (seed * 16807) % 2147483647) % n;
  let shapes = '';
  for (let i = 0; i < 400; i++)
    shapes += `<circle cx="${next(600)}" cy="${next(400)}" r="${5 + next(40)}" fill="#${next(0xffffff).toString(16).padStart(6, '0')}"/>`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="600" height="400">${shapes}</svg>`;
})();

/** Text that moves down 120 px, 300 ms after load. */
const SHIFT_PAGE = `<!doctype html><title>shift</title><style>body { margin: 0; font: 20px sans-serif; }</style>
<p>First paragraph of text that will move.</p><p>Second paragraph of text that will move too.</p>
<script>addEventListener('load', () => setTimeout(() => {
  const block = document.createElement('div');
  block.style.height = '120px';
  document.body.prepend(block);
}, 300));</script>`;

const HERO_PAGE = `<!doctype html><title>hero</title><style>body { margin: 0; }</style>
<p>small</p><img id="hero" src="/hero.svg" width="600" height="400">`;

/** A cross-site frame: a button, a hero image and text that shifts after load. */
const FRAME_PAGE = `<!doctype html><style>body { margin: 0; font: 16px sans-serif; } #frame-button { position: absolute; left: 10px; top: 10px; width: 140px; height: 40px; }</style>
<button id="frame-button">In the frame</button><div style="height: 60px"></div>
<img id="frame-hero" src="/hero.svg" width="300" height="200"><p>Text below the image that will move.</p><div style="height: 2000px"></div>
<script>addEventListener('load', () => setTimeout(() => {
  const block = document.createElement('div');
  block.style.height = '80px';
  document.body.insertBefore(block, document.getElementById('frame-hero'));
}, 100));</script>`;

const FRAMES_PAGE = (
  frameUrl: string,
) => `<!doctype html><style>body { margin: 0; } iframe { position: absolute; left: 40px; top: 50px; width: 500px; height: 500px; border: 0; }</style>
<iframe src="${frameUrl}"></iframe>`;

describe('page script: layout shifts, LCP and settling', () => {
  let rig: TestRig;

  beforeAll(async () => {
    rig = await startRig();
    rig.server.route('/hero.svg', HERO_SVG, 'image/svg+xml');
  });
  afterAll(() => rig?.close());

  async function openTab(path: string, body: string): Promise<{ tab: Tab; url: string }> {
    const url = rig.server.route(path, body);
    const tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(url);
    return { tab, url };
  }

  const ofTab = <T extends EventType>(type: T, tab: Tab) =>
    rig.stream.ofType(type).filter((e) => (e.data as { target_id?: string }).target_id === tab.targetId);

  describe('a page that shifts its layout 300 ms after load', () => {
    let tab: Tab;
    let shift: TelemetryEvent<'page_layout_shift'>;
    let layoutSettled: TelemetryEvent<'page_layout_settled'>;
    let navigationSettled: TelemetryEvent<'page_navigation_settled'>;

    beforeAll(async () => {
      ({ tab } = await openTab('/shift.html', SHIFT_PAGE));
      navigationSettled = await rig.stream.waitForEvent('page_navigation_settled', (e) => e.data!.target_id === tab.targetId);
      shift = ofTab('page_layout_shift', tab)[0]!;
      layoutSettled = ofTab('page_layout_settled', tab)[0]!;
    });

    it('reports the shift with its value, had_recent_input, time and duration 0', () => {
      expect(shift.data).toMatchObject({
        source_frame_id: tab.targetId,
        frame_id: tab.targetId,
        target_type: 'page',
        nav_seq: 1,
        duration: 0,
        layout_shift_details: { value: expect.any(Number), had_recent_input: false },
      });
      expect(shift.data!.layout_shift_details.value).toBeGreaterThan(0);
      expect(shift.data!.time).toBeGreaterThan(0);
    });

    it('reports the shift after page_load', () => {
      const load = ofTab('page_load', tab)[0]!;
      expect(rig.stream.events.indexOf(shift)).toBeGreaterThan(rig.stream.events.indexOf(load));
    });

    it('reports page_layout_settled about 1 s after the shift', () => {
      const afterShiftMs = (layoutSettled.ts - shift.ts) / 1000;
      expect(afterShiftMs).toBeGreaterThanOrEqual(990);
      expect(afterShiftMs).toBeLessThan(1500);
    });

    it('reports page_navigation_settled right after page_layout_settled, with the tab context', () => {
      const events = rig.stream.events;
      expect(events.indexOf(navigationSettled)).toBeGreaterThan(events.indexOf(layoutSettled));
      expect(navigationSettled.data).toMatchObject({ target_id: tab.targetId, frame_id: tab.targetId, nav_seq: 1 });
      expect(navigationSettled.source).toEqual({ kind: 'agent' });
    });

    it('settles once per navigation', () => {
      expect(ofTab('page_layout_settled', tab)).toHaveLength(1);
      expect(ofTab('page_navigation_settled', tab)).toHaveLength(1);
    });
  });

  describe('a page with a hero image', () => {
    let tab: Tab;
    let lcp: TelemetryEvent<'page_lcp'>;

    beforeAll(async () => {
      ({ tab } = await openTab('/hero.html', HERO_PAGE));
      lcp = await rig.stream.waitForEvent('page_lcp', (e) => e.data!.target_id === tab.targetId && e.data!.lcp_details.element_id === 'hero');
    });

    it('reports page_lcp with the size, url and element id of the image', () => {
      expect(lcp.data!.lcp_details).toMatchObject({ size: 600 * 400, url: rig.server.url('/hero.svg'), element_id: 'hero' });
      expect(lcp.data!.lcp_details.render_time).toBeGreaterThan(0);
      expect(lcp.data!.lcp_details.load_time).toBeGreaterThan(0);
      expect(lcp.data!.time).toBeGreaterThan(0);
      expect(lcp.data!.source_frame_id).toBe(tab.targetId);
    });

    it("reports the image's backend DOM node id as node_id", async () => {
      const { result } = await tab.send('Runtime.evaluate', { expression: `document.getElementById('hero')` });
      const { node } = await tab.send('DOM.describeNode', { objectId: result.objectId });
      expect(lcp.data!.lcp_details.node_id).toBe(node.backendNodeId);
    });
  });

  describe('a cross-site iframe', () => {
    let tab: Tab;
    let frameId: string;
    const ofFrame = <T extends EventType>(type: T) => rig.stream.ofType(type).filter((e) => (e.data as { frame_id?: string }).frame_id === frameId);

    beforeAll(async () => {
      const frameUrl = rig.server.crossSiteUrl('/frame.html');
      rig.server.route('/frame.html', FRAME_PAGE);
      ({ tab } = await openTab('/frames.html', FRAMES_PAGE(frameUrl)));
      const frameLoad = await rig.stream.waitForEvent('page_load', (e) => e.data!.url === frameUrl && e.data!.target_type === 'iframe');
      frameId = frameLoad.data!.frame_id!;
    });

    // Performance entries first: LCP stops at the first user input.
    it("reports the frame's layout shift with the frame as source_frame_id", async () => {
      const event = await rig.stream.waitForEvent('page_layout_shift', (e) => e.data!.frame_id === frameId);
      expect(event.data).toMatchObject({ source_frame_id: frameId, target_type: 'iframe', nav_seq: 1 });
    });

    it("reports the frame's LCP with the frame as source_frame_id and a node id", async () => {
      const event = await rig.stream.waitForEvent('page_lcp', (e) => e.data!.frame_id === frameId && e.data!.lcp_details.element_id === 'frame-hero');
      expect(event.data).toMatchObject({ source_frame_id: frameId, target_type: 'iframe' });
      expect(event.data!.lcp_details.node_id).toEqual(expect.any(Number));
    });

    it('reports a click inside the frame with the frame id and frame coordinates', async () => {
      // The frame sits at (40, 50) in the page: (120, 80) in the page is (80, 30) in the frame.
      await click(tab, { x: 120, y: 80 });
      const event = await rig.stream.waitForEvent('interaction_click', (e) => e.data!.frame_id === frameId);
      expect(event.data).toMatchObject({
        target_type: 'iframe',
        target_id: frameId,
        selector: '#frame-button',
        tag: 'BUTTON',
        text: 'In the frame',
        x: 80,
        y: 30,
        nav_seq: 1,
      });
    });

    it('reports keys typed inside the frame with the frame id', async () => {
      await typeText(tab, 'k');
      const event = await rig.stream.waitForEvent('interaction_key', (e) => e.data!.frame_id === frameId);
      expect(event.data).toMatchObject({ key: 'k', selector: '#frame-button', tag: 'BUTTON', target_type: 'iframe' });
    });

    it('reports a scroll inside the frame with the frame id', async () => {
      await wheel(tab, { x: 240, y: 350 }, 100);
      const event = await rig.stream.waitForEvent('interaction_scroll_settled', (e) => e.data!.frame_id === frameId);
      expect(event.data).toMatchObject({ target_selector: 'html', from_y: 0, target_type: 'iframe' });
    });

    it("reports no page_layout_settled for the frame's own load: settling is per tab", async () => {
      await rig.stream.waitForEvent('page_navigation_settled', (e) => e.data!.target_id === tab.targetId);
      expect(ofFrame('page_layout_settled')).toEqual([]);
    });
  });
});
