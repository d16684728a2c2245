// GET /browsers/{id}/trace through the gateway (docs/export.md "Playwright trace", docs/gateway.md
// "Reading"), with a real agent program on real headless Chromium: while the session is live the
// agent's trace is forwarded; once it was deleted and its agent is gone the trace is built from the
// archive, and Playwright's own command line and viewer read the same session from it.

import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayRig } from './support/gateway-harness.ts';
import { AgentProgram } from './support/gateway-processes.ts';
import { gatewaySuite, readyTab } from './support/gateway-suite.ts';
import { SseClient } from '../../../test/e2e/support/harness.ts';
import { openTraceViewer, readTraceListings } from '../../../test/e2e/support/playwright-trace.ts';

const AGENT_TOKEN = 'agent-token-of-the-trace-tests';
const PAGE = `<!doctype html><title>gateway trace</title><button id="b" onclick="console.error('gateway-trace-clicked')">go</button>
<script>fetch('http://127.0.0.1:9/gateway-trace-refused').catch(() => {}); setTimeout(function gatewayThrows() { null.gatewayBoom(); }, 0);</script>`;
const suite = gatewaySuite('gateway-trace-test', PAGE);

/** `playwright trace open` on a zip, then the listing subcommands, each in its own directory. */
async function readTrace(zipBytes: Buffer): Promise<Record<string, string>> {
  const dir = mkdtempSync(join(tmpdir(), 'bta-gateway-trace-'));
  try {
    const zip = join(dir, 'session.trace.zip');
    writeFileSync(zip, zipBytes);
    return await readTraceListings(dir, zip);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the trace through the gateway', () => {
  let rig: GatewayRig;
  let agent: AgentProgram;
  let id: string;
  let live: Record<string, string>;
  let ended: Record<string, string>;
  let endedZip: Buffer;
  let liveStatus: number;
  let endedType: string | null;

  beforeAll(async () => {
    [rig, agent] = await Promise.all([
      suite.storages.fresh('sqlite').then((storage) => GatewayRig.start(storage, { archiveLeaseMs: 1000 })),
      AgentProgram.start(suite.bundles, AGENT_TOKEN),
    ]);
    id = agent.sessionId;
    expect((await rig.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: AGENT_TOKEN })).status).toBe(201);
    const { driver, tab } = await readyTab(agent.url, id, agent.browserWsUrl(), AGENT_TOKEN);
    await tab.navigate(suite.fixtures.url('/page'));
    const watcher = await SseClient.open(`${agent.url}/browsers/${id}/telemetry?replay=all`, AGENT_TOKEN);
    await watcher.waitForEvent('page_load', (e) => e.data!.url === suite.fixtures.url('/page'));
    await watcher.waitForEvent('console_error', (e) => (e.data!.text ?? '').includes('gatewayBoom'));
    await watcher.waitForEvent('network_loading_failed', () => true);
    // A click through the gateway's computer batch.
    const at = (
      await tab.evaluate(
        `(() => { const r = document.getElementById('b').getBoundingClientRect(); return { x: Math.round(r.left + r.width / 2), y: Math.round(r.top + r.height / 2) }; })()`,
      )
    ).result.value as { x: number; y: number };
    const batch = await rig.fetch(`/browsers/${id}/computer/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ actions: [{ type: 'click_mouse', click_mouse: at }] }),
    });
    expect(batch.status).toBe(204);
    await watcher.waitForEvent('console_error', (e) => e.data!.text === 'gateway-trace-clicked');
    await watcher.waitForEvent('interaction_click', (e) => e.data!.selector === '#b');
    watcher.close();

    const liveResponse = await rig.fetch(`/browsers/${id}/trace`);
    liveStatus = liveResponse.status;
    live = await readTrace(Buffer.from(await liveResponse.arrayBuffer()));

    expect((await rig.fetch(`/browsers/${id}`, { method: 'DELETE' })).status).toBeLessThan(300);
    await driver.close().catch(() => undefined);
    await agent.stop();
    const endedResponse = await rig.fetch(`/browsers/${id}/trace`);
    endedType = endedResponse.headers.get('content-type');
    endedZip = Buffer.from(await endedResponse.arrayBuffer());
    ended = await readTrace(endedZip);
  }, 120_000);

  afterAll(async () => {
    await agent?.kill();
    await rig?.close();
  });

  it("forwards a live session's trace from its agent", () => {
    expect(liveStatus).toBe(200);
    expect(live.actions).toContain('click #b');
    expect(live.console).toContain('gateway-trace-clicked');
  });

  it("builds an ended session's trace from the archive, a zip", () => {
    expect(endedType).toBe('application/zip');
    expect(ended.open).toMatch(/Browser:\s+chromium/);
  });

  it('lists the same actions, requests, console and errors as the live one', () => {
    for (const name of ['actions', 'requests', 'console', 'errors']) expect(ended[name], name).toBe(live[name]);
  });

  it('lists what the session did: the click, the page, the refused fetch, the console error, the uncaught error', () => {
    expect(ended.actions).toMatch(/navigate to .*\/page/);
    expect(ended.actions).toContain('click #b');
    expect(ended.requests).toMatch(/GET\s+200\s+page/);
    expect(ended.requests).toMatch(/GET\s+ERR\s+gateway-trace-refused/);
    expect(ended.console).toMatch(/error\s+gateway-trace-clicked/);
    expect(ended.errors).toMatch(/gatewayBoom/);
  });

  it('answers 400 naming the field for a bad query, before reading the archive', async () => {
    const response = await rig.fetch(`/browsers/${id}/trace?until=tomorrow`);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'invalid_input', details: [{ field: 'until' }] });
  });

  describe("in Playwright's viewer", () => {
    let viewer: ChildProcess;
    let browser: Browser;
    let dir: string;
    let texts: { actions: string; network: string; console: string };

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'bta-gateway-trace-viewer-'));
      const zip = join(dir, 'ended.trace.zip');
      writeFileSync(zip, endedZip);
      let page: Page;
      ({ process: viewer, browser, page } = await openTraceViewer(zip, dir));
      const actionList = page.locator('.actions-tree-view');
      await actionList.locator('.action-title-method', { hasText: 'click #b' }).waitFor({ timeout: 20_000 });
      const actions = await actionList.innerText();
      await page.locator('.tabbed-pane-tab-label', { hasText: 'Network' }).click();
      const networkTab = page.locator('.tab-content.tab-network');
      await networkTab.getByText('gateway-trace-refused').first().waitFor();
      const network = await networkTab.innerText();
      await page.locator('.tabbed-pane-tab-label', { hasText: 'Console' }).click();
      const consoleTab = page.locator('.tab-content.tab-console');
      await consoleTab.getByText('gateway-trace-clicked').first().waitFor();
      texts = { actions, network, console: await consoleTab.innerText() };
    }, 90_000);

    afterAll(async () => {
      await browser?.close();
      viewer?.kill();
      rmSync(dir, { recursive: true, force: true });
    });

    it("shows the action list, the network tab and the console tab with the session's entries", () => {
      expect(texts.actions).toContain('click #b');
      expect(texts.network).toContain('gateway-trace-refused');
      expect(texts.console).toContain('gateway-trace-clicked');
      expect(texts.console).toContain('gatewayBoom');
    });
  });
});
