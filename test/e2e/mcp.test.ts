// The agent's MCP server (docs/mcp.md) with the MCP SDK's own client, on a real session:
// Playwright through the agent's CDP endpoint clicks a button whose handler gets a 500 from one
// fetch, is refused a connection by another and logs a console error, then crashes its tab
// (chrome://crash). what_went_wrong names the three with the actions that caused them;
// get_request returns the 500's body; get_events pages 5,000 console lines to the end; bad
// arguments are tool errors; add_step needs telemetry:write; and the stdio entry relays a
// desktop client to the agent; get_screenshot shows a replay's frame at a time, in the colour the
// screen had then.

import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRig, TOKEN, type TestRig } from './support/harness.ts';
import { cleanEnv, MAIN, ROOT } from './support/agent-process.ts';
import { openColourPage, waitForPage } from './support/replay-pages.ts';
import { decodePng, near, type Rgb } from './support/video.ts';
import { locateEncoder } from '../../src/replay/encoder-binary.ts';
import { allPages, call, callJson, connectMcp, textBytes, textOf, toolError } from './support/mcp-client.ts';

const READER = 'mcp-reader-token';
const COMPUTER_ONLY = 'mcp-computer-only-token';
const BUDGET = 8192;
const RED: Rgb = [255, 0, 0];
const GREEN: Rgb = [0, 255, 0];

/** The colour in the middle of a picture, decoded by the encoder replays are recorded with. */
async function colourOfImage(image: Buffer): Promise<Rgb | undefined> {
  const { path } = await locateEncoder();
  const decoded = spawnSync(path, ['-v', 'error', '-i', 'pipe:0', '-vf', 'scale=32:32', '-frames:v', '1', '-f', 'image2pipe', '-vcodec', 'png', 'pipe:1'], {
    input: image,
    maxBuffer: 1 << 20,
  });
  if (decoded.status !== 0 || decoded.stdout.length === 0) return undefined;
  const png = decodePng(decoded.stdout);
  const at = (Math.floor(png.height / 2) * png.width + Math.floor(png.width / 2)) * png.channels;
  return [png.pixels[at]!, png.pixels[at + 1]!, png.pixels[at + 2]!];
}

/** A port nothing listens on: a connection to it is refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('MCP on the agent', () => {
  let rig: TestRig;
  let browser: Browser;
  let client: Client;
  let refusedUrl: string;
  let wrong: Record<string, any>;
  let wrongResult: CallToolResult;

  beforeAll(async () => {
    rig = await startRig({
      tokens: [
        { token: READER, scopes: ['telemetry:read'] },
        { token: COMPUTER_ONLY, scopes: ['computer'] },
      ],
    });
    refusedUrl = `http://127.0.0.1:${await closedPort()}/refused`;
    rig.server.handle('/api/broken', (_req, res) => res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"database is down"}'));
    const appUrl = rig.server.route(
      '/app',
      `<!doctype html><title>shop</title><button id="go">checkout</button><script>
        document.getElementById('go').onclick = async () => {
          const response = await fetch('/api/broken');
          console.error('checkout failed: ' + response.status);
          fetch(${JSON.stringify(refusedUrl)}).catch(() => {});
        };
      </script>`,
    );
    browser = await chromium.connectOverCDP(rig.agent.url, { headers: { Authorization: `Bearer ${TOKEN}` } });
    const page = await browser.contexts()[0]!.newPage();
    await page.goto(appUrl);
    // A step marked on Playwright's own connection: the click that follows carries it.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Telemetry.addStep' as never, { name: 'check out' } as never);
    await page.click('#go');
    await rig.stream.waitForEvent('network_loading_failed', (e) => e.data?.url === refusedUrl);
    // The 500's response event comes once its body is fetched: before the crash takes the renderer.
    await rig.stream.waitForEvent('network_response', (e) => e.data?.status === 500);
    await rig.stream.waitForEvent('console_error', (e) => e.data?.text === 'checkout failed: 500');
    // The renderer crashes on this navigation (docs/events.md "Failure signals"); goto rejects.
    await page.goto('chrome://crash').catch(() => undefined);
    await rig.stream.waitForEvent('page_crashed');
    client = await connectMcp(rig.agent.url, TOKEN);
    wrongResult = await call(client, 'what_went_wrong');
    wrong = JSON.parse(textOf(wrongResult)) as Record<string, any>;
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await browser?.close().catch(() => undefined);
    await rig?.close();
  });

  /** The action a finding's caused_by names, as what_went_wrong describes it. */
  const actionOf = (finding: { caused_by?: string }): { action: string; seq: number } => {
    expect(finding.caused_by).toMatch(/^act-/);
    return wrong.actions[finding.caused_by!];
  };

  it('lists its tools to a client with a token', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['what_went_wrong', 'get_events', 'get_request', 'get_screenshot', 'add_step']);
  });

  it('refuses a client without a token with 401', async () => {
    await expect(connectMcp(rig.agent.url, undefined)).rejects.toMatchObject({ code: 401 });
  });

  it('refuses a token without telemetry:read with 403', async () => {
    await expect(connectMcp(rig.agent.url, COMPUTER_ONLY)).rejects.toMatchObject({ code: 403 });
  });

  it('answers GET /mcp with 405: no standalone stream in stateless mode', async () => {
    const response = await fetch(`${rig.agent.url}/mcp`, { headers: { Authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream' } });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
  });

  it('names the failing fetch with the click that caused it', () => {
    const origin = new URL(rig.server.url('/')).origin;
    const broken = wrong.failed_requests.find((group: { origin: string }) => group.origin === origin);
    expect(broken).toMatchObject({ count: 1, outcomes: { '500': 1 } });
    expect(broken.requests[0]).toMatchObject({ url: '/api/broken', status: 500, method: 'GET', resource_type: 'Fetch' });
    expect(actionOf(broken.requests[0])).toMatchObject({ action: 'CDP Input.dispatchMouseEvent mousePressed', step: 'check out' });
    const refused = wrong.failed_requests.find((group: { origin: string }) => group.origin === new URL(refusedUrl).origin);
    expect(refused.requests[0]).toMatchObject({ url: '/refused', error: 'net::ERR_CONNECTION_REFUSED' });
    expect(refused.requests[0].caused_by).toBe(broken.requests[0].caused_by);
  });

  it('names the console error with its count, first occurrence and cause', () => {
    const [error] = wrong.console_errors;
    expect(error).toMatchObject({ text: 'checkout failed: 500', count: 1 });
    expect(error.first.source).toMatch(/\/app:\d+:\d+/);
    expect(actionOf(error.first).action).toBe('CDP Input.dispatchMouseEvent mousePressed');
  });

  it('names the crash with the navigation that caused it', () => {
    const [crash] = wrong.crashes;
    expect(crash).toMatchObject({ what: 'tab crashed', status: expect.stringMatching(/^(crashed|killed|abnormal)$/) });
    const action = actionOf(crash);
    expect(action.action).toBe('CDP Page.navigate');
    expect(wrong.summary).toMatch(/2 failed requests.*1 console error.*1 crash/);
  });

  it('answers within its budget and links the HAR and the trace, which the same token reads', async () => {
    expect(textBytes(wrongResult)).toBeLessThanOrEqual(BUDGET);
    const links = wrongResult.content.filter((item) => item.type === 'resource_link');
    expect(links.map((link) => link.type === 'resource_link' && link.mimeType)).toEqual(['application/json', 'application/zip']);
    for (const link of links) {
      if (link.type !== 'resource_link') continue;
      const response = await fetch(link.uri, { headers: { Authorization: `Bearer ${TOKEN}` } });
      expect(response.status, link.uri).toBe(200);
      await response.arrayBuffer();
    }
  });

  it("gives a finding's cause and all its effects with the caused_by filter", async () => {
    const origin = new URL(rig.server.url('/')).origin;
    const click = wrong.failed_requests.find((group: { origin: string }) => group.origin === origin).requests[0].caused_by as string;
    const answer = await callJson(client, 'get_events', { caused_by: click });
    const events = answer.events as Array<{ type: string; action_id?: string; caused_by?: string; url?: string; text?: string }>;
    // The action is admitted when it ended (docs/events.md "Control fields"): it may follow its first effects.
    const own = events.filter((event) => event.action_id === click);
    expect(own).toEqual([expect.objectContaining({ type: 'cdp_command', action_id: click })]);
    expect(events.filter((event) => event.action_id !== click).every((event) => event.caused_by === click)).toBe(true);
    expect(events).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'network_response', url: rig.server.url('/api/broken') }),
        expect.objectContaining({ type: 'console_error', text: 'checkout failed: 500' }),
        expect.objectContaining({ type: 'network_loading_failed', url: refusedUrl }),
      ]),
    );
    expect(answer.has_more).toBe(false);
  });

  it('returns a request with its body on request, its timing and its cause', async () => {
    const origin = new URL(rig.server.url('/')).origin;
    const example = wrong.failed_requests.find((group: { origin: string }) => group.origin === origin).requests[0];
    const plain = await callJson(client, 'get_request', { request_id: example.request_id, seq: example.seq });
    expect(plain.response).toMatchObject({ status: 500, mime_type: 'application/json' });
    expect(plain.response.body).not.toContain('database is down');
    expect(plain.omitted).toContain('include_body');
    const whole = await callJson(client, 'get_request', { request_id: example.request_id, include_body: true });
    expect(whole.response.body).toBe('{"error":"database is down"}');
    expect(whole.request).toMatchObject({ method: 'GET', resource_type: 'Fetch', initiator: { type: 'script' } });
    expect(whole.request.headers).toBeTypeOf('object');
    expect(whole.timing_ms.total).toBeGreaterThanOrEqual(0);
    expect(whole.caused_by).toMatchObject({ action_id: example.caused_by, action: 'CDP Input.dispatchMouseEvent mousePressed' });
    // The fetch was started by the page's inline script: its initiator is the document's request.
    expect(whole.initiator_chain).toEqual([expect.objectContaining({ url: rig.server.url('/app'), resource_type: 'Document' })]);
  });

  describe('with a live page', () => {
    let page: Page;
    let bulkStart: string;

    beforeAll(async () => {
      page = await browser.contexts()[0]!.newPage();
      const url = rig.server.route('/quiet', '<!doctype html><title>quiet</title><p>quiet page</p>');
      const shots = () => rig.stream.ofType('monitor_screenshot').length;
      const before = shots();
      await page.goto(url);
      try {
        await rig.stream.waitFor(() => shots() > before, 'a screenshot of the page', 5000);
      } catch {
        // A capture within 2 s of the previous one is dropped, not deferred (docs/events.md): a
        // load later than that is captured.
        await page.reload();
        await rig.stream.waitFor(() => shots() > before, 'a screenshot of the reloaded page', 15_000);
      }
      bulkStart = new Date().toISOString();
      // In bursts of 500, each seen by the agent before the next: one burst of 5,000 can keep a
      // loaded machine's agent from its browser health probe for longer than the probe waits.
      for (let from = 0; from < 5000; from += 500) {
        await page.evaluate((start) => {
          for (let i = start; i < start + 500; i++) console.log(`bulk-${i}`);
        }, from);
        await rig.stream.waitForEvent('console_log', (e) => e.data?.text === `bulk-${from + 499}`, 30_000);
      }
    }, 60_000);

    it('pages 5,000 events under the budget to the end, each once and in order', async () => {
      const pages = await allPages(client, { type: 'console_log', since: bulkStart });
      const texts: string[] = [];
      const seqs: number[] = [];
      for (const result of pages) {
        expect(textBytes(result)).toBeLessThanOrEqual(BUDGET);
        for (const event of JSON.parse(textOf(result)).events as Array<{ seq: number; text: string }>) {
          texts.push(event.text);
          seqs.push(event.seq);
        }
      }
      expect(texts).toEqual(Array.from({ length: 5000 }, (_, i) => `bulk-${i}`));
      expect(seqs.every((seq, i) => i === 0 || seq > seqs[i - 1]!)).toBe(true);
      expect(pages.length).toBeGreaterThan(10);
    }, 120_000);

    it('finds events by text, newest first', async () => {
      const answer = await callJson(client, 'get_events', { text: 'BULK-4998', order: 'desc' });
      expect(answer.events.map((e: { text: string }) => e.text)).toEqual(['bulk-4998']);
      expect(answer.has_more).toBe(false);
    });

    it('shows the screenshot nearest an event as an image', async () => {
      const seq = rig.stream.envelopes.filter((e) => e.event.type === 'page_load' && String(e.event.data?.url).endsWith('/quiet')).pop()!.seq;
      const result = await call(client, 'get_screenshot', { seq });
      expect(result.isError).toBeFalsy();
      const image = result.content.find((item) => item.type === 'image');
      expect(image).toMatchObject({ type: 'image', mimeType: 'image/png' });
      expect(
        Buffer.from(image!.type === 'image' ? image!.data : '', 'base64')
          .subarray(1, 4)
          .toString(),
      ).toBe('PNG');
      expect(JSON.parse(textOf(result))).toMatchObject({ source: 'monitor_screenshot', near: `event ${seq}` });
      const latest = await call(client, 'get_screenshot', { at: new Date().toISOString() });
      expect(JSON.parse(textOf(latest))).toMatchObject({ source: 'monitor_screenshot', when: expect.stringMatching(/ms before it$/) });
    });
  });

  describe('with a replay', () => {
    let replayId: string;
    let startedAtMs: number;
    const at = (ms: number) => new Date(startedAtMs + ms).toISOString();

    beforeAll(async () => {
      const headers = { Authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
      const replays = `${rig.agent.url}/browsers/${rig.agent.sessionId}/replays`;
      const tab = await openColourPage(rig);
      const started = (await (await fetch(replays, { method: 'POST', headers, body: JSON.stringify({ framerate: 10 }) })).json()) as {
        replay_id: string;
        started_at: string;
      };
      replayId = started.replay_id;
      startedAtMs = Date.parse(started.started_at);
      // Red until 1.5 s into the recording, green after.
      await tab.evaluate(`runColours([[1500, 'rgb(0,255,0)'], [3000, null]])`);
      await waitForPage(tab, 'window.changes.length === 2');
      const stopped = await fetch(`${replays}/${replayId}/stop`, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}` } });
      expect(stopped.status).toBe(200);
    }, 60_000);

    it('shows the frame of the replay at a time, as the screen was then', async () => {
      for (const [ms, colour] of [
        [700, RED],
        [2500, GREEN],
      ] as const) {
        const result = await call(client, 'get_screenshot', { at: at(ms) });
        expect(JSON.parse(textOf(result))).toMatchObject({ source: 'replay', replay_id: replayId, offset_ms: 0 });
        const image = result.content.find((item) => item.type === 'image');
        expect(image).toMatchObject({ mimeType: 'image/jpeg' });
        const seen = await colourOfImage(Buffer.from(image!.type === 'image' ? image!.data : '', 'base64'));
        expect(near(seen, colour), `${ms} ms: ${JSON.stringify(seen)}`).toBe(true);
      }
    });

    it('links the replay beside the HAR and the trace', async () => {
      const result = await call(client, 'what_went_wrong');
      const uris = result.content.flatMap((item) => (item.type === 'resource_link' ? [item.uri] : []));
      expect(uris).toContain(`${rig.agent.url}/browsers/${rig.agent.sessionId}/replays/${replayId}`);
      expect(uris).toHaveLength(3);
    });

    it('gives a token without the replay scope neither the frames nor the link', async () => {
      const reader = await connectMcp(rig.agent.url, READER);
      try {
        const result = await call(reader, 'get_screenshot', { at: at(2500) });
        expect(JSON.parse(textOf(result)).source).not.toBe('replay');
        const links = (await call(reader, 'what_went_wrong')).content.filter((item) => item.type === 'resource_link');
        expect(links).toHaveLength(2);
      } finally {
        await reader.close();
      }
    });
  });

  it('answers bad arguments with tool errors naming them, and keeps serving', async () => {
    expect(await toolError(client, 'get_events', { type: 'no_such_type' })).toMatch(/unknown event type "no_such_type"/);
    expect(await toolError(client, 'get_events', { since: 'yesterday-ish' })).toMatch(/since: expected an RFC 3339 time/);
    expect(await toolError(client, 'get_events', { cursor: 'not-a-cursor' })).toMatch(/cursor: not a cursor of get_events/);
    expect(await toolError(client, 'get_events', { budget_bytes: 10 })).toMatch(/budget_bytes/);
    expect(await toolError(client, 'get_events', { session_id: 'another-session' })).toMatch(/session_id: this agent serves session/);
    expect(await toolError(client, 'get_request', { request_id: 'a"b' })).toMatch(/request_id: expected a request id/);
    expect(await toolError(client, 'get_request', { request_id: 'no.such.request' })).toMatch(/request_id: no request no.such.request/);
    expect(await toolError(client, 'get_screenshot', { seq: 1, at: '1m' })).toMatch(/seq and at: give one of them/);
    expect(await toolError(client, 'what_went_wrong', { until: 42 })).toMatch(/until/);
    const cursor = (await callJson(client, 'get_events', { limit: 1 })).next_cursor as string;
    expect(await toolError(client, 'get_events', { cursor, type: 'console_log' })).toMatch(/cursor: it carries the query/);
    expect((await client.listTools()).tools).toHaveLength(5);
  });

  it('answers malformed MCP requests with their 4xx, never a 500, and keeps serving', async () => {
    const post = async (body: string, headers: Record<string, string> = {}) => {
      const response = await fetch(`${rig.agent.url}/mcp`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body,
      });
      return [response.status, await response.json()] as const;
    };
    const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    expect(await post('{not json')).toEqual([400, expect.objectContaining({ code: 'bad_request', message: expect.stringMatching(/not valid JSON/) })]);
    expect(await post(list, { accept: 'application/json' })).toEqual([
      406,
      expect.objectContaining({ error: expect.objectContaining({ message: expect.stringMatching(/Not Acceptable/) }) }),
    ]);
    expect(await post('{"hello":1}')).toEqual([400, expect.objectContaining({ error: expect.objectContaining({ code: -32700 }) })]);
    expect(await post(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'no/such/method', params: {} }))).toEqual([
      200,
      expect.objectContaining({ id: 2, error: expect.objectContaining({ code: -32601 }) }),
    ]);
    expect(await toolError(client, 'no_such_tool', {})).toMatch(/Tool no_such_tool not found/);
    const deleted = await fetch(`${rig.agent.url}/mcp`, { method: 'DELETE', headers: { Authorization: `Bearer ${TOKEN}` } });
    expect([deleted.status, deleted.headers.get('allow')]).toEqual([405, 'POST']);
    expect((await client.listTools()).tools).toHaveLength(5);
  });

  it('marks a step over MCP with telemetry:write, and refuses it without', async () => {
    const step = await callJson(client, 'add_step', { name: 'check out', data: { cart: 3 } });
    expect(step).toMatchObject({ step_id: expect.stringMatching(/^step-/), recorded: true });
    const events = await callJson(client, 'get_events', { step_id: step.step_id });
    expect(events.events).toMatchObject([{ type: 'step', name: 'check out', via: 'mcp', data: { cart: 3 }, step_id: step.step_id }]);
    const reader = await connectMcp(rig.agent.url, READER);
    try {
      expect(await toolError(reader, 'add_step', { name: 'not allowed' })).toMatch(/add_step: .*telemetry:write/);
      expect(await toolError(reader, 'add_step', { name: 'x'.repeat(201) })).toMatch(/name/);
    } finally {
      await reader.close();
    }
  });

  it("serves the debug_session prompt with the session's links", async () => {
    const { prompts } = await client.listPrompts();
    expect(prompts.map((prompt) => prompt.name)).toEqual(['debug_session']);
    const prompt = await client.getPrompt({ name: 'debug_session', arguments: {} });
    const [first, ...links] = prompt.messages;
    expect(first!.content.type === 'text' && first!.content.text).toContain('what_went_wrong');
    // The HAR and the trace, then the replay recorded above.
    expect(links.map((message) => message.content.type === 'resource_link' && message.content.mimeType)).toEqual([
      'application/json',
      'application/zip',
      expect.stringMatching(/^video\//),
    ]);
  });

  describe('the stdio entry (browser-telemetry-agent mcp)', () => {
    it('relays a desktop client over stdio to the agent, the token from the environment', async () => {
      const stdio = new McpClient({ name: 'desktop', version: '1.0.0' });
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [MAIN, 'mcp', '--url', rig.agent.url],
        cwd: ROOT,
        env: cleanEnv({ BROWSER_TELEMETRY_TOKEN: TOKEN }) as Record<string, string>,
        stderr: 'pipe',
      });
      await stdio.connect(transport);
      try {
        expect((await stdio.listTools()).tools.map((tool) => tool.name)).toContain('what_went_wrong');
        const result = (await stdio.callTool({ name: 'what_went_wrong', arguments: {} })) as CallToolResult;
        expect(JSON.parse(textOf(result)).summary).toMatch(/2 failed requests.*1 console error.*1 crash/);
        expect(await toolError(stdio, 'get_events', { type: 'no_such_type' })).toMatch(/unknown event type/);
      } finally {
        await stdio.close();
      }
    }, 30_000);

    it('answers every request with the remote refusal when the token is wrong', async () => {
      const stdio = new McpClient({ name: 'desktop', version: '1.0.0' });
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [MAIN, 'mcp', '--url', `${rig.agent.url}/mcp`],
        cwd: ROOT,
        env: cleanEnv({ BROWSER_TELEMETRY_TOKEN: 'wrong-token' }) as Record<string, string>,
        stderr: 'pipe',
      });
      await expect(stdio.connect(transport)).rejects.toThrow(/answered HTTP 401: .*invalid bearer token/);
      await stdio.close();
    }, 30_000);

    it('refuses a token on the command line, and starts without one in the environment not at all', () => {
      const run = (args: string[], env: NodeJS.ProcessEnv) => spawnSync(process.execPath, [MAIN, 'mcp', ...args], { cwd: ROOT, env, encoding: 'utf8' });
      const onArgv = run(['--url', rig.agent.url, '--token', TOKEN], cleanEnv({ BROWSER_TELEMETRY_TOKEN: TOKEN }));
      expect([onArgv.status, onArgv.stderr]).toEqual([
        2,
        expect.stringMatching(/--token: the token is read from BROWSER_TELEMETRY_TOKEN, never from the command line/),
      ]);
      const unset = run(['--url', rig.agent.url], cleanEnv());
      expect([unset.status, unset.stderr]).toEqual([2, expect.stringMatching(/BROWSER_TELEMETRY_TOKEN is not set/)]);
      expect(unset.stdout).toBe('');
    });
  });
});
