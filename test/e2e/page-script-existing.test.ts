import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { startAgent, type Agent } from '../../src/agent.ts';
import { ChromiumProcess } from '../../src/browser/chromium-launcher.ts';
import { Driver, FixtureServer, SseClient, TOKEN, type Tab } from './support/harness.ts';
import { click } from './support/page-input.ts';

const IMAGE = (seed: number) => {
  let shapes = '';
  for (let i = 0; i < 300; i++)
    shapes += `<rect x="${(i * 37 + seed) % 600}" y="${(i * 53) % 400}" width="${10 + (i % 40)}" height="${10 + (i % 30)}" fill="#${((i * 2654435761 + seed) % 0xffffff).toString(16).padStart(6, '0')}"/>`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="600" height="400">${shapes}</svg>`;
};

/** A page with a same-origin (in-process) frame and a cross-site (out-of-process) frame, each with a hero image and a button. */
const FRAME = (name: string) => `<!doctype html><style>body { margin: 0; } button { position: absolute; left: 0; top: 0; width: 100px; height: 30px; }</style>
<button id="${name}-button">${name}</button><img id="${name}-hero" src="/${name}.svg" width="300" height="200" style="margin-top: 40px">`;
const MAIN = (
  crossSiteFrame: string,
) => `<!doctype html><style>body { margin: 0; } iframe { position: absolute; top: 300px; width: 320px; height: 260px; border: 0; }
button { position: absolute; left: 0; top: 0; width: 100px; height: 30px; }</style>
<button id="main-button">main</button><img id="main-hero" src="/main.svg" width="600" height="250" style="margin-top: 40px">
<iframe id="same" src="/same.html" style="left: 0"></iframe><iframe id="cross" src="${crossSiteFrame}" style="left: 340px"></iframe>`;

/** Attached mode on a browser whose tab was fully loaded before the agent started. */
describe('documents that existed before the agent attached', () => {
  let chromium: ChromiumProcess;
  let server: FixtureServer;
  let driver: Driver;
  let agent: Agent;
  let stream: SseClient;
  let tab: Tab;
  const lcpOf = (elementId: string) => stream.waitForEvent('page_lcp', (e) => e.data!.lcp_details.element_id === elementId);

  beforeAll(async () => {
    server = await new FixtureServer().start();
    for (const [name, seed] of [
      ['main', 1],
      ['same', 2],
      ['cross', 3],
    ] as const)
      server.route(`/${name}.svg`, IMAGE(seed), 'image/svg+xml');
    server.route('/same.html', FRAME('same'));
    server.route('/cross.html', FRAME('cross'));
    server.route('/main.html', MAIN(server.crossSiteUrl('/cross.html')));
    chromium = await ChromiumProcess.launch();
    driver = await Driver.connect(chromium.browserWsUrl);
    tab = await driver.newTab();
    await tab.navigate(server.url('/main.html'));
    await waitUntil(async () => (await tab.evaluate('document.readyState')).result.value === 'complete');
    const httpEndpoint = chromium.browserWsUrl.replace(/^ws:\/\/([^/]+)\/.*$/, 'http://$1');
    agent = await startAgent({ cdpUrl: httpEndpoint, port: 0, token: TOKEN, logLevel: 'silent' });
    stream = await SseClient.open(`${agent.url}/browsers/${agent.sessionId}/telemetry?replay=all`, TOKEN);
  });

  afterAll(async () => {
    stream?.close();
    await agent?.close();
    await driver?.close().catch(() => undefined);
    await chromium?.close();
    await server?.close();
  });

  it('reports the LCP the page painted before the agent attached, with its node id', async () => {
    const event = await lcpOf('main-hero');
    expect(event.data).toMatchObject({ target_id: tab.targetId, frame_id: tab.targetId, nav_seq: 0 });
    expect(event.data!.lcp_details.node_id).toEqual(expect.any(Number));
  });

  it('reports the earlier LCP of a same-origin frame, with that frame id', async () => {
    const event = await lcpOf('same-hero');
    expect(event.data!.target_id).toBe(tab.targetId);
    expect(event.data!.frame_id).toBe(await sameOriginFrameId());
    expect(event.data!.source_frame_id).toBe(event.data!.frame_id);
  });

  async function sameOriginFrameId(): Promise<string> {
    const { frameTree } = await tab.send('Page.getFrameTree');
    return frameTree.childFrames.find((c: { frame: { url: string } }) => c.frame.url.endsWith('/same.html')).frame.id;
  }

  /**
   * The script reaches existing documents while the test already runs (the agent attaches
   * asynchronously): click until the click is reported.
   */
  async function clickUntilReported(at: { x: number; y: number }, selector: string): Promise<TelemetryEvent<'interaction_click'>> {
    const reported = () => stream.ofType('interaction_click').filter((e) => e.data!.selector === selector);
    const deadline = Date.now() + 10_000;
    while (reported().length === 0) {
      await click(tab, at);
      try {
        await stream.waitFor(() => reported().length > 0, selector, 500);
      } catch (err) {
        if (Date.now() > deadline) throw err;
      }
    }
    return reported()[0]!;
  }

  it('reports a click in the existing document', async () => {
    const event = await clickUntilReported({ x: 50, y: 15 }, '#main-button');
    expect(event.data).toMatchObject({ frame_id: tab.targetId, target_type: 'page', x: 50, y: 15 });
  });

  it('reports a click in its same-origin frame, with that frame id', async () => {
    const event = await clickUntilReported({ x: 50, y: 315 }, '#same-button');
    expect(event.data!.target_id).toBe(tab.targetId);
    expect(event.data!.frame_id).toBe(await sameOriginFrameId());
  });

  it('reports a click in its cross-site frame, from the frame target', async () => {
    // Chromium does not always record an LCP for a cross-site frame that painted before the
    // agent looked, so only the click is checked there.
    const event = await clickUntilReported({ x: 390, y: 315 }, '#cross-button');
    expect(event.data).toMatchObject({ target_type: 'iframe', x: 50, y: 15 });
    expect(event.data!.frame_id).toBe(event.data!.target_id);
  });

  it('installs the script once per document: one event per click', async () => {
    const count = () => stream.ofType('interaction_click').length;
    const before = count();
    await click(tab, { x: 50, y: 15 });
    await click(tab, { x: 50, y: 315 });
    await click(tab, { x: 390, y: 315 });
    await stream.waitFor(() => count() >= before + 3, 'three more clicks');
    // A marker click after them: a duplicate of any of the three would have come before it.
    await click(tab, { x: 50, y: 15 });
    await stream.waitFor(() => count() >= before + 4, 'marker click');
    expect(
      stream
        .ofType('interaction_click')
        .slice(before)
        .map((e) => e.data!.selector),
    ).toEqual(['#main-button', '#same-button', '#cross-button', '#main-button']);
  });
});

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
