import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InteractionClickData, InteractionKeyData, TelemetryEvent } from '../../injected/schema.ts';
import { startRig, type Tab, type TestRig } from './support/harness.ts';
import { centerOf, clickOn, selects, typeText, wheel } from './support/page-input.ts';

const PAGE = `<!doctype html><html><head><title>interaction</title><style>
  body { margin: 0; font: 16px sans-serif; }
  #scroller { height: 120px; width: 300px; overflow: auto; }
  #scroller .inner { height: 2000px; }
  .spacer { height: 3000px; }
</style></head><body>
<section><div class="card"><div class="actions">
  <button type="button">Other</button>
  <button type="button"><span class="icon">&#9733;</span>   Buy
     now</button>
</div></div></section>
<input id="name" type="text">
<input id="pw" type="password" value="hunter2">
<input id="otp" type="text" autocomplete="one-time-code">
<input id="card" type="text" autocomplete="section-pay billing cc-number">
<div><label for="agree">I agree</label><input id="agree" type="checkbox"></div>
<div id="scroller"><div class="inner">scroll me</div></div>
<div class="spacer"></div>
</body></html>`;

describe('interaction telemetry', () => {
  let rig: TestRig;
  let tab: Tab;

  beforeAll(async () => {
    rig = await startRig();
    const url = rig.server.route('/interaction.html', PAGE);
    tab = await rig.driver.newTab();
    await tab.send('Emulation.setDeviceMetricsOverride', { width: 800, height: 600, deviceScaleFactor: 1, mobile: false });
    await tab.ready(rig.stream);
    await tab.navigate(url);
    await rig.stream.waitForEvent('page_load', (e) => e.data!.target_id === tab.targetId && e.data!.url === url);
  });
  afterAll(() => rig?.close());

  const clicks = () => rig.stream.ofType('interaction_click').filter((e) => e.data!.target_id === tab.targetId);
  const keys = () => rig.stream.ofType('interaction_key').filter((e) => e.data!.target_id === tab.targetId);

  /** Type `marker` into #name and wait for its key event: everything typed before has been reported by then. */
  async function typeMarker(marker: string): Promise<void> {
    await tab.evaluate(`document.getElementById('name').focus({ preventScroll: true })`);
    await typeText(tab, marker);
    await rig.stream.waitForEvent('interaction_key', (e) => e.data!.key === marker && e.data!.selector === '#name');
  }

  describe('a click on the icon inside a nested button', () => {
    let event: TelemetryEvent<'interaction_click'>;
    let at: { x: number; y: number };

    beforeAll(async () => {
      at = await clickOn(tab, 'button:nth-of-type(2) .icon');
      event = await rig.stream.waitForEvent('interaction_click', (e) => e.data!.tag === 'BUTTON' && e.data!.text.includes('Buy'));
    });

    it('gives integer viewport coordinates of the click', () => {
      expect(event.data!.x).toBe(Math.round(at.x));
      expect(event.data!.y).toBe(Math.round(at.y));
    });

    it("gives the button's selector, which selects exactly that button", async () => {
      expect(await selects(tab, event.data!.selector, `document.querySelectorAll('button')[1]`)).toEqual({ count: 1, isExpected: true });
    });

    it('gives the uppercase tag and the trimmed visible text with white space collapsed', () => {
      expect(event.data!.tag).toBe('BUTTON');
      expect(event.data!.text).toBe('\u2605 Buy now');
    });

    it('carries the context of the tab from the agent', () => {
      const data = event.data as InteractionClickData;
      expect(data).toMatchObject({
        target_id: tab.targetId,
        target_type: 'page',
        frame_id: tab.targetId,
        nav_seq: 1,
        url: expect.stringContaining('/interaction.html'),
      });
      expect(event.source).toMatchObject({ kind: 'cdp', event: 'Runtime.bindingCalled' });
    });
  });

  it('reports typing "hello" as five interaction_key events in order, nothing dropped', async () => {
    await clickOn(tab, '#name');
    await typeText(tab, 'hello');
    await rig.stream.waitFor(() => keys().filter((e) => e.data!.selector === '#name').length >= 5, 'five keys');
    const typed = keys().filter((e) => e.data!.selector === '#name');
    expect(typed.map((e) => e.data!.key)).toEqual(['h', 'e', 'l', 'l', 'o']);
    expect(typed.every((e) => e.data!.tag === 'INPUT')).toBe(true);
  });

  it('reports no key typed into a password field', async () => {
    await clickOn(tab, '#pw');
    await typeText(tab, 'secret');
    await typeMarker('1');
    expect(keys().filter((e) => e.data!.selector === '#pw')).toEqual([]);
  });

  it('reports no key typed into a one-time-code field', async () => {
    await clickOn(tab, '#otp');
    await typeText(tab, '123456');
    await typeMarker('2');
    expect(keys().filter((e) => e.data!.selector === '#otp')).toEqual([]);
  });

  it('reports no key typed into a payment-card field', async () => {
    await clickOn(tab, '#card');
    await typeText(tab, '4111');
    await typeMarker('3');
    expect(keys().filter((e) => e.data!.selector === '#card')).toEqual([]);
  });

  it('reports a click on a label once, not again for the click it forwards to its control', async () => {
    await clickOn(tab, 'label');
    await typeMarker('5');
    const onLabel = clicks().filter((e) => e.data!.tag === 'LABEL');
    expect(onLabel.map((e) => e.data!.text)).toEqual(['I agree']);
    expect(clicks().filter((e) => e.data!.selector === '#agree')).toEqual([]);
    expect((await tab.evaluate(`document.getElementById('agree').checked`)).result.value).toBe(true);
  });

  it('reports an empty text for a click on a password field', () => {
    const onPassword = clicks().filter((e) => e.data!.selector === '#pw');
    expect(onPassword).toHaveLength(1);
    expect(onPassword[0]!.data!.text).toBe('');
  });

  describe('scrolling', () => {
    let documentScroll: TelemetryEvent<'interaction_scroll_settled'>;
    let divScroll: TelemetryEvent<'interaction_scroll_settled'>;

    beforeAll(async () => {
      // The div first, while it is in view; then the document, outside the div.
      await wheel(tab, await centerOf(tab, '#scroller'), 300);
      divScroll = await rig.stream.waitForEvent('interaction_scroll_settled', (e) => e.data!.target_selector === '#scroller');
      await wheel(tab, { x: 600, y: 400 }, 500);
      documentScroll = await rig.stream.waitForEvent('interaction_scroll_settled', (e) => e.data!.target_selector === 'html');
    });

    it('reports a document scroll once it settles, from where it was to where it stopped', async () => {
      const scrollY = (await tab.evaluate('scrollY')).result.value as number;
      expect(documentScroll.data).toMatchObject({ from_x: 0, from_y: 0, to_x: 0, to_y: scrollY });
      expect(scrollY).toBeGreaterThan(2);
    });

    it('reports a scrollable element scroll once it settles, with its selector', async () => {
      const scrollTop = (await tab.evaluate(`document.getElementById('scroller').scrollTop`)).result.value as number;
      expect(divScroll.data).toMatchObject({ from_x: 0, from_y: 0, to_x: 0, to_y: scrollTop });
      expect(scrollTop).toBeGreaterThan(2);
    });

    it('reports each scroll exactly once', async () => {
      await typeMarker('4');
      const settled = rig.stream.ofType('interaction_scroll_settled').filter((e) => e.data!.target_id === tab.targetId);
      expect(settled.map((e) => e.data!.target_selector)).toEqual(['#scroller', 'html']);
    });
  });

  it('reports key events with the focused element as selector and tag', () => {
    const marker = keys().find((e) => e.data!.key === '1')!;
    expect(marker.data as InteractionKeyData).toMatchObject({ selector: '#name', tag: 'INPUT', target_id: tab.targetId });
  });
});
