import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { consoleText, startRig, TOKEN, type Tab, type TestRig } from './support/harness.ts';
import { clickOn, typeText, wheel } from './support/page-input.ts';

const HERO_SVG = (() => {
  let shapes = '';
  for (let i = 0; i < 300; i++)
    shapes += `<rect x="${(i * 37) % 600}" y="${(i * 53) % 400}" width="${10 + (i % 40)}" height="${10 + (i % 30)}" fill="#${((i * 2654435761) % 0xffffff).toString(16).padStart(6, '0')}"/>`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="600" height="400">${shapes}</svg>`;
})();

/** The page logs after each interaction (after the agent's listeners ran) and after a shift. */
const PAGE = `<!doctype html><title>categories</title><style>body { margin: 0; } .spacer { height: 3000px; }</style>
<button id="b" style="position:fixed;left:10px;top:10px;width:120px;height:40px;z-index:1">Button</button>
<input id="f" style="position:fixed;left:10px;top:60px;z-index:1">
<div id="moving" style="height:20px"></div><p>Text that moves.</p>
<img id="hero" src="/hero.svg" width="600" height="400"><div class="spacer"></div>
<script>
  addEventListener('click', () => console.log('page saw click'));
  addEventListener('keydown', () => console.log('page saw key'));
  // Past the agent's 300 ms scroll settle.
  addEventListener('scrollend', () => setTimeout(() => console.log('page saw scroll settle'), 400));
  addEventListener('load', () => setTimeout(() => {
    document.getElementById('moving').style.height = '150px';
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => console.log('page shifted'), 100)));
  }, 100));
</script>`;

async function openPage(rig: TestRig): Promise<Tab> {
  rig.server.route('/hero.svg', HERO_SVG, 'image/svg+xml');
  const url = rig.server.route('/categories.html', PAGE);
  const tab = await rig.driver.newTab();
  await tab.ready(rig.stream);
  await tab.navigate(url);
  await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'page shifted' && e.data!.target_id === tab.targetId);
  return tab;
}

async function interact(rig: TestRig, tab: Tab): Promise<void> {
  const logged = (text: string) => rig.stream.waitForEvent('console_log', (e) => consoleText(e) === text && e.data!.target_id === tab.targetId);
  await clickOn(tab, '#b');
  await logged('page saw click');
  await clickOn(tab, '#f');
  await typeText(tab, 'x');
  await logged('page saw key');
  await wheel(tab, { x: 400, y: 300 }, 300);
  await logged('page saw scroll settle');
}

const ofTab = (tab: Tab) => (e: TelemetryEvent) => (e.data as { target_id?: string } | undefined)?.target_id === tab.targetId;

describe('with the interaction category off', () => {
  let rig: TestRig;
  let tab: Tab;

  beforeAll(async () => {
    rig = await startRig({ telemetry: { browser: { interaction: { enabled: false } } } });
    tab = await openPage(rig);
    await interact(rig, tab);
  });
  afterAll(() => rig?.close());

  it('reports no click, key or scroll', () => {
    expect(rig.stream.events.filter(ofTab(tab)).filter((e) => e.type.startsWith('interaction_'))).toEqual([]);
  });

  it('still reports layout shifts and LCP', () => {
    const types = new Set(rig.stream.events.filter(ofTab(tab)).map((e) => e.type));
    expect(types.has('page_layout_shift')).toBe(true);
    expect(types.has('page_lcp')).toBe(true);
  });
});

describe('with the page category off', () => {
  let rig: TestRig;
  let tab: Tab;

  beforeAll(async () => {
    rig = await startRig({ telemetry: { browser: { page: { enabled: false } } } });
    tab = await openPage(rig);
    await interact(rig, tab);
  });
  afterAll(() => rig?.close());

  it('reports no layout shift, LCP or settle', () => {
    expect(rig.stream.events.filter(ofTab(tab)).filter((e) => e.type.startsWith('page_'))).toEqual([]);
  });

  it('still reports clicks, keys and scrolls', () => {
    const types = new Set(rig.stream.events.filter(ofTab(tab)).map((e) => e.type));
    expect([...types].filter((t) => t.startsWith('interaction_')).sort()).toEqual(['interaction_click', 'interaction_key', 'interaction_scroll_settled']);
  });
});

describe('switching categories with PATCH on an open page', () => {
  let rig: TestRig;
  let tab: Tab;

  beforeAll(async () => {
    rig = await startRig();
    tab = await openPage(rig);
    await rig.stream.waitForEvent('page_lcp', (e) => e.data!.target_id === tab.targetId && e.data!.lcp_details.element_id === 'hero');
  });
  afterAll(() => rig?.close());

  async function patch(browser: object): Promise<void> {
    const response = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ telemetry: { browser } }),
    });
    expect(response.status).toBe(200);
  }

  /**
   * Click and report whether the agent reported it: the page logs each click after the agent's
   * listener ran, so by the time the log arrives, the report would have arrived.
   */
  async function clickIsReported(): Promise<boolean> {
    const before = rig.stream.ofType('interaction_click').filter(ofTab(tab)).length;
    const logsBefore = rig.stream.ofType('console_log').filter((e) => consoleText(e) === 'page saw click').length;
    await clickOn(tab, '#b');
    await rig.stream.waitFor((s) => s.ofType('console_log').filter((e) => consoleText(e) === 'page saw click').length > logsBefore, 'page saw click');
    return rig.stream.ofType('interaction_click').filter(ofTab(tab)).length > before;
  }

  /** The new config reaches the page asynchronously: click until it shows, within a timeout. */
  async function untilClicks(reported: boolean): Promise<void> {
    const deadline = Date.now() + 10_000;
    while ((await clickIsReported()) !== reported) if (Date.now() > deadline) throw new Error(`clicks never became ${reported ? '' : 'un'}reported`);
  }

  it('stops reporting clicks in the open document once interaction is turned off', async () => {
    expect(await clickIsReported()).toBe(true);
    await patch({ interaction: { enabled: false } });
    await untilClicks(false);
    expect(await clickIsReported()).toBe(false);
  });

  it('reports clicks in the open document again once interaction is turned back on', async () => {
    await patch({ interaction: { enabled: true } });
    await untilClicks(true);
    expect(await clickIsReported()).toBe(true);
  });

  it('does not report the LCP again when page is turned off and on', async () => {
    await patch({ page: { enabled: false } });
    await patch({ page: { enabled: true } });
    // The script reconfigures both categories in one call: a reported click shows it is done.
    await untilClicks(true);
    expect(rig.stream.ofType('page_lcp').filter((e) => ofTab(tab)(e) && e.data!.lcp_details.element_id === 'hero')).toHaveLength(1);
  });

  it('installs nothing in a new document while both are off, and reports its clicks once one is on', async () => {
    await patch({ interaction: { enabled: false }, page: { enabled: false } });
    await tab.navigate(rig.server.url('/categories.html'));
    await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'page shifted' && ofTab(tab)(e) && e.data!.nav_seq === 2);
    expect(await clickIsReported()).toBe(false);
    await patch({ interaction: { enabled: true } });
    await untilClicks(true);
    expect(await clickIsReported()).toBe(true);
  });
});
