import Kernel from '@onkernel/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BODY_MIME_TYPES } from '../../src/telemetry/body-policy.ts';
import { consoleText, SseClient, startRig, TOKEN, type Tab, type TestRig } from './support/harness.ts';

const ON = { enabled: true };
const DEFAULT_BODIES = {
  enabled: true,
  resource_types: ['Document', 'XHR', 'Fetch', 'EventSource', 'Other'],
  mime_types: [...DEFAULT_BODY_MIME_TYPES],
  max_bytes: 65536,
};

describe('telemetry config at runtime', () => {
  let rig: TestRig;
  let tab: Tab;

  beforeAll(async () => {
    rig = await startRig({ screenshots: false, keepaliveMs: 100, tokens: [{ token: 'reader', scopes: ['telemetry:read'] }] });
    rig.server.route('/plain.html', '<!doctype html><p>plain</p>');
    tab = await rig.driver.firstPage();
    await tab.ready(rig.stream);
  });
  afterAll(() => rig?.close());

  const browserUrl = () => `${rig.agent.url}/browsers/${rig.agent.sessionId}`;
  const patch = (body: unknown, token = TOKEN) =>
    fetch(browserUrl(), { method: 'PATCH', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  /** Navigate and wait for the load event as seen by the agent: a marker for "everything before has arrived". */
  const navigateAndWait = async (t: Tab) => {
    const loads = rig.stream.ofType('page_load').length;
    await t.navigate(rig.server.url(`/plain.html?${Math.random()}`));
    await rig.stream.waitFor((s) => s.ofType('page_load').length > loads, 'page_load');
  };

  it('answers PATCH with the full effective config and GET shows it', async () => {
    const response = await patch({ telemetry: { browser: { network: { enabled: false } } } });
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.telemetry).toEqual({
      enabled: true,
      browser: {
        console: ON,
        network: { enabled: false, bodies: DEFAULT_BODIES },
        page: ON,
        interaction: ON,
        snapshot: ON,
        // The rig starts with screenshots off (--screenshots off).
        screenshot: { enabled: false },
        control: { ...ON, include_urls: false },
        connection: ON,
        system: ON,
        captcha: ON,
      },
    });
    const get = await (await fetch(browserUrl(), { headers: { authorization: `Bearer ${TOKEN}` } })).json();
    expect(get.telemetry).toEqual(body.telemetry);
    await patch({ telemetry: { browser: { network: { enabled: true } } } });
  });

  it('rejects unknown keys with 400 and a detail per problem, changing nothing', async () => {
    const response = await patch({ telemetry: { browser: { console: { enabled: false, level: 'x' }, dom: {} } } });
    expect(response.status).toBe(400);
    const body = await response.json();
    expect(body.code).toBe('invalid_input');
    expect(body.details.map((d: { field: string }) => d.field).sort()).toEqual(['telemetry.browser.console.level', 'telemetry.browser.dom']);
    const get = await (await fetch(browserUrl(), { headers: { authorization: `Bearer ${TOKEN}` } })).json();
    expect(get.telemetry.browser.console.enabled).toBe(true);
  });

  it('takes every category of the official client through browsers.update, and shows them in browsers.retrieve', async () => {
    const client = new Kernel({ baseURL: rig.agent.url, apiKey: TOKEN, maxRetries: 0 });
    const off = { enabled: false };
    const updated = await client.browsers.update(rig.agent.sessionId, {
      telemetry: { browser: { control: off, connection: off, system: off, captcha: off, screenshot: off, console: ON } },
    });
    expect(updated.telemetry?.browser).toMatchObject({ control: off, connection: off, system: off, captcha: off, screenshot: off, console: ON });
    const retrieved = await client.browsers.retrieve(rig.agent.sessionId);
    expect(retrieved.telemetry).toEqual(updated.telemetry);
    await client.browsers.update(rig.agent.sessionId, { telemetry: { browser: { control: ON, connection: ON, system: ON, captcha: ON } } });
  });

  it('sets the body policy with PATCH, all of it shown by GET', async () => {
    const response = await patch({ telemetry: { browser: { network: { bodies: { resource_types: ['Fetch', 'Script'], max_bytes: 10 } } } } });
    expect(response.status).toBe(200);
    expect((await response.json()).telemetry.browser.network.bodies).toEqual({ ...DEFAULT_BODIES, resource_types: ['Fetch', 'Script'], max_bytes: 10 });
    const bad = await patch({ telemetry: { browser: { network: { bodies: { resource_types: ['Scripts'] } } } } });
    expect(bad.status).toBe(400);
    expect((await bad.json()).details.map((d: { field: string }) => d.field)).toEqual(['telemetry.browser.network.bodies.resource_types[0]']);
    await patch({ telemetry: { browser: { network: { bodies: DEFAULT_BODIES } } } });
  });

  it('applies the body policy to the next responses: types, MIME types, size, off', async () => {
    // Every load has URLs of its own (the tag), so its responses are told apart from earlier ones.
    rig.server.handle('/bodies.html', (req, res) => {
      const tag = new URL(req.url!, 'http://x').searchParams.get('t');
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><script src="/bodies.js?t=${tag}"></script><p>bodies</p>`);
    });
    rig.server.route('/bodies.js', 'console.log("script-ran")', 'application/javascript');
    rig.server.route('/bodies.json', '{"abcdefghij":"klmnopqrstuvwxyz"}', 'application/json');
    const responseTo = (path: string) => rig.stream.waitForEvent('network_response', (e) => e.data!.url === rig.server.url(path));
    const load = async (tag: string) => {
      await tab.navigate(rig.server.url(`/bodies.html?t=${tag}`));
      await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'script-ran' && e.data!.url === rig.server.url(`/bodies.html?t=${tag}`));
      await tab.evaluate(`fetch('/bodies.json?t=${tag}').then((r) => r.text())`);
      const [doc, json, script] = await Promise.all([
        responseTo(`/bodies.html?t=${tag}`),
        responseTo(`/bodies.json?t=${tag}`),
        responseTo(`/bodies.js?t=${tag}`),
      ]);
      return { doc: doc.data!.body, json: json.data!.body, script: script.data!.body, jsonTruncated: json.truncated };
    };
    expect(await load('default')).toEqual({
      doc: expect.stringContaining('<p>bodies</p>'),
      json: '{"abcdefghij":"klmnopqrstuvwxyz"}',
      script: undefined,
      jsonTruncated: undefined,
    });
    await patch({ telemetry: { browser: { network: { bodies: { resource_types: ['Fetch', 'Script'], max_bytes: 10 } } } } });
    expect(await load('custom')).toEqual({ doc: undefined, json: '{"abcdefgh', script: 'console.lo', jsonTruncated: true });
    await patch({ telemetry: { browser: { network: { bodies: false } } } });
    expect(await load('off')).toEqual({ doc: undefined, json: undefined, script: undefined, jsonTruncated: undefined });
    await patch({ telemetry: { browser: { network: { bodies: DEFAULT_BODIES } } } });
  });

  it('switches monitor_screenshot on and off at runtime with the screenshot category', async () => {
    const shots = () => rig.stream.ofType('monitor_screenshot').length;
    await patch({ telemetry: { browser: { screenshot: { enabled: true } } } });
    await navigateAndWait(tab);
    await rig.stream.waitFor(() => shots() > 0, 'monitor_screenshot after a load', 10_000);
    await patch({ telemetry: { browser: { screenshot: { enabled: false } } } });
    const before = shots();
    // Past the 2 s interval between captures, and the 1 s wait after a load.
    await new Promise((resolve) => setTimeout(resolve, 2100));
    await navigateAndWait(tab);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(shots()).toBe(before);
  });

  it('needs the telemetry:write scope', async () => {
    const response = await patch({ telemetry: { enabled: true } }, 'reader');
    expect(response.status).toBe(403);
  });

  it('drops console events while console is off, leaving other categories alone, and resumes on every tab', async () => {
    await patch({ telemetry: { browser: { console: { enabled: false } } } });
    await tab.evaluate(`console.log('while-console-off')`);
    const opened = await rig.driver.newTab();
    await navigateAndWait(tab);
    expect(rig.stream.events.some((e) => consoleText(e) === 'while-console-off')).toBe(false);
    expect(rig.stream.ofType('page_load').length).toBeGreaterThan(0);

    await patch({ telemetry: { browser: { console: { enabled: true } } } });
    await tab.evaluate(`console.log('console-back-on')`);
    await opened.evaluate(`console.log('from-tab-opened-while-off')`);
    await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'console-back-on');
    await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'from-tab-opened-while-off');
    expect(rig.stream.events.some((e) => consoleText(e) === 'while-console-off')).toBe(false);
  });

  it('stops Runtime work when no category needs it, and never reports what was logged meanwhile', async () => {
    const off = { enabled: false };
    await patch({ telemetry: { browser: { console: off, page: off, interaction: off } } });
    await tab.evaluate(`console.log('runtime-off-line')`);
    await patch({ telemetry: { browser: { console: { enabled: true }, page: { enabled: true }, interaction: { enabled: true } } } });
    await tab.evaluate(`console.log('runtime-back')`);
    await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'runtime-back');
    expect(rig.stream.events.some((e) => consoleText(e) === 'runtime-off-line')).toBe(false);
  });

  it('keeps streams open with keepalives only while telemetry is disabled', async () => {
    await patch({ telemetry: { enabled: false } });
    const quiet = await SseClient.open(rig.streamUrl, TOKEN);
    // Everything admitted before the change has a seq up to this one; wait until it has arrived.
    const { seq: lastBefore } = await (await fetch(browserUrl(), { headers: { authorization: `Bearer ${TOKEN}` } })).json();
    await rig.stream.waitFor((s) => (s.frameIds.at(-1) ?? 0) >= lastBefore, 'events admitted before the change');
    const before = rig.stream.envelopes.length;
    await tab.evaluate(`console.log('telemetry-off-line')`);
    await tab.navigate(rig.server.url('/plain.html?off'));
    // Chromium has loaded the page (so its events would have been produced) ...
    const deadline = Date.now() + 10_000;
    while ((await tab.evaluate('document.readyState + location.search')).result.value !== 'complete?off') {
      if (Date.now() > deadline) throw new Error('page did not load');
      await new Promise((r) => setTimeout(r, 50));
    }
    // ... and two keepalives later nothing has reached either stream.
    const keepalives = quiet.keepalives;
    await quiet.waitFor((s) => s.keepalives >= keepalives + 2, 'keepalives');
    expect(quiet.envelopes).toEqual([]);
    expect(rig.stream.envelopes.length).toBe(before);
    expect(quiet.ended).toBe(false);
    quiet.close();

    await patch({ telemetry: { enabled: true } });
    await tab.evaluate(`console.log('telemetry-on-again')`);
    await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'telemetry-on-again');
  });
});
