// Web Vitals (docs/events.md "Web Vitals", docs/page-script.md "Web Vitals") on real Chromium:
// Google's web-vitals library (npm, the attribution build) runs in the same page on the same
// interactions, and page_web_vitals must agree with it within 5% or 10 ms (CLS within 5% or 0.005).

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { startRig, type Tab, type TestRig } from './support/harness.ts';

const require = createRequire(import.meta.url);
// The package's exports map does not name its IIFE build: resolve the package, then its file.
const LIBRARY = readFileSync(join(dirname(require.resolve('web-vitals')), 'web-vitals.attribution.iife.js'), 'utf8');

// A page with a late hero image (LCP), a banner inserted above the content before any input (CLS),
// and a button whose handler blocks the main thread (INP).
const PAGE = `<!doctype html><html><head><title>vitals</title><script src="/wv/lib.js"></script><script>
window.__wv = {};
for (const name of ['TTFB', 'FCP', 'LCP', 'CLS', 'INP']) {
  webVitals['on' + name]((m) => { window.__wv[name] = { value: m.value, attribution: m.attribution }; }, { reportAllChanges: true });
}
</script></head><body style="margin:0;font:16px sans-serif">
<div id=content><h1>Vitals</h1><p>Some text to paint first.</p>
<button id=slow style="width:200px;height:60px">slow</button>
<img id=hero src="/wv/hero.svg" width=600 height=400></div>
<script>
setTimeout(() => { const b = document.createElement('div'); b.id = 'banner'; b.style.height = '120px'; b.style.background = '#fc0'; document.body.prepend(b); }, 400);
setTimeout(() => { document.getElementById('banner').style.height = '200px'; }, 700);
document.getElementById('slow').addEventListener('click', () => { const end = performance.now() + 180; while (performance.now() < end) {} document.getElementById('slow').textContent = 'done ' + Math.random(); });
</script></body></html>`;
const HERO = '<svg xmlns="http://www.w3.org/2000/svg" width="600" height="400"><rect width="600" height="400" fill="#39c"/></svg>';

describe('page_web_vitals against the web-vitals library', () => {
  let rig: TestRig;
  let tab: Tab;
  let pageUrl: string;
  let library: Record<string, { value: number; attribution: Record<string, unknown> }>;
  let event: TelemetryEvent<'page_web_vitals'>;

  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
    rig.server.route('/wv/lib.js', LIBRARY, 'application/javascript');
    rig.server.handle('/wv/hero.svg', (_req, res) => setTimeout(() => res.writeHead(200, { 'content-type': 'image/svg+xml' }).end(HERO), 250));
    pageUrl = rig.server.route('/wv/page.html', PAGE);
    const after = rig.server.route('/wv/after.html', '<!doctype html><p>after');
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(pageUrl);
    await rig.stream.waitForEvent('page_load', (e) => e.data!.target_id === tab.targetId && e.data!.url === pageUrl);
    // Past the shifts, then three clicks on the slow button (trusted input from CDP). Press and
    // release are sent together, so the pointerdown is usually presented in the click's frame (the
    // next frame comes only after the click's handler) and is the interaction's longest entry while
    // the processing is the click's: what a busy renderer does to clicks sent one after the other.
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const { result } = (await tab.evaluate('JSON.stringify(document.getElementById("slow").getBoundingClientRect())')) as { result: { value: string } };
    const box = JSON.parse(result.value) as { x: number; y: number; width: number; height: number };
    for (let i = 0; i < 3; i++) {
      const mouse = (type: string) =>
        tab.send('Input.dispatchMouseEvent', { type, x: box.x + box.width / 2, y: box.y + box.height / 2, button: 'left', clickCount: 1 });
      await Promise.all([mouse('mousePressed'), mouse('mouseReleased')]);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    // The library reports INP when the browser is idle after the interaction.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    library = (await tab.evaluate('JSON.parse(JSON.stringify(window.__wv))')).result.value;
    await tab.navigate(after);
    event = await rig.stream.waitForEvent('page_web_vitals', (e) => e.data!.target_id === tab.targetId);
  }, 60_000);
  afterAll(() => rig?.close());

  const close = (ours: number | undefined, theirs: number | undefined, absolute: number) => {
    expect(theirs, 'the library measured it').toBeTypeOf('number');
    expect(ours, 'the agent measured it').toBeTypeOf('number');
    expect(Math.abs(ours! - theirs!)).toBeLessThanOrEqual(Math.max(absolute, 0.05 * theirs!));
  };

  it('sends one event for the document when it is left, with the document context', () => {
    expect(rig.stream.ofType('page_web_vitals').filter((e) => e.data!.target_id === tab.targetId)).toHaveLength(1);
    expect(event.data).toMatchObject({ reason: 'navigated', url: pageUrl, nav_seq: 1, frame_id: tab.targetId });
    expect(event.source).toMatchObject({ kind: 'cdp', event: 'Runtime.bindingCalled' });
  });

  it('agrees on TTFB and FCP', () => {
    close(event.data!.ttfb, library.TTFB?.value, 10);
    close(event.data!.fcp, library.FCP?.value, 10);
  });

  it('agrees on LCP and names its element', () => {
    close(event.data!.lcp?.value, library.LCP?.value, 10);
    // The same element: the library's selector ends with the agent's (each builds its own path).
    const element = event.data!.lcp!.element!;
    expect(element.tag).toBe('H1');
    expect(String(library.LCP!.attribution.target).endsWith(element.selector.split('>').pop()!.trim())).toBe(true);
  });

  it('agrees on CLS and names the largest shifting element', () => {
    expect(library.CLS!.value).toBeGreaterThan(0.01);
    close(event.data!.cls?.value, library.CLS?.value, 0.005);
    expect(event.data!.cls!.largest_shift_element).toBeDefined();
    expect(library.CLS!.attribution.largestShiftTarget).toBeTypeOf('string');
  });

  it('agrees on INP and gives its event type, target and phases', () => {
    expect(library.INP!.value).toBeGreaterThanOrEqual(180);
    close(event.data!.inp?.value, library.INP?.value, 10);
    const inp = event.data!.inp!;
    expect(inp.target).toEqual({ selector: '#slow', tag: 'BUTTON' });
    expect(['pointerdown', 'pointerup', 'mousedown', 'mouseup', 'click']).toContain(inp.event_type);
    expect(inp.processing_duration).toBeGreaterThanOrEqual(170);
    expect(inp.input_delay + inp.processing_duration + inp.presentation_delay).toBeCloseTo(inp.value, -1);
    expect(inp.interaction_count).toBe(3);
  });
});
