// Steps end to end (docs/events.md "Steps") on real Chromium: a Playwright script connected to the
// agent's CDP endpoint marks three steps over a CDPSession (Telemetry.addStep, answered by the
// proxy itself) and an API caller one over HTTP (POST /browsers/{id}/telemetry/steps) before a
// computer batch. The stream shows the steps and the actions and effects that carry them; the
// step_id filter of the history and of the stream gives exactly the second step's actions and
// what they caused; Playwright's own trace command line lists each step as a group with its
// actions in it. Then the limits and bad input, over HTTP and over CDP, and the proof that the
// proxy never relays the method to Chromium.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type CDPSession, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Envelope, TelemetryEvent } from '../../injected/schema.ts';
import { postBatch } from './support/computer-api.ts';
import { SseClient, startRig, TOKEN, until, type TestRig } from './support/harness.ts';
import { readTraceListings } from './support/playwright-trace.ts';

const READ_ONLY_TOKEN = 'steps-read-only-token';
const OTHER_TOKEN = 'steps-other-caller-token';

const FORM = `<!doctype html><html><head><title>steps form</title></head><body>
<input id="q" autocomplete="off">
<button id="send" type="button" onclick="fetch('/steps/api?n=' + document.getElementById('q').value.length).then(() => console.error('steps-sent'))">send</button>
<button id="other" type="button" onclick="console.log('steps-batch-click')">other</button>
<a id="next" href="/steps/next.html">next</a>
</body></html>`;
const NEXT = `<!doctype html><html><head><title>steps next</title></head><body><p>next</p></body></html>`;

type Ev = TelemetryEvent & { data?: Record<string, any> };
interface StepAnswer {
  step_id: string;
  recorded: boolean;
}

describe('steps', () => {
  let rig: TestRig;
  let formUrl: string;
  let nextUrl: string;
  const headers = { authorization: `Bearer ${TOKEN}` };
  const stepsUrl = () => `${rig.agent.url}/browsers/${rig.agent.sessionId}/telemetry/steps`;
  const postStep = (body: unknown, token = TOKEN, extra: Record<string, string> = {}) =>
    fetch(stepsUrl(), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...extra },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const all = () => rig.stream.events as Ev[];

  beforeAll(async () => {
    rig = await startRig({
      tokens: [
        { token: READ_ONLY_TOKEN, scopes: ['telemetry:read'] },
        { token: OTHER_TOKEN, scopes: ['*'] },
      ],
    });
    formUrl = rig.server.route('/steps/form.html', FORM);
    nextUrl = rig.server.route('/steps/next.html', NEXT);
    rig.server.route('/steps/api', '{}', 'application/json');
  });
  afterAll(() => rig?.close());

  describe('a Playwright script with three steps over its CDP session and one over HTTP', () => {
    let browser: Browser;
    let page: Page;
    let session: CDPSession;
    let connectionId: string;
    const marked: Record<'open' | 'send' | 'api' | 'follow', StepAnswer> = {} as never;
    const dir = mkdtempSync(join(tmpdir(), 'bta-steps-'));
    let actions: string[] = [];

    const mark = (params: Record<string, unknown>) => session.send('Telemetry.addStep' as never, params as never) as Promise<StepAnswer>;
    const stepEvent = (stepId: string) => all().find((e) => e.type === 'step' && e.data!.step_id === stepId)!;

    beforeAll(async () => {
      const from = rig.stream.events.length;
      browser = await chromium.connectOverCDP(rig.agent.url, { headers });
      const context = browser.contexts()[0]!;
      page = await context.newPage();
      session = await context.newCDPSession(page);
      connectionId = (
        all()
          .slice(from)
          .find((e) => e.type === 'cdp_connect') as Ev
      ).data!.connection_id as string;

      marked.open = await mark({ name: 'open the form' });
      await page.goto(formUrl);

      marked.send = await mark({ name: 'send the form', data: { field: 'q', attempt: 1 } });
      await page.fill('#q', 'abc');
      await page.click('#send');
      await rig.stream.waitForEvent('console_error', (e) => e.data!.text === 'steps-sent');

      // An API caller's step, then its batch on the same tab (the active one).
      const answer = await postStep({ name: 'click through the API', data: { by: 'batch' } });
      expect(answer.status).toBe(200);
      marked.api = (await answer.json()) as StepAnswer;
      const box = (await page.locator('#other').boundingBox())!;
      const batch = await postBatch(rig, [
        { type: 'click_mouse', click_mouse: { x: Math.round(box.x + box.width / 2), y: Math.round(box.y + box.height / 2) } },
      ]);
      expect(batch.status).toBe(204);
      await rig.stream.waitForEvent('console_log', (e) => e.data!.text === 'steps-batch-click');

      marked.follow = await mark({ name: 'follow the link' });
      await Promise.all([page.waitForURL(/next\.html/), page.click('#next')]);
      await rig.stream.waitForEvent('page_navigation_settled', (e) => e.data!.url === nextUrl);
      await browser.close();
      await rig.stream.waitFor(() => all().some((e) => e.type === 'cdp_disconnect' && e.data!.connection_id === connectionId), 'cdp_disconnect');

      const trace = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/trace`, { headers });
      expect(trace.status).toBe(200);
      writeFileSync(join(dir, 'session.trace.zip'), Buffer.from(await trace.arrayBuffer()));
      actions = actionTitles((await readTraceListings(dir, join(dir, 'session.trace.zip'))).actions!);
    }, 120_000);

    afterAll(async () => {
      await browser?.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    });

    it('answers each CDP step with its id, recorded', () => {
      for (const step of [marked.open, marked.send, marked.follow])
        expect(step).toEqual({ step_id: expect.stringMatching(/^step-[a-z0-9]+$/), recorded: true });
      expect(new Set(Object.values(marked).map((s) => s.step_id)).size).toBe(4);
    });

    it('streams the four steps in order, each with how it was marked and whose actions it covers', () => {
      const steps = all().filter((e) => e.type === 'step');
      expect(steps.map((e) => [e.data!.name, e.data!.via, e.data!.caller])).toEqual([
        ['open the form', 'cdp', connectionId],
        ['send the form', 'cdp', connectionId],
        ['click through the API', 'http', 'token:1'],
        ['follow the link', 'cdp', connectionId],
      ]);
      expect(steps.every((e) => e.category === 'control' && e.source.kind === 'kernel_api')).toBe(true);
      expect(stepEvent(marked.send.step_id).data).toMatchObject({ data: { field: 'q', attempt: 1 }, connection_id: connectionId });
    });

    it("gives the connection's commands the step it marked last, and none before its first", () => {
      const commands = all().filter((e) => e.type === 'cdp_command' && e.data!.connection_id === connectionId);
      const stepOf = (method: string, eventType?: string) =>
        commands
          .filter((e) => e.data!.method === method && (eventType === undefined || e.data!.event_type === eventType))
          .map((e) => e.data!.step_id as string | undefined);
      expect(stepOf('Target.createTarget')).toEqual([undefined]);
      expect(stepOf('Page.navigate')).toEqual([marked.open.step_id]);
      expect(stepOf('Input.insertText')).toEqual([marked.send.step_id]);
      expect(stepOf('Input.dispatchMouseEvent', 'mousePressed')).toEqual([marked.send.step_id, marked.follow.step_id]);
    });

    it("gives the API caller's batch, its actions and their effects the HTTP step", () => {
      const call = all().find((e) => e.type === 'api_call' && e.data!.operation_id === 'computerBatch')!;
      const click = all().find((e) => e.type === 'computer_action' && e.data!.request_id === call.data!.request_id)!;
      expect([call.data!.step_id, click.data!.step_id]).toEqual([marked.api.step_id, marked.api.step_id]);
      const effect = all().find((e) => e.type === 'console_log' && e.data!.text === 'steps-batch-click')!;
      expect(effect.data).toMatchObject({ caused_by: click.data!.action_id, step_id: marked.api.step_id });
    });

    /** What the second step must give: its event, the connection's actions begun after it and before the next, and what those caused. */
    function expectedOfSecondStep(): number[] {
      const envelopes = rig.stream.envelopes as Array<Envelope & { event: Ev }>;
      const from = stepEvent(marked.send.step_id).ts;
      const to = stepEvent(marked.follow.step_id).ts;
      const mine = envelopes.filter(
        (e) => e.event.type === 'cdp_command' && e.event.data!.connection_id === connectionId && e.event.ts >= from && e.event.ts < to,
      );
      const actionIds = new Set(mine.map((e) => e.event.data!.action_id as string));
      const effects = envelopes.filter((e) => actionIds.has(e.event.data?.caused_by as string));
      expect(mine.length).toBeGreaterThanOrEqual(2);
      expect(effects.some((e) => e.event.type === 'network_request' && String(e.event.data!.url).includes('/steps/api'))).toBe(true);
      expect(effects.some((e) => e.event.type === 'console_error' && e.event.data!.text === 'steps-sent')).toBe(true);
      const step = envelopes.find((e) => e.event.type === 'step' && e.event.data!.step_id === marked.send.step_id)!;
      return [step, ...mine, ...effects].map((e) => e.seq).sort((a, b) => a - b);
    }

    it('reads exactly the second step, its actions and their effects from the history by step_id', async () => {
      const expected = expectedOfSecondStep();
      const res = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/telemetry/events?step_id=${marked.send.step_id}&since=10m&limit=1000`, {
        headers,
      });
      expect(res.status).toBe(200);
      const page = (await res.json()) as Envelope[];
      expect(page.map((e) => e.seq)).toEqual(expected);
    });

    it('streams exactly the same with step_id on the stream', async () => {
      const expected = expectedOfSecondStep();
      const stream = await SseClient.open(`${rig.streamUrl}?replay=all&step_id=${marked.send.step_id}`, TOKEN);
      try {
        await stream.waitFor((s) => s.envelopes.length >= expected.length, 'the second step replayed');
        expect(stream.envelopes.map((e) => e.seq)).toEqual(expected);
      } finally {
        stream.close();
      }
    });

    it("lists each step in Playwright's trace as a group holding its actions and their effects", () => {
      const from = actions.indexOf('open the form');
      expect(from).toBeGreaterThanOrEqual(0);
      const titles = actions
        .slice(from)
        .filter((t) => !t.trim().startsWith('Emulation.'))
        .map((t) => t.replace(/ at [\d.]+,[\d.]+$/, ' at x,y'));
      expect(titles).toEqual([
        'open the form',
        '  Page.navigate',
        `    navigate to ${formUrl}`,
        'send the form',
        '  Input.insertText 3 chars',
        '  Input.dispatchMouseEvent mousePressed at x,y',
        '    click #send',
        'click through the API',
        '  computerBatch → 204',
        '    click_mouse at x,y',
        '      click #other',
        'follow the link',
        '  Input.dispatchMouseEvent mousePressed at x,y',
        '    click #next',
        `    navigate to ${nextUrl}`,
      ]);
    });
  });

  describe('the API caller', () => {
    const recorded = async (res: Response) => {
      expect(res.status).toBe(200);
      const { step_id: stepId } = (await res.json()) as StepAnswer;
      return (await rig.stream.waitForEvent('step', (e) => e.data!.step_id === stepId)).data!;
    };

    it('is the bearer token by its place in the token list, never the token', async () => {
      const data = await recorded(await postStep({ name: 'second token' }, OTHER_TOKEN));
      expect(data.caller).toBe('token:3');
      expect(JSON.stringify(all())).not.toContain(OTHER_TOKEN);
    });

    it("is the gateway's API key, and via mcp when the gateway's MCP server marked it", async () => {
      const data = await recorded(
        await postStep({ name: 'from the gateway' }, TOKEN, { 'x-bta-via-gateway': '1', 'x-bta-caller': 'key:abc', 'x-bta-step-via': 'mcp' }),
      );
      expect([data.caller, data.via]).toEqual(['key:abc', 'mcp']);
    });

    it('ignores what a direct client claims without the gateway header', async () => {
      const data = await recorded(await postStep({ name: 'claims' }, TOKEN, { 'x-bta-caller': 'key:abc', 'x-bta-step-via': 'mcp' }));
      expect([data.caller, data.via]).toEqual(['token:1', 'http']);
    });
  });

  describe('limits and bad input over HTTP', () => {
    const body = async (res: Response) => (await res.json()) as { code: string; message: string; details?: Array<{ field?: string }> };

    it('refuses a name of 201 characters with 400 invalid_input naming name', async () => {
      const res = await postStep({ name: 'n'.repeat(201) });
      expect(res.status).toBe(400);
      expect(await body(res)).toMatchObject({ code: 'invalid_input', details: [{ field: 'name' }] });
    });

    it('refuses data over 16 KB with 413 payload_too_large naming data', async () => {
      const res = await postStep({ name: 'big', data: { s: 'x'.repeat(16 * 1024) } });
      expect(res.status).toBe(413);
      expect(await body(res)).toMatchObject({ code: 'payload_too_large', details: [{ field: 'data' }] });
    });

    it('refuses a number as name, data that is not an object, an unknown field and an unknown parent, each naming it', async () => {
      for (const [input, field] of [
        [{ name: 42 }, 'name'],
        [{ name: 'a', data: 'text' }, 'data'],
        [{ name: 'a', colour: 'red' }, 'colour'],
        [{ name: 'a', parent_id: 'step-never' }, 'parent_id'],
      ] as const) {
        const res = await postStep(input);
        expect(res.status, JSON.stringify(input)).toBe(400);
        expect(await body(res)).toMatchObject({ code: 'invalid_input', details: [{ field }] });
      }
    });

    it('refuses a body that is not JSON with 400 bad_request', async () => {
      const res = await postStep('{"name":');
      expect(res.status).toBe(400);
      expect((await body(res)).code).toBe('bad_request');
    });

    it('refuses a token without telemetry:write with 403, and writes nothing', async () => {
      const before = all().filter((e) => e.type === 'step').length;
      const res = await postStep({ name: 'not allowed' }, READ_ONLY_TOKEN);
      expect(res.status).toBe(403);
      expect((await body(res)).code).toBe('forbidden');
      const after = await postStep({ name: 'a later one' }, OTHER_TOKEN);
      const later = (await after.json()) as StepAnswer;
      await rig.stream.waitForEvent('step', (e) => e.data!.step_id === later.step_id);
      expect(all().filter((e) => e.type === 'step').length).toBe(before + 1);
    });

    it('limits each caller: over its rate 429 rate_limited with Retry-After, while another caller goes on', async () => {
      let res: Response | undefined;
      for (let i = 0; i < 40 && res?.status !== 429; i++) res = await postStep({ name: `burst ${i}` }, OTHER_TOKEN);
      expect(res!.status).toBe(429);
      expect(res!.headers.get('retry-after')).toBe('1');
      expect(await body(res!)).toMatchObject({ code: 'rate_limited' });
      expect((await postStep({ name: 'someone else' })).status).toBe(200);
    });

    it('refuses a bad step_id filter with 400 naming step_id', async () => {
      const res = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/telemetry/events?step_id=a%25b`, { headers });
      expect(res.status).toBe(400);
      expect(await body(res)).toMatchObject({ code: 'invalid_input', details: [{ field: 'step_id' }] });
    });
  });

  describe('Telemetry.addStep on a raw CDP connection', () => {
    let ws: WebSocket;
    const answers: Array<Record<string, any>> = [];
    const answerTo = async (id: number) => {
      await until(() => answers.some((a) => a.id === id), `the answer to ${id}`);
      return answers.filter((a) => a.id === id);
    };

    beforeAll(async () => {
      const version = (await (await fetch(`${rig.agent.url}/json/version`, { headers })).json()) as { webSocketDebuggerUrl: string };
      ws = new WebSocket(version.webSocketDebuggerUrl, { headers });
      ws.on('message', (data: Buffer) => answers.push(JSON.parse(data.toString('utf8')) as Record<string, any>));
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    });
    afterAll(() => ws?.close());

    it('is answered by the proxy alone: Chromium never sees it', async () => {
      // Chromium answers a connection's commands in order: once it answered the second, it would
      // have answered the first too, had it been relayed (with "'Telemetry.addStep' wasn't found").
      ws.send(JSON.stringify({ id: 1, method: 'Telemetry.addStep', params: { name: 'raw client' } }));
      ws.send(JSON.stringify({ id: 2, method: 'Browser.getVersion' }));
      expect((await answerTo(2))[0]!.result.product).toMatch(/Chrome/);
      const first = await answerTo(1);
      expect(first).toEqual([{ id: 1, result: { step_id: expect.stringMatching(/^step-/), recorded: true } }]);
      await rig.stream.waitForEvent('step', (e) => e.data!.step_id === first[0]!.result.step_id);
    });

    it('answers a name too long with a CDP error saying so, and records nothing', async () => {
      ws.send(JSON.stringify({ id: 3, method: 'Telemetry.addStep', params: { name: 'n'.repeat(201) } }));
      ws.send(JSON.stringify({ id: 4, method: 'Browser.getVersion' }));
      await answerTo(4);
      expect(await answerTo(3)).toEqual([
        { id: 3, error: { code: -32602, message: 'Telemetry.addStep: name: at most 200 characters (got 201)', data: 'invalid_input' } },
      ]);
    });

    it('answers data over 16 KB with a CDP error naming data', async () => {
      ws.send(JSON.stringify({ id: 5, method: 'Telemetry.addStep', params: { name: 'big', data: { s: 'x'.repeat(16 * 1024) } } }));
      expect((await answerTo(5))[0]!.error).toMatchObject({
        code: -32602,
        message: expect.stringContaining('data: at most 16384 bytes'),
        data: 'payload_too_large',
      });
    });

    it('refuses a message over 256 KiB from its head, and still never relays it', async () => {
      ws.send(JSON.stringify({ id: 6, method: 'Telemetry.addStep', params: { name: 'huge', data: { s: 'x'.repeat(300 * 1024) } } }));
      ws.send(JSON.stringify({ id: 7, method: 'Browser.getVersion' }));
      await answerTo(7);
      expect(await answerTo(6)).toEqual([{ id: 6, error: { code: -32602, message: expect.stringContaining('over 262144 bytes'), data: 'payload_too_large' } }]);
    });
  });
});

/** The action titles of `playwright trace actions`, in order, indented as nested (the columns: #, time, title, duration). */
function actionTitles(text: string): string[] {
  return text
    .split('\n')
    .map((l) => /^\s+\d+\.\s+\d+:\d+\.\d+ {2}(.*?)\s{2,}\S+\s*✗?$/.exec(l)?.[1]?.trimEnd())
    .filter((t): t is string => t !== undefined);
}
