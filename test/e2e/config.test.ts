import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleText, SseClient, startRig, TOKEN, type Tab, type TestRig } from './harness.ts';

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
      browser: { console: { enabled: true }, network: { enabled: false }, page: { enabled: true }, interaction: { enabled: true } },
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
