// The gateway's MCP server (docs/mcp.md) with the MCP SDK's own client, on SQLite and PostgreSQL,
// over a real agent on real Chromium: Playwright through the gateway's CDP endpoint clicks a
// button whose handler gets a 500 and logs an error, then crashes its tab. With an API key the
// client lists the tools and sessions; what_went_wrong names the three with their causes while
// the session is live (archive, then agent) and after its DELETE (the archive alone), with the
// HAR and the trace as links at the gateway that the key reads; get_events pages 5,000 lines to
// the end; get_request returns a body; a key of another project sees neither the session nor its
// telemetry; add_step reaches the live agent and is refused once the session ended; a live
// session's replay is linked at the gateway; the debug_session prompt names the session; bad
// arguments are tool errors; the stdio entry relays a desktop client to the gateway with the key
// from the environment. Without a key: 401.

import { Client as McpClient, type Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../../src/agent.ts';
import { allPages, call, callJson, connectMcp, textBytes, textOf, toolError } from '../../../test/e2e/support/mcp-client.ts';
import { cleanEnv, MAIN, ROOT } from '../../../test/e2e/support/agent-process.ts';
import { BACKENDS, GatewayRig, TestStorages, uniqueName } from './support/gateway-harness.ts';
import { eventually } from './support/gateway-processes.ts';
import { FixtureServer } from '../../../test/e2e/support/harness.ts';

const AGENT_TOKEN = 'agent-token-of-the-mcp-tests';
const storages = new TestStorages();
let fixtures: FixtureServer;
let appUrl: string;

beforeAll(async () => {
  fixtures = await new FixtureServer().start();
  fixtures.handle('/api/broken', (_req, res) => res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"database is down"}'));
  fixtures.route('/favicon.ico', '', 'image/x-icon');
  fixtures.route('/quiet', '<!doctype html><title>quiet</title><p>quiet page</p>');
  appUrl = fixtures.route(
    '/app',
    `<!doctype html><title>shop</title><button id="go">checkout</button><script>
      document.getElementById('go').onclick = async () => {
        const response = await fetch('/api/broken');
        console.error('checkout failed: ' + response.status);
      };
    </script>`,
  );
});
afterAll(async () => {
  await fixtures?.close();
  await storages.close();
});

describe.each(BACKENDS)('MCP on the gateway, %s', (backend) => {
  let rig: GatewayRig;
  let agent: Agent;
  let browser: Browser;
  let page: Page;
  let client: Client;
  let id: string;
  let projectKey: string;
  let otherProjectKey: string;

  /** The session's archived event count, once the archive holds everything the agent logged so far. */
  async function archived(): Promise<void> {
    const latest = ((await (await fetch(`${agent.url}/browsers/${id}`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } })).json()) as { seq: number })
      .seq;
    await eventually(async () => {
      const { sessions } = await callJson<{ sessions: Array<{ session_id: string; event_count: number }> }>(client, 'list_sessions', { status: 'all' });
      return (sessions.find((s) => s.session_id === id)?.event_count ?? 0) >= latest ? true : undefined;
    }, `the archive to reach seq ${latest}`);
  }

  beforeAll(async () => {
    [rig, agent] = await Promise.all([
      storages.fresh(backend).then((storage) => GatewayRig.start(storage, { archiveLeaseMs: 1000 })),
      startAgent({ port: 0, token: AGENT_TOKEN, logLevel: 'silent', screenshots: false }),
    ]);
    const admin = rig.sdk();
    const project = (await admin.projects.create({ name: uniqueName('mcp') })).id;
    const other = (await admin.projects.create({ name: uniqueName('mcp-other') })).id;
    projectKey = (await admin.apiKeys.create({ name: 'mcp project key', project_id: project })).key;
    otherProjectKey = (await admin.apiKeys.create({ name: 'mcp other key', project_id: other })).key;
    id = agent.sessionId;
    const registered = await rig.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: AGENT_TOKEN, project_id: project });
    if (registered.status !== 201) throw new Error(await registered.text());
    browser = await chromium.connectOverCDP(`${rig.url}/browsers/${id}/cdp`, { headers: { Authorization: `Bearer ${projectKey}` } });
    page = await browser.contexts()[0]!.newPage();
    await page.goto(appUrl);
    await Promise.all([page.waitForEvent('console', (message) => message.type() === 'error'), page.click('#go')]);
    client = await connectMcp(rig.url, projectKey);
    // The 500's response event comes once its body is fetched: before the crash takes the renderer.
    await eventually(async () => ((await brokenResponse()) === undefined ? undefined : true), 'the 500 response');
    await page.goto('chrome://crash').catch(() => undefined);
    await eventually(
      async () => ((await callJson(client, 'get_events', { session_id: id, type: 'page_crashed' })).events.length > 0 ? true : undefined),
      'the crash',
    );
  }, 90_000);

  afterAll(async () => {
    await client?.close();
    await browser?.close().catch(() => undefined);
    await agent?.close();
    await rig?.close();
  });

  /** The 500's network_response event, as get_events gives it (the text matches the page's own body too). */
  async function brokenResponse(): Promise<{ seq: number; request_id: string } | undefined> {
    const answer = await callJson(client, 'get_events', { session_id: id, type: 'network_response', text: 'api/broken' });
    return (answer.events as Array<{ seq: number; request_id: string; status: number }>).find((event) => event.status === 500);
  }

  /** The findings of what_went_wrong, checked the same way live and ended. */
  async function checkDigest(): Promise<void> {
    const result = await client.callTool({ name: 'what_went_wrong', arguments: { session_id: id } });
    expect(textBytes(result as never)).toBeLessThanOrEqual(8192);
    const wrong = JSON.parse(textOf(result as never)) as Record<string, any>;
    const [failed] = wrong.failed_requests;
    expect(failed.requests[0]).toMatchObject({ url: '/api/broken', status: 500 });
    const [error] = wrong.console_errors;
    expect(error).toMatchObject({ text: 'checkout failed: 500', count: 1 });
    const [crash] = wrong.crashes;
    expect(crash).toMatchObject({ what: 'tab crashed' });
    expect(wrong.actions[failed.requests[0].caused_by].action).toBe('CDP Input.dispatchMouseEvent mousePressed');
    expect(wrong.actions[error.first.caused_by].action).toBe('CDP Input.dispatchMouseEvent mousePressed');
    expect(wrong.actions[crash.caused_by].action).toBe('CDP Page.navigate');
    await checkExportLinks(result as CallToolResult);
  }

  /** The HAR and the trace are resource links at the gateway, and the project's key reads both. */
  async function checkExportLinks(result: CallToolResult): Promise<void> {
    const links = result.content.flatMap((item) => (item.type === 'resource_link' ? [item] : []));
    const base = `${rig.url}/browsers/${id}`;
    expect(links.slice(0, 2).map((link) => [link.uri, link.mimeType])).toEqual([
      [`${base}/har`, 'application/json'],
      [`${base}/trace`, 'application/zip'],
    ]);
    for (const link of links.slice(0, 2)) {
      const response = await fetch(link.uri, { headers: { Authorization: `Bearer ${projectKey}` } });
      expect(response.status, link.uri).toBe(200);
      await response.arrayBuffer();
    }
  }

  it('lists its tools, list_sessions first, to a client with a key', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['list_sessions', 'what_went_wrong', 'get_events', 'get_request', 'get_screenshot', 'add_step']);
  });

  it('refuses a client without a key with 401', async () => {
    await expect(connectMcp(rig.url, undefined)).rejects.toMatchObject({ code: 401 });
  });

  it('lists the live session with its counts', async () => {
    await archived();
    const { sessions } = await callJson(client, 'list_sessions');
    expect(sessions.find((s: { session_id: string }) => s.session_id === id)).toMatchObject({ status: 'active', error_count: 1, failed_request_count: 1 });
  });

  it('names the failing fetch, the error and the crash with the actions that caused them, while live', async () => {
    await checkDigest();
  });

  it('returns the request with its body', async () => {
    const response = (await brokenResponse())!;
    const request = await callJson(client, 'get_request', { session_id: id, request_id: response.request_id, seq: response.seq, include_body: true });
    expect(request.response).toMatchObject({ status: 500, body: '{"error":"database is down"}' });
  });

  it("hides the session from another project's key, and refuses its telemetry", async () => {
    const other = await connectMcp(rig.url, otherProjectKey);
    try {
      const { sessions } = await callJson(other, 'list_sessions');
      expect(sessions.map((s: { session_id: string }) => s.session_id)).not.toContain(id);
      expect(await toolError(other, 'what_went_wrong', { session_id: id })).toMatch(/session_id: session .* belongs to another project/);
      expect(await toolError(other, 'get_events', { session_id: 'never-registered' })).toMatch(/session_id: no session "never-registered"/);
      expect(await toolError(other, 'get_events', {})).toMatch(/session_id/);
    } finally {
      await other.close();
    }
  });

  it('marks a step in the live session with the key as its caller', async () => {
    const step = await callJson(client, 'add_step', { session_id: id, name: 'check out' });
    expect(step).toMatchObject({ session_id: id, step_id: expect.stringMatching(/^step-/), recorded: true });
    const found = await eventually(async () => {
      const answer = await callJson(client, 'get_events', { session_id: id, step_id: step.step_id });
      return answer.events.length > 0 ? answer : undefined;
    }, 'the step in the record');
    expect(found.events[0]).toMatchObject({ type: 'step', name: 'check out', via: 'mcp', caller: expect.stringMatching(/^key:/) });
  });

  it("links a live session's replay at the gateway, which the key downloads", async () => {
    const headers = { 'content-type': 'application/json' };
    const replays = `/browsers/${id}/replays`;
    const started = await rig.fetch(replays, { method: 'POST', key: projectKey, headers, body: JSON.stringify({ framerate: 10 }) });
    expect(started.status).toBe(201);
    const { replay_id: replayId } = (await started.json()) as { replay_id: string };
    // Something on screen to record: a fresh tab in front (the first one crashed).
    const shown = await browser.contexts()[0]!.newPage();
    await shown.goto(fixtures.url('/quiet'));
    const link = `${rig.url}${replays}/${replayId}`;
    const recording = await call(client, 'what_went_wrong', { session_id: id });
    expect(recording.content).toContainEqual(
      expect.objectContaining({ type: 'resource_link', uri: link, description: expect.stringMatching(/now \(recording\)/) }),
    );
    expect((await rig.fetch(`${replays}/${replayId}/stop`, { method: 'POST', key: projectKey })).status).toBe(200);
    const response = await fetch(link, { headers: { Authorization: `Bearer ${projectKey}` } });
    expect([response.status, response.headers.get('content-type')]).toEqual([200, expect.stringMatching(/^video\//)]);
    expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(0);
    await shown.close();
  }, 60_000);

  it('serves the debug_session prompt for the session, with its HAR and trace at the gateway', async () => {
    const { prompts } = await client.listPrompts();
    expect(prompts.map((prompt) => prompt.name)).toEqual(['debug_session']);
    const prompt = await client.getPrompt({ name: 'debug_session', arguments: { session_id: id } });
    const [first, ...links] = prompt.messages;
    expect(first!.content.type === 'text' && first!.content.text).toContain(`session_id "${id}"`);
    expect(links.slice(0, 2).map((message) => message.content.type === 'resource_link' && message.content.uri)).toEqual([
      `${rig.url}/browsers/${id}/har`,
      `${rig.url}/browsers/${id}/trace`,
    ]);
  });

  it('answers bad arguments with tool errors naming them, and keeps serving', async () => {
    expect(await toolError(client, 'get_events', { session_id: id, type: 'no_such_type' })).toMatch(/unknown event type "no_such_type"/);
    expect(await toolError(client, 'get_events', { session_id: id, cursor: 'not-a-cursor' })).toMatch(/cursor: not a cursor of get_events/);
    expect(await toolError(client, 'get_request', { session_id: id, request_id: 'no.such.request' })).toMatch(/request_id: no request no.such.request/);
    expect(await toolError(client, 'list_sessions', { status: 'sleeping' })).toMatch(/status/);
    expect(await toolError(client, 'list_sessions', { limit: 0 })).toMatch(/limit/);
    expect((await callJson(client, 'list_sessions')).sessions.map((s: { session_id: string }) => s.session_id)).toContain(id);
  });

  it('relays a desktop client over stdio to the gateway, the key from the environment', async () => {
    const stdio = new McpClient({ name: 'desktop', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MAIN, 'mcp', '--url', rig.url],
      cwd: ROOT,
      env: cleanEnv({ BROWSER_TELEMETRY_TOKEN: projectKey }) as Record<string, string>,
      stderr: 'pipe',
    });
    await stdio.connect(transport);
    try {
      const { sessions } = JSON.parse(textOf((await stdio.callTool({ name: 'list_sessions', arguments: {} })) as CallToolResult)) as {
        sessions: Array<{ session_id: string }>;
      };
      expect(sessions.map((s) => s.session_id)).toContain(id);
      const wrong = JSON.parse(textOf((await stdio.callTool({ name: 'what_went_wrong', arguments: { session_id: id } })) as CallToolResult)) as {
        summary: string;
      };
      expect(wrong.summary).toMatch(/1 failed request.*1 console error.*1 crash/);
    } finally {
      await stdio.close();
    }
  }, 30_000);

  it('pages 5,000 events under the budget to the end, each once, across the archive and the agent', async () => {
    const since = new Date().toISOString();
    await page.close().catch(() => undefined);
    const fresh = await browser.contexts()[0]!.newPage();
    await fresh.goto(fixtures.url('/quiet'));
    // In bursts of 500 (see test/e2e/mcp.test.ts).
    for (let from = 0; from < 5000; from += 500) {
      await fresh.evaluate((start) => {
        for (let i = start; i < start + 500; i++) console.log(`bulk-${i}`);
      }, from);
    }
    await eventually(
      async () => ((await callJson(client, 'get_events', { session_id: id, text: 'bulk-4999' })).events.length > 0 ? true : undefined),
      'the last line',
    );
    const pages = await allPages(client, { session_id: id, type: 'console_log', since });
    const texts = pages.flatMap((result) => {
      expect(textBytes(result)).toBeLessThanOrEqual(8192);
      return (JSON.parse(textOf(result)).events as Array<{ text: string }>).map((event) => event.text);
    });
    expect(texts).toEqual(Array.from({ length: 5000 }, (_, i) => `bulk-${i}`));
  }, 120_000);

  describe('after the DELETE', () => {
    beforeAll(async () => {
      await browser.close().catch(() => undefined);
      const deleted = await rig.fetch(`/browsers/${id}`, { method: 'DELETE', key: projectKey });
      expect(deleted.status).toBe(204);
      await agent.close();
    }, 60_000);

    it('still names the three findings and their causes, from the archive alone', async () => {
      await checkDigest();
    });

    it('lists the session ended, and refuses a step into it', async () => {
      const { sessions } = await callJson(client, 'list_sessions', { status: 'ended' });
      expect(sessions.find((s: { session_id: string }) => s.session_id === id)).toMatchObject({ status: 'ended', ended_reason: 'deleted' });
      expect(await toolError(client, 'add_step', { session_id: id, name: 'too late' })).toMatch(/add_step: session .* has ended/);
    });
  });
});
