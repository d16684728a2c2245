import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { consoleText, startRig, type Tab, type TestRig } from './support/harness.ts';
import { clickOn, typeText, wheel } from './support/page-input.ts';

const HOSTILE = readFileSync(new URL('../fixtures/pages/hostile.html', import.meta.url), 'utf8');

const HERO_SVG = (() => {
  let shapes = '';
  for (let i = 0; i < 300; i++)
    shapes += `<rect x="${(i * 37) % 600}" y="${(i * 53) % 400}" width="${10 + (i % 40)}" height="${10 + (i % 30)}" fill="#${((i * 2654435761) % 0xffffff).toString(16).padStart(6, '0')}"/>`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="600" height="400">${shapes}</svg>`;
})();

const CSP_PAGE = `<!doctype html><title>csp</title>
<button id="csp-button" style="position:absolute;left:20px;top:20px;width:160px;height:40px">Strict page</button>
<img id="csp-hero" src="/csp-hero.svg" width="600" height="400" style="position:absolute;left:0;top:100px">`;
const STRICT_CSP = "default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; img-src 'self'; require-trusted-types-for 'script'; trusted-types 'none'";

/** A page script event carrying any of the forged values (console events echo them legitimately). */
const REOPEN_PAGE = `<!doctype html><p>first content</p><script>addEventListener('load', () => setTimeout(() => {
  document.open();
  document.write('<!doctype html><button id="after" style="position:absolute;left:0;top:0;width:120px;height:40px">Written later</button>');
  document.close();
  console.log('reopened');
}, 0));</script>`;

const isForged = (event: TelemetryEvent): boolean =>
  /^(interaction|page)_/.test(event.type) && /forged|"value":99[,}]|"size":4242[,}]|"to_y":999[,}]/i.test(JSON.stringify(event.data ?? {}));

describe('a hostile page', () => {
  let rig: TestRig;
  let tab: Tab;
  const ofTab = (e: TelemetryEvent) => (e.data as { target_id?: string } | undefined)?.target_id === tab.targetId;

  beforeAll(async () => {
    rig = await startRig();
    const url = rig.server.route('/hostile.html', HOSTILE);
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(url);
    await rig.stream.waitForEvent('console_log', (e) => ofTab(e) && /^vandalized after \d+ forged calls$/.test(consoleText(e) ?? ''));
  });
  afterAll(() => rig?.close());

  it('calls hundreds of window functions with forged reports (the attack really ran)', () => {
    const text = consoleText(rig.stream.ofType('console_log').find((e) => ofTab(e) && consoleText(e)!.startsWith('vandalized'))!)!;
    expect(Number(/(\d+)/.exec(text)![1])).toBeGreaterThan(500);
  });

  it('still reports a real click, with the right selector', async () => {
    await clickOn(tab, '#real');
    const event = await rig.stream.waitForEvent('interaction_click', (e) => ofTab(e) && e.data!.selector === '#real');
    expect(event.data).toMatchObject({ tag: 'BUTTON', text: 'Real button' });
  });

  it('still reports real keys', async () => {
    await clickOn(tab, '#field');
    await typeText(tab, 'ok');
    await rig.stream.waitFor((s) => s.ofType('interaction_key').filter((e) => ofTab(e) && e.data!.selector === '#field').length === 2, 'two keys');
  });

  it('still reports a real scroll', async () => {
    await wheel(tab, { x: 400, y: 300 }, 200);
    const event = await rig.stream.waitForEvent('interaction_scroll_settled', ofTab);
    expect(event.data).toMatchObject({ target_selector: 'html', from_y: 0 });
  });

  it('still reports its real layout shift and settles', async () => {
    await rig.stream.waitForEvent('page_navigation_settled', ofTab);
    const shifts = rig.stream.ofType('page_layout_shift').filter(ofTab);
    expect(shifts.length).toBeGreaterThan(0);
    expect(shifts.every((e) => e.data!.layout_shift_details.value < 1)).toBe(true);
  });

  it('lets no forged event reach the stream', async () => {
    // A last real event after every forgery so far: anything forged would have arrived before it.
    await clickOn(tab, '#real');
    await rig.stream.waitFor((s) => s.ofType('interaction_click').filter((e) => ofTab(e) && e.data!.selector === '#real').length === 2, 'second click');
    expect(rig.stream.events.filter(isForged)).toEqual([]);
    expect(
      rig.stream
        .ofType('interaction_click')
        .filter(ofTab)
        .map((e) => e.data!.selector),
    ).toEqual(['#real', '#field', '#real']);
  });
});

describe('a page that reopens its document with document.open()', () => {
  let rig: TestRig;
  let tab: Tab;

  beforeAll(async () => {
    rig = await startRig();
    const url = rig.server.route('/reopen.html', REOPEN_PAGE);
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(url);
    await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'reopened' && e.data!.target_id === tab.targetId);
  });
  afterAll(() => rig?.close());

  it('still reports clicks on the new content (document.open erases window listeners)', async () => {
    await clickOn(tab, '#after');
    const event = await rig.stream.waitForEvent('interaction_click', (e) => e.data!.target_id === tab.targetId);
    expect(event.data).toMatchObject({ selector: '#after', text: 'Written later' });
  });
});

describe('a page with a strict Content-Security-Policy', () => {
  let rig: TestRig;
  let tab: Tab;
  const ofTab = (e: TelemetryEvent) => (e.data as { target_id?: string } | undefined)?.target_id === tab.targetId;

  beforeAll(async () => {
    rig = await startRig();
    rig.server.route('/csp-hero.svg', HERO_SVG, 'image/svg+xml');
    const url = rig.server.route('/csp.html', CSP_PAGE, 'text/html; charset=utf-8', { 'content-security-policy': STRICT_CSP });
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(url);
    await rig.stream.waitForEvent('page_load', (e) => ofTab(e) && e.data!.url === url);
  });
  afterAll(() => rig?.close());

  it('still reports its LCP', async () => {
    const event = await rig.stream.waitForEvent('page_lcp', (e) => ofTab(e) && e.data!.lcp_details.element_id === 'csp-hero');
    expect(event.data!.lcp_details.node_id).toEqual(expect.any(Number));
  });

  it('still reports clicks', async () => {
    await clickOn(tab, '#csp-button');
    const event = await rig.stream.waitForEvent('interaction_click', (e) => ofTab(e) && e.data!.selector === '#csp-button');
    expect(event.data!.text).toBe('Strict page');
  });
});
