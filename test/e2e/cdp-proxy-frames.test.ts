// What the CDP endpoint takes from a client (docs/operations.md "CDP endpoint"): every frame is
// parsed before it is relayed or refused, so a command cannot act without its cdp_command (a
// padded frame, a command carried in Target.sendMessageToTarget); a frame over the cap or a binary
// frame closes the connection, counted, and costs the agent no memory.

import { request } from 'node:http';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { MAX_CLIENT_FRAME_BYTES } from '../../src/cdp-proxy/cdp-proxy.ts';
import { startRig, TOKEN, until, type TestRig } from './support/harness.ts';

type Ev = TelemetryEvent & { data?: Record<string, unknown> };
type Answer = { id: number; method?: string; result?: Record<string, unknown>; error?: unknown; params?: Record<string, unknown> };

describe('CDP endpoint: every client frame inspected or refused', () => {
  let rig: TestRig;
  let pageUrl: string;
  let otherUrl: string;
  const headers = { Authorization: `Bearer ${TOKEN}` };

  beforeAll(async () => {
    rig = await startRig();
    pageUrl = rig.server.route('/frames-page.html', '<!doctype html><title>p</title><p>p</p>');
    otherUrl = rig.server.route('/frames-other.html', '<!doctype html><title>o</title><script src="/frames-app.js"></script>');
    rig.server.route('/frames-app.js', 'console.log("loaded")', 'text/javascript');
  });
  afterAll(() => rig?.close());

  const events = (from: number) => rig.stream.events.slice(from) as Ev[];
  const browserUrl = () => `ws://${new URL(rig.agent.url).host}/devtools/browser/x`;

  async function connect(): Promise<{ ws: WebSocket; answers: Answer[]; ask: (frame: string, id: number) => Promise<Answer> }> {
    const ws = new WebSocket(browserUrl(), { headers, maxPayload: 256 * 1024 * 1024 });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const answers: Answer[] = [];
    ws.on('message', (data: Buffer) => answers.push(JSON.parse(data.toString('utf8')) as Answer));
    const ask = async (frame: string, id: number) => {
      ws.send(frame);
      await until(() => answers.some((a) => a.id === id), `answer ${id}`, 30_000);
      return answers.find((a) => a.id === id)!;
    };
    return { ws, answers, ask };
  }

  /** The cdp_disconnect of the one connection opened since `from` (an earlier test's close may land after it). */
  async function disconnectOf(from: number): Promise<Record<string, unknown>> {
    const connectionId = () => events(from).find((e) => e.type === 'cdp_connect')?.data!.connection_id;
    const mine = () => events(from).find((e) => e.type === 'cdp_disconnect' && e.data!.connection_id === connectionId());
    await rig.stream.waitFor(() => mine() !== undefined, 'cdp_disconnect');
    return mine()!.data!;
  }

  const closed = (ws: WebSocket) => new Promise<{ code: number }>((resolve) => ws.once('close', (code) => resolve({ code })));

  async function pageTargets(): Promise<string[]> {
    const list = (await (await fetch(`${rig.agent.url}/json/list`, { headers })).json()) as Array<{ type: string; id: string }>;
    return list.filter((t) => t.type === 'page').map((t) => t.id);
  }

  it('records a command padded past 1 MiB with an unknown parameter', async () => {
    const from = rig.stream.events.length;
    const { ws, ask } = await connect();
    const frame = JSON.stringify({ id: 1, method: 'Target.createTarget', params: { url: 'about:blank', padding: 'x'.repeat(1_500_000) } });
    const answer = await ask(frame, 1);
    const targetId = answer.result!.targetId as string;
    expect(typeof targetId).toBe('string');
    await rig.stream.waitFor(() => events(from).some((e) => e.type === 'cdp_command' && e.data!.method === 'Target.createTarget'), 'its cdp_command');
    await ask(JSON.stringify({ id: 2, method: 'Target.closeTarget', params: { targetId } }), 2);
    ws.close();
  });

  it('records a command padded past 1 MiB with trailing whitespace', async () => {
    const from = rig.stream.events.length;
    const { ws, ask } = await connect();
    const frame = JSON.stringify({ id: 1, method: 'Target.createTarget', params: { url: 'about:blank' } }) + ' '.repeat(1_500_000);
    const answer = await ask(frame, 1);
    const targetId = answer.result!.targetId as string;
    await rig.stream.waitFor(() => events(from).some((e) => e.type === 'cdp_command' && e.data!.method === 'Target.createTarget'), 'its cdp_command');
    await ask(JSON.stringify({ id: 2, method: 'Target.closeTarget', params: { targetId } }), 2);
    ws.close();
  });

  it('records a Page.navigate sent inside Target.sendMessageToTarget, and links its effects', async () => {
    const { ws, answers, ask } = await connect();
    const created = await ask(JSON.stringify({ id: 1, method: 'Target.createTarget', params: { url: pageUrl } }), 1);
    const targetId = created.result!.targetId as string;
    const attached = await ask(JSON.stringify({ id: 2, method: 'Target.attachToTarget', params: { targetId, flatten: false } }), 2);
    const sessionId = attached.result!.sessionId as string;
    const from = rig.stream.events.length;
    const inner = JSON.stringify({ id: 7, method: 'Page.navigate', params: { url: otherUrl } });
    await ask(JSON.stringify({ id: 3, method: 'Target.sendMessageToTarget', params: { sessionId, message: inner } }), 3);
    // The inner answer comes back inside Target.receivedMessageFromTarget.
    await until(
      () => answers.some((a) => a.method === 'Target.receivedMessageFromTarget' && String(a.params?.message).startsWith('{"id":7')),
      'the inner answer',
      15_000,
    );
    await rig.stream.waitFor(() => events(from).some((e) => e.type === 'cdp_command' && e.data!.method === 'Page.navigate'), 'the carried command');
    const command = events(from).find((e) => e.type === 'cdp_command' && e.data!.method === 'Page.navigate')!;
    expect(command.data).toMatchObject({ outcome: 'ok', session_id: sessionId, target_id: targetId });
    const actionId = command.data!.action_id;
    // Its effects carry its action id: the navigation's document request, and its page_navigation
    // when there is one (one CI run under load had none for this tab at all: a follow-up).
    await rig.stream.waitFor(
      () => events(from).some((e) => e.type === 'network_request' && String(e.data!.url).includes('/frames-other.html') && e.data!.caused_by === actionId),
      'the navigation request caused by it',
    );
    const navigations = events(from).filter((e) => e.type === 'page_navigation' && String(e.data!.url).includes('/frames-other.html'));
    expect(navigations.every((e) => e.data!.caused_by === actionId)).toBe(true);
    await ask(JSON.stringify({ id: 4, method: 'Target.closeTarget', params: { targetId } }), 4);
    ws.close();
  });

  it('closes a client that sends a frame over the cap with 1009, counted, and relays nothing', async () => {
    const from = rig.stream.events.length;
    const before = await pageTargets();
    const { ws } = await connect();
    const done = closed(ws);
    ws.send(JSON.stringify({ id: 1, method: 'Target.createTarget', params: { url: 'about:blank', padding: 'x'.repeat(MAX_CLIENT_FRAME_BYTES) } }));
    expect((await done).code).toBe(1009);
    expect(await disconnectOf(from)).toMatchObject({ reason: 'context_cancelled', detail: 'frame_too_large' });
    expect(await pageTargets()).toEqual(before);
    const metrics = await (await fetch(`${rig.agent.url}/metrics`, { headers })).text();
    expect(metrics).toMatch(/^bta_cdp_proxy_refused_frames_total\{reason="frame_too_large"\} [1-9]/m);
  });

  it('closes a client that sends a binary frame with 1003, counted', async () => {
    const from = rig.stream.events.length;
    const { ws } = await connect();
    const done = closed(ws);
    ws.send(Buffer.from(JSON.stringify({ id: 1, method: 'Target.createTarget', params: { url: 'about:blank' } })));
    expect((await done).code).toBe(1003);
    expect(await disconnectOf(from)).toMatchObject({ reason: 'context_cancelled', detail: 'binary_frame' });
  });

  it('keeps memory flat while several clients send huge frames, and /healthz answers', async () => {
    // Raw sockets announce a 400 MiB frame and send 48 MiB of it each: nothing in the test holds
    // the frame, so the agent's RSS (this process) shows what the agent buffers.
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const healthz: number[] = [];
    let sending = true;
    const probe = (async () => {
      while (sending) {
        const t0 = performance.now();
        const res = await fetch(`${rig.agent.url}/healthz`);
        expect(res.status).toBe(200);
        healthz.push(performance.now() - t0);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    try {
      await Promise.all(Array.from({ length: 4 }, () => sendHugeFrame(browserUrl(), 400 * 1024 * 1024, 48 * 1024 * 1024)));
    } finally {
      sending = false;
      clearInterval(sampler);
      await probe;
    }
    expect(peak - rssBefore).toBeLessThan(64 * 1024 * 1024);
    expect(Math.max(...healthz)).toBeLessThan(1000);
    const metrics = await (await fetch(`${rig.agent.url}/metrics`, { headers })).text();
    expect(Number(/^bta_cdp_proxy_refused_frames_total\{reason="frame_too_large"\} (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(4);
  });
});

/** Upgrade a raw socket, announce a masked text frame of `announced` bytes, and write `sent` of them (or until the agent closes). */
async function sendHugeFrame(url: string, announced: number, sent: number): Promise<void> {
  const { hostname, port, pathname } = new URL(url);
  const socket = await new Promise<Socket>((resolve, reject) => {
    const req = request({
      host: hostname,
      port,
      path: pathname,
      headers: {
        Authorization: `Bearer ${TOKEN}`,
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': Buffer.from('0123456789abcdef').toString('base64'),
      },
    });
    req.once('upgrade', (_res, sock) => resolve(sock));
    req.once('response', (res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    req.once('error', reject);
    req.end();
  });
  const header = Buffer.alloc(14);
  header[0] = 0x81; // FIN, text
  header[1] = 0x80 | 127; // masked, 64-bit length
  header.writeBigUInt64BE(BigInt(announced), 2);
  // A zero mask: the payload goes as it is.
  const chunk = Buffer.alloc(1024 * 1024, 0x20);
  let ended = false;
  const end = new Promise<void>((resolve) => {
    socket.once('close', () => {
      ended = true;
      resolve();
    });
    socket.on('error', () => undefined);
  });
  socket.write(header);
  for (let written = 0; written < sent && !ended; written += chunk.length) {
    if (!socket.write(chunk)) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), end]);
  }
  socket.destroy();
  await end;
}
