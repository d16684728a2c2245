// The browser registry and the forwarded browser paths (docs/gateway.md) with real agents on real
// headless Chromium, through the official SDK pointed at the gateway: the browser object, the
// telemetry stream with resume, computer batches, write_file, delete; agent errors passed
// through; an unreachable agent or a rejected agent token is 502 browser_unavailable.

import type Kernel from '@onkernel/sdk';
import { readFile, stat } from 'node:fs/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../../src/agent.ts';
import { BACKENDS, GatewayRig, rejectionOf, TestStorages, uniqueName } from './support/gateway-harness.ts';
import { consoleText, Driver, SseClient, type Tab } from '../../../test/e2e/support/harness.ts';

const AGENT_TOKEN = 'agent-token-known-only-to-the-gateway';
const storages = new TestStorages();
const scratch = mkdtempSync(join(tmpdir(), 'gateway-browsers-'));
afterAll(async () => {
  await storages.close();
  rmSync(scratch, { recursive: true, force: true });
});

type Envelope = { seq: number; event: { type: string; data?: { text?: string } } };

/** Reads an SDK telemetry stream until `stop` holds for an envelope; returns what was read. */
async function readUntil(stream: AsyncIterable<unknown>, stop: (e: Envelope) => boolean): Promise<Envelope[]> {
  const seen: Envelope[] = [];
  for await (const item of stream) {
    const envelope = item as Envelope;
    seen.push(envelope);
    if (stop(envelope)) break;
  }
  return seen;
}

const isLine = (text: string) => (e: Envelope) => e.event.type === 'console_log' && e.event.data?.text === text;

describe.each(BACKENDS)('browsers through the gateway on %s', (backend) => {
  let rig: GatewayRig;
  let agent: Agent;
  let driver: Driver;
  let tab: Tab;
  let client: Kernel;
  let id: string;
  let projectId: string;

  beforeAll(async () => {
    [rig, agent] = await Promise.all([
      storages.fresh(backend).then((storage) => GatewayRig.start(storage)),
      startAgent({ port: 0, token: AGENT_TOKEN, logLevel: 'silent', screenshots: false }),
    ]);
    id = agent.sessionId;
    client = rig.sdk();
    projectId = (await client.projects.create({ name: uniqueName('with-browser') })).id;
    const registered = await rig.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: AGENT_TOKEN, project_id: projectId });
    if (registered.status !== 201) throw new Error(`registration failed: ${await registered.text()}`);
    driver = await Driver.connect(agent.browserWsUrl);
    tab = await driver.firstPage();
    // The tab is followed once a console line of it reaches a stream.
    const watcher = await SseClient.open(`${agent.url}/browsers/${id}/telemetry`, AGENT_TOKEN);
    await tab.ready(watcher);
    watcher.close();
  });
  afterAll(async () => {
    await driver?.close().catch(() => undefined);
    await agent?.close();
    await rig?.close();
  });

  describe('registration (POST /browsers)', () => {
    it('answers 201 with the session and project, never the agent URL or token', async () => {
      const session = uniqueName('registered');
      const response = await rig.registerBrowser({ session_id: session, agent_url: agent.url, agent_token: AGENT_TOKEN, project_id: projectId });
      const text = await response.text();
      expect([response.status, JSON.parse(text).session_id, text.includes(agent.url), text.includes(AGENT_TOKEN)]).toEqual([201, session, false, false]);
    });

    it('a session id that is registered and live is 409 conflict', async () => {
      const response = await rig.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: AGENT_TOKEN });
      expect([response.status, ((await response.json()) as { code: string }).code, response.headers.get('x-should-retry')]).toEqual([409, 'conflict', 'false']);
    });

    it('an agent_url that is not http(s) is 400 invalid_input naming agent_url', async () => {
      const response = await rig.registerBrowser({ session_id: uniqueName('s'), agent_url: 'ftp://127.0.0.1:1', agent_token: 't' });
      const body = (await response.json()) as { details: Array<{ field: string }> };
      expect([response.status, body.details[0]!.field]).toEqual([400, 'agent_url']);
    });

    it('a missing agent_token is 400 invalid_input naming agent_token', async () => {
      const response = await rig.fetch('/browsers', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ session_id: 's', agent_url: agent.url }),
      });
      const body = (await response.json()) as { details: Array<{ field: string }> };
      expect([response.status, body.details[0]!.field]).toEqual([400, 'agent_token']);
    });

    it('an unknown project is 400 invalid_input naming project_id', async () => {
      const response = await rig.registerBrowser({ session_id: uniqueName('s'), agent_url: agent.url, agent_token: 't', project_id: 'nope' });
      const body = (await response.json()) as { details: Array<{ field: string }> };
      expect([response.status, body.details[0]!.field]).toEqual([400, 'project_id']);
    });
  });

  describe('registration checks with the agent first (--check-agent, the default)', () => {
    let checking: GatewayRig;
    beforeAll(async () => {
      checking = await GatewayRig.start(await storages.fresh(backend), { checkAgent: true });
    });
    afterAll(async () => {
      await checking?.close();
    });

    const registeredIn = async (session: string) => (await checking.fetch(`/browsers/${session}`)).status;

    it("registers the agent's own session (201)", async () => {
      const response = await checking.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: AGENT_TOKEN });
      expect(response.status).toBe(201);
    });

    it('refuses a session id its agent does not serve with 400 invalid_input naming session_id, and registers nothing', async () => {
      const session = uniqueName('not-served');
      const response = await checking.registerBrowser({ session_id: session, agent_url: agent.url, agent_token: AGENT_TOKEN });
      const body = (await response.json()) as { code: string; details: Array<{ field: string }> };
      expect([response.status, body.code, body.details[0]!.field, await registeredIn(session)]).toEqual([400, 'invalid_input', 'session_id', 404]);
    });

    it('refuses an agent_token the agent rejects with 400 invalid_input naming agent_token', async () => {
      const session = uniqueName('wrong-token');
      const response = await checking.registerBrowser({ session_id: session, agent_url: agent.url, agent_token: 'not-the-agent-token' });
      const body = (await response.json()) as { code: string; details: Array<{ field: string }> };
      expect([response.status, body.code, body.details[0]!.field, await registeredIn(session)]).toEqual([400, 'invalid_input', 'agent_token', 404]);
    });

    it('answers an agent that cannot be reached with 502 browser_unavailable, and registers nothing', async () => {
      const session = uniqueName('unreachable');
      const response = await checking.registerBrowser({ session_id: session, agent_url: 'http://127.0.0.1:9', agent_token: 't' });
      const body = (await response.json()) as { code: string };
      expect([response.status, body.code, await registeredIn(session)]).toEqual([502, 'browser_unavailable', 404]);
    });
  });

  describe('GET /browsers/{id}', () => {
    it("returns the agent's browser object", async () => {
      const browser = (await client.browsers.retrieve(id)) as unknown as Record<string, unknown>;
      expect([browser.session_id, browser.cdp_connected]).toEqual([id, true]);
    });

    it('an unregistered id is 404 not_found', async () => {
      const response = await rig.fetch('/browsers/never-registered');
      expect([response.status, ((await response.json()) as { code: string }).code]).toEqual([404, 'not_found']);
    });
  });

  describe('PATCH /browsers/{id}', () => {
    it("forwards the body and returns the agent's answer", async () => {
      const response = await rig.fetch(`/browsers/${id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ telemetry: { browser: { interaction: { enabled: true } } } }),
      });
      expect([response.status, ((await response.json()) as { session_id: string }).session_id]).toEqual([200, id]);
    });

    it("the agent's validation error reaches the client unchanged", async () => {
      const response = await rig.fetch(`/browsers/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{"bogus":1}' });
      const body = (await response.json()) as { code: string; details: Array<{ field: string }> };
      expect([response.status, body.code, body.details[0]!.field]).toEqual([400, 'invalid_input', 'bogus']);
    });
  });

  describe('browsers.telemetry.stream', () => {
    it("delivers the agent's events", async () => {
      const marker = uniqueName('streamed');
      const stream = await client.browsers.telemetry.stream(id, {});
      const reading = readUntil(stream, isLine(marker));
      await tab.evaluate(`console.log(${JSON.stringify(marker)})`);
      const seen = await reading;
      expect(seen.at(-1)!.event.data!.text).toBe(marker);
    });

    it('with replay=all starts at the oldest retained event', async () => {
      const stream = await client.browsers.telemetry.stream(id, { replay: 'all' });
      const [first] = await readUntil(stream, () => true);
      expect(first!.seq).toBe(1);
    });

    it('resumes after Last-Event-ID without a gap', async () => {
      const before = uniqueName('before-resume');
      const after = uniqueName('after-resume');
      const first = await client.browsers.telemetry.stream(id, {});
      const reading = readUntil(first, isLine(before));
      await tab.evaluate(`console.log(${JSON.stringify(before)})`);
      const lastSeq = (await reading).at(-1)!.seq;
      // Events that happen while no stream is open are delivered on resume.
      await tab.evaluate(`console.log(${JSON.stringify(after)})`);
      const resumed = await readUntil(await client.browsers.telemetry.stream(id, { 'Last-Event-ID': String(lastSeq) }), isLine(after));
      // The oracle is the same reader from the start: opt-in categories (a page snapshot) take
      // seqs that a default reader is not sent, so seqs need not be contiguous.
      const whole = await readUntil(await client.browsers.telemetry.stream(id, { replay: 'all' }), isLine(after));
      expect(resumed.map((e) => e.seq)).toEqual(whole.filter((e) => e.seq > lastSeq).map((e) => e.seq));
      expect(resumed[0]!.seq).toBeGreaterThan(lastSeq);
    });

    it('passes the SSE headers of the agent through and flushes them at once', async () => {
      const sse = await SseClient.open(`${rig.url}/browsers/${id}/telemetry`, rig.adminKey);
      sse.close();
      expect([sse.status, sse.headers['content-type'], sse.headers['x-sse-content-type']]).toEqual([200, 'text/event-stream', 'application/json']);
    });

    it("a bad Last-Event-ID is the agent's 400 invalid_input", async () => {
      const response = await rig.fetch(`/browsers/${id}/telemetry`, { headers: { 'last-event-id': 'yesterday' } });
      expect([response.status, ((await response.json()) as { code: string }).code]).toEqual([400, 'invalid_input']);
    });

    it('every frame arrives in order through both /telemetry and /telemetry/stream', async () => {
      const marker = uniqueName('both-paths');
      const [a, b] = await Promise.all([
        SseClient.open(`${rig.url}/browsers/${id}/telemetry`, rig.adminKey),
        SseClient.open(`${rig.url}/browsers/${id}/telemetry/stream`, rig.adminKey),
      ]);
      await tab.evaluate(`console.log(${JSON.stringify(marker)})`);
      await Promise.all([a, b].map((c) => c.waitFor((x) => x.ofType('console_log').some((e) => consoleText(e) === marker), marker)));
      a.close();
      b.close();
      expect([a.problems, b.problems, a.frameIds]).toEqual([[], [], b.frameIds]);
    });
  });

  describe('browsers.computer.batch', () => {
    it('runs a batch on the agent', async () => {
      await client.browsers.computer.batch(id, { actions: [{ type: 'sleep', sleep: { duration_ms: 1 } }] });
      const [line] = await rig.waitForRequests('POST', `/browsers/${id}/computer/batch`, 1);
      expect(line!.res!.statusCode).toBe(204);
    });

    it("an invalid batch is the agent's 400 with its field paths, sent once", async () => {
      const path = `/browsers/${id}/computer/batch`;
      const before = rig.requestsTo('POST', path).length;
      const error = await rejectionOf(client.browsers.computer.batch(id, { actions: [{ type: 'click_mouse', click_mouse: { x: -5, y: 1 } }] as never }));
      const requests = await rig.waitForRequests('POST', path, before + 1);
      expect([error.status, error.error.code, error.error.details[0].field, requests.length - before]).toEqual([
        400,
        'invalid_input',
        'actions[0].click_mouse.x',
        1,
      ]);
    });
  });

  describe('browsers.fs.writeFile', () => {
    it('writes the bytes to the path on the machine of the browser', async () => {
      const target = join(scratch, backend, 'nested', 'hello.txt');
      await client.browsers.fs.writeFile(id, 'hello through the gateway', { path: target });
      expect(await readFile(target, 'utf8')).toBe('hello through the gateway');
    });

    it('applies the mode', async () => {
      const target = join(scratch, backend, 'private.txt');
      await client.browsers.fs.writeFile(id, 'secret', { path: target, mode: '600' });
      expect((await stat(target)).mode & 0o777).toBe(0o600);
    });

    it('streams a large body through whole', async () => {
      const target = join(scratch, backend, 'large.bin');
      const body = Buffer.alloc(8 * 1024 * 1024, 7);
      await client.browsers.fs.writeFile(id, body, { path: target });
      expect((await stat(target)).size).toBe(body.length);
    });

    it("a relative path is the agent's 400 invalid_input with x-should-retry: false", async () => {
      const error = await rejectionOf(client.browsers.fs.writeFile(id, 'x', { path: 'relative.txt' }));
      expect([error.status, error.error.code, error.headers.get('x-should-retry')]).toEqual([400, 'invalid_input', 'false']);
    });
  });

  describe('when the agent cannot serve the request', () => {
    it('an unreachable agent is 502 browser_unavailable', async () => {
      const session = uniqueName('unreachable');
      await rig.registerBrowser({ session_id: session, agent_url: 'http://127.0.0.1:9', agent_token: 't' });
      const response = await rig.fetch(`/browsers/${session}`);
      expect([response.status, ((await response.json()) as { code: string }).code]).toEqual([502, 'browser_unavailable']);
    });

    it("the 502 does not reveal the agent's address", async () => {
      const session = uniqueName('hidden');
      await rig.registerBrowser({ session_id: session, agent_url: 'http://127.0.0.1:9', agent_token: 't' });
      expect(await (await rig.fetch(`/browsers/${session}/telemetry`)).text()).not.toContain('127.0.0.1');
    });

    it('a batch to an unreachable agent fails once, with x-should-retry: false', async () => {
      const session = uniqueName('unreachable-batch');
      await rig.registerBrowser({ session_id: session, agent_url: 'http://127.0.0.1:9', agent_token: 't' });
      const error = await rejectionOf(client.browsers.computer.batch(session, { actions: [{ type: 'sleep', sleep: { duration_ms: 1 } }] }));
      const requests = await rig.waitForRequests('POST', `/browsers/${session}/computer/batch`, 1);
      expect([error.status, error.headers.get('x-should-retry'), requests.length]).toEqual([502, 'false', 1]);
    });

    it('an agent that rejects the registered token is 502 browser_unavailable', async () => {
      const session = uniqueName('wrong-token');
      // The real agent, but the wrong token: the caller's key is fine, the registration is not.
      await rig.registerBrowser({ session_id: session, agent_url: agent.url, agent_token: 'not-the-agent-token' });
      const response = await rig.fetch(`/browsers/${session}`);
      expect([response.status, ((await response.json()) as { code: string }).code]).toEqual([502, 'browser_unavailable']);
    });

    it("the agent's 404 for a session it does not serve reaches the client", async () => {
      const session = uniqueName('elsewhere');
      await rig.registerBrowser({ session_id: session, agent_url: agent.url, agent_token: AGENT_TOKEN });
      const response = await rig.fetch(`/browsers/${session}`);
      expect([response.status, ((await response.json()) as { code: string }).code]).toEqual([404, 'not_found']);
    });
  });

  // Last: ends the session of this suite's agent.
  describe('browsers.deleteByID', () => {
    let stream: SseClient;
    beforeAll(async () => {
      stream = await SseClient.open(`${rig.url}/browsers/${id}/telemetry`, rig.adminKey);
      await client.browsers.deleteByID(id);
    });
    afterAll(() => stream?.close());

    it('ends the session on the agent', async () => {
      const health = (await (await fetch(`${agent.url}/healthz`)).json()) as { status: string };
      expect(health.status).toBe('terminated');
    });

    it('ends open streams through the gateway', async () => {
      await stream.waitForEnd();
      expect(stream.ended).toBe(true);
    });

    it('the browser is 404 afterwards', async () => {
      const response = await rig.fetch(`/browsers/${id}`);
      expect(response.status).toBe(404);
    });

    it('its project can be deleted once its other browsers are gone', async () => {
      // The registrations made above in this project are deleted the same way.
      for (const session of await liveSessionsOf(rig, projectId)) await rig.fetch(`/browsers/${session}`, { method: 'DELETE' });
      await client.projects.delete(projectId);
      expect((await rig.fetch(`/org/projects/${projectId}`)).status).toBe(404);
    });
  });
});

/** Sessions registered live in a project (read from the store: the API has no browser list). */
async function liveSessionsOf(rig: GatewayRig, projectId: string): Promise<string[]> {
  const rows = await rig.gateway.store.db.all<{ session_id: string }>('SELECT session_id FROM browsers WHERE project_id = ? AND deleted_at IS NULL', [
    projectId,
  ]);
  return rows.map((r) => r.session_id);
}
