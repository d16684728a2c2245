// The live viewer through the gateway (docs/viewer.md "Through the gateway"), on SQLite and on
// PostgreSQL: a link minted with an API key opens the viewer in a real headless Chromium (driven
// over CDP), which shows the live session's console; after the session ended (DELETE through the
// gateway, the agent's process gone) the same cookie shows the archived events. Project scoping
// as the other browser routes; reused and forged tickets 401; the cookie only on its session's
// reads, refused once its key is deleted; the security headers; no ticket or cookie in the log.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChromiumProcess } from '../../../src/browser/chromium-launcher.ts';
import { SECURITY_HEADERS } from '../../../src/http/viewer-routes.ts';
import { BACKENDS, GatewayRig, uniqueName } from './support/gateway-harness.ts';
import { AgentProgram, eventually } from './support/gateway-processes.ts';
import { gatewaySuite } from './support/gateway-suite.ts';
import { Driver, SseClient, type Tab } from '../../../test/e2e/support/harness.ts';

const AGENT_TOKEN = 'agent-token-of-the-gateway-viewer-tests';
const suite = gatewaySuite('gateway-viewer-test', '<!doctype html><title>viewer</title><p>gateway viewer test page</p>');
const { storages } = suite;

/** The viewer's browser: its own headless Chromium, one tab, driven with the harness's Driver. */
class ViewerBrowser {
  private constructor(
    private readonly chromium: ChromiumProcess,
    private readonly driver: Driver,
    readonly tab: Tab,
  ) {}

  static async launch(): Promise<ViewerBrowser> {
    const chromium = await ChromiumProcess.launch();
    const driver = await Driver.connect(chromium.browserWsUrl);
    const tab = await driver.firstPage();
    await tab.send('Runtime.enable');
    await tab.send('Page.enable');
    await tab.send('Network.enable');
    return new ViewerBrowser(chromium, driver, tab);
  }

  async evaluate<T>(expression: string): Promise<T> {
    const { result, exceptionDetails } = await this.tab.evaluate(expression);
    if (exceptionDetails) throw new Error(`viewer: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
    return result.value as T;
  }

  waitFor(expression: string, what: string, timeoutMs = 15_000): Promise<unknown> {
    return eventually(async () => ((await this.evaluate(expression).catch(() => undefined)) ? true : undefined), `the viewer: ${what}`, timeoutMs);
  }

  /** The viewer cookie as the browser holds it (HttpOnly: only CDP sees it). */
  async viewerCookie(url: string): Promise<{ value: string; path: string; httpOnly: boolean; sameSite?: string } | undefined> {
    const { cookies } = (await this.tab.send('Network.getCookies', { urls: [url] })) as {
      cookies: Array<{ name: string; value: string; path: string; httpOnly: boolean; sameSite?: string }>;
    };
    return cookies.find((c) => c.name === 'bta_viewer');
  }

  async close(): Promise<void> {
    await this.driver.close().catch(() => undefined);
    await this.chromium.close();
  }
}

const consoleShows = (text: string) =>
  `[...document.querySelectorAll('#panel-console .console-row .text')].some((e) => e.textContent.includes(${JSON.stringify(text)}))`;

function expectSecurityHeaders(response: Response): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(response.headers.get(name), name).toBe(value);
}

/** Opens a viewer link without a browser: the cookie value it sets (or the failed response). */
async function redeem(url: string): Promise<{ response: Response; cookie: string | undefined }> {
  const response = await fetch(url, { redirect: 'manual' });
  const setCookie = response.headers.get('set-cookie') ?? '';
  const match = /^bta_viewer=([^;]+);/.exec(setCookie);
  return { response, cookie: match?.[1] };
}

describe.each(BACKENDS)('the viewer through the gateway on %s', (backend) => {
  let rig: GatewayRig;
  let agent: AgentProgram;
  let driver: Driver;
  let tab: Tab;
  let viewer: ViewerBrowser;
  let id: string;
  let projectId: string;
  let viewerUrl: string;
  let liveLine: string;
  const secrets: string[] = [];

  beforeAll(async () => {
    [rig, agent, viewer] = await Promise.all([
      storages
        .fresh(backend)
        .then((storage) => GatewayRig.start(storage, { archiveLeaseMs: 1000, viewerSecret: 'a-shared-viewer-secret-of-at-least-32-chars' })),
      AgentProgram.start(suite.bundles, AGENT_TOKEN),
      ViewerBrowser.launch(),
    ]);
    id = agent.sessionId;
    const project = await rig.fetch('/org/projects', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: uniqueName('viewer') }),
    });
    projectId = ((await project.json()) as { id: string }).id;
    const registered = await rig.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: AGENT_TOKEN, project_id: projectId });
    expect(registered.status).toBe(201);
    driver = await Driver.connect(agent.browserWsUrl());
    tab = await driver.firstPage();
    const watcher = await SseClient.open(`${agent.url}/browsers/${id}/telemetry`, AGENT_TOKEN);
    await tab.ready(watcher);
    watcher.close();
    await tab.navigate(suite.fixtures.url('/page'));
    liveLine = uniqueName('live-line');
    await tab.evaluate(`console.log(${JSON.stringify(liveLine)})`);
  }, 90_000);
  afterAll(async () => {
    await viewer?.close();
    await driver?.close().catch(() => undefined);
    await agent?.kill();
    await rig?.close();
  });

  it('mints a one-time link with an API key, no-store, with the security headers', async () => {
    const minted = await rig.fetch(`/browsers/${id}/viewer/sessions`, { method: 'POST' });
    expect(minted.status).toBe(201);
    expect(minted.headers.get('cache-control')).toBe('no-store');
    expectSecurityHeaders(minted);
    const body = (await minted.json()) as { url: string; expires_at: string };
    expect(body.url.startsWith(`${rig.url}/browsers/${id}/viewer/open?code=`)).toBe(true);
    expect(Date.parse(body.expires_at)).toBeGreaterThan(Date.now());
    viewerUrl = body.url;
    secrets.push(new URL(viewerUrl).searchParams.get('code')!);
  });

  it('opens in a real browser: the ticket leaves the address bar and the live console shows', async () => {
    await viewer.tab.send('Page.navigate', { url: viewerUrl });
    await viewer.waitFor(consoleShows(liveLine), 'the live console line');
    expect(await viewer.evaluate<string>('location.href')).toBe(`${rig.url}/browsers/${id}/viewer`);
    const cookie = await viewer.viewerCookie(`${rig.url}/browsers/${id}/telemetry`);
    expect(cookie).toMatchObject({ path: `/browsers/${id}/`, httpOnly: true, sameSite: 'Strict' });
    secrets.push(cookie!.value);
    // A line logged now arrives through the stream the gateway forwards.
    const later = uniqueName('later-line');
    await tab.evaluate(`console.log(${JSON.stringify(later)})`);
    await viewer.waitFor(consoleShows(later), 'a line logged after opening');
  });

  it('a used or forged ticket is 401, with the security headers', async () => {
    const reused = await fetch(viewerUrl, { redirect: 'manual' });
    expect(reused.status).toBe(401);
    expectSecurityHeaders(reused);
    const code = new URL(viewerUrl).searchParams.get('code')!;
    const [payload] = code.split('.');
    const forged = await fetch(`${rig.url}/browsers/${id}/viewer/open?code=${payload}.${'A'.repeat(43)}`, { redirect: 'manual' });
    expect(forged.status).toBe(401);
    expectSecurityHeaders(forged);
    // A ticket of this session used on another session's path.
    const minted = (await (await rig.fetch(`/browsers/${id}/viewer/sessions`, { method: 'POST' })).json()) as { url: string };
    const other = await fetch(minted.url.replace(`/browsers/${id}/`, '/browsers/another-session/'), { redirect: 'manual' });
    expect(other.status).toBe(401);
  });

  it('a project-scoped key of another project gets 403 (an unknown session 404), like the other browser routes', async () => {
    const other = await rig.fetch('/org/projects', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: uniqueName('other') }),
    });
    const otherKey = await rig.createKey({ projectId: ((await other.json()) as { id: string }).id });
    const minted = await rig.fetch(`/browsers/${id}/viewer/sessions`, { method: 'POST', key: otherKey });
    expect(minted.status).toBe(403);
    expect((await rig.fetch(`/browsers/${id}/telemetry/events`, { key: otherKey })).status).toBe(403);
    expect((await rig.fetch('/browsers/no-such-session/viewer/sessions', { method: 'POST' })).status).toBe(404);
    expect((await rig.fetch(`/browsers/${id}/viewer/sessions`, { method: 'POST', key: null })).status).toBe(401);
    // Its own project's key may.
    const ownKey = await rig.createKey({ projectId });
    expect((await rig.fetch(`/browsers/${id}/viewer/sessions`, { method: 'POST', key: ownKey })).status).toBe(201);
  });

  it('the cookie opens only its session’s telemetry reads (GET/HEAD)', async () => {
    const minted = (await (await rig.fetch(`/browsers/${id}/viewer/sessions`, { method: 'POST' })).json()) as { url: string };
    const { cookie } = await redeem(minted.url);
    secrets.push(cookie!);
    const withCookie = (path: string, init: RequestInit = {}) => fetch(`${rig.url}${path}`, { ...init, headers: { cookie: `bta_viewer=${cookie}` } });
    expect((await withCookie(`/browsers/${id}/telemetry/events?limit=1`)).status).toBe(200);
    expect((await withCookie(`/browsers/${id}`)).status).toBe(401);
    expect((await withCookie(`/browsers/${id}`, { method: 'PATCH' })).status).toBe(401);
    expect((await withCookie(`/browsers/${id}/viewer/sessions`, { method: 'POST' })).status).toBe(401);
    expect((await withCookie('/browsers/another-session/telemetry/events')).status).toBe(401);
    expect((await withCookie('/browsers')).status).toBe(401);
    expect((await withCookie('/org/api_keys')).status).toBe(401);
    const forged = await fetch(`${rig.url}/browsers/${id}/telemetry/events`, { headers: { cookie: `bta_viewer=${cookie!.slice(0, -2)}AA` } });
    expect(forged.status).toBe(401);
  });

  it('serves the page and its assets with the security headers', async () => {
    const page = await fetch(`${rig.url}/browsers/${id}/viewer`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expectSecurityHeaders(page);
    const html = await page.text();
    const script = /src="([^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(new URL(script!, `${rig.url}/browsers/${id}/viewer`));
    expect(asset.status).toBe(200);
    expectSecurityHeaders(asset);
    const missing = await fetch(`${rig.url}/browsers/${id}/viewer/assets/nothing.js`);
    expect(missing.status).toBe(404);
    expectSecurityHeaders(missing);
  });

  it('a cookie is refused once the key that minted it is deleted', async () => {
    const created = await rig.fetch('/org/api_keys', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: uniqueName('viewer-key'), project_id: projectId }),
    });
    const key = (await created.json()) as { id: string; key: string };
    const minted = (await (await rig.fetch(`/browsers/${id}/viewer/sessions`, { method: 'POST', key: key.key })).json()) as { url: string };
    const spare = (await (await rig.fetch(`/browsers/${id}/viewer/sessions`, { method: 'POST', key: key.key })).json()) as { url: string };
    const { cookie } = await redeem(minted.url);
    secrets.push(cookie!);
    const read = () => fetch(`${rig.url}/browsers/${id}/telemetry/events?limit=1`, { headers: { cookie: `bta_viewer=${cookie}` } });
    expect((await read()).status).toBe(200);
    expect((await rig.fetch(`/org/api_keys/${key.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await read()).status).toBe(401);
    // A link of that key no longer opens either.
    expect((await redeem(spare.url)).response.status).toBe(401);
  });

  it('after the session ended and its agent is gone, the same cookie shows the archived events', async () => {
    const ended = await rig.fetch(`/browsers/${id}`, { method: 'DELETE' });
    expect(ended.status).toBeLessThan(300);
    await driver.close().catch(() => undefined);
    await agent.stop();
    expect(agent.process.exited).toBe(true);
    await viewer.tab.send('Page.reload', {});
    await viewer.waitFor(consoleShows(liveLine), 'the archived console line');
    const cookie = await viewer.viewerCookie(`${rig.url}/browsers/${id}/telemetry`);
    const events = await fetch(`${rig.url}/browsers/${id}/telemetry/events?limit=1000`, { headers: { cookie: `bta_viewer=${cookie!.value}` } });
    expect(events.status).toBe(200);
    expect(await events.text()).toContain(liveLine);
    // A new link for the ended session works too.
    const minted = await rig.fetch(`/browsers/${id}/viewer/sessions`, { method: 'POST' });
    expect(minted.status).toBe(201);
    const { response } = await redeem(((await minted.json()) as { url: string }).url);
    expect(response.status).toBe(303);
  }, 30_000);

  it('never logs a ticket or a cookie; the ticket parameter is redacted', () => {
    const log = JSON.stringify(rig.logLines);
    expect(secrets.length).toBeGreaterThan(3);
    for (const secret of secrets) expect(log).not.toContain(secret);
    const opens = rig.logLines.filter((l) => l.req?.url?.includes('/viewer/open'));
    expect(opens.length).toBeGreaterThan(0);
    for (const line of opens) expect(line.req!.url).toMatch(/code=\[REDACTED\]$/);
  });
});
