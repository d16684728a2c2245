// WebSockets and EventSource (docs/events.md "WebSockets and EventSource") on real Chromium: an
// echo server on localhost (the `ws` package) with text and binary frames, an EventSource
// endpoint, the frame rate limit, and the HAR's `_webSocketMessages` (docs/export.md "HAR").

import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { HarEntry } from '../../src/export/har.ts';
import { SOCKET_FRAME_BURST } from '../../src/telemetry/socket-family.ts';
import { harValidator } from '../unit/support/har-validator.ts';
import { startRig, TOKEN, type Tab, type TestRig } from './support/harness.ts';

describe('WebSockets and EventSource', () => {
  let rig: TestRig;
  let tab: Tab;
  let wss: WebSocketServer;
  let wsUrl: string;
  let pageUrl: string;

  const patchBodies = (bodies: object) =>
    fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ telemetry: { browser: { network: { bodies } } } }),
    });

  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
    wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((resolve) => wss.once('listening', resolve));
    wss.on('connection', (socket) => {
      socket.on('message', (data, isBinary) => {
        const text = isBinary ? '' : (data as Buffer).toString('utf8');
        if (text === 'close-me') socket.close(4001, 'bye');
        else if (text.startsWith('flood ')) for (let i = 0; i < Number(text.slice(6)); i++) socket.send(`f${i}`);
        else socket.send(data, { binary: isBinary });
      });
    });
    wsUrl = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/echo`;
    rig.server.handle('/events', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
      res.write('event: greet\nid: 1\ndata: hello\n\n');
      res.write('data: second\n\n');
      res.end();
    });
    pageUrl = rig.server.route('/sockets.html', '<!doctype html><title>S</title><p>sockets</p>');
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(pageUrl);
    await rig.stream.waitForEvent('page_load', (e) => e.data!.url === pageUrl);
  }, 60_000);
  afterAll(async () => {
    await rig?.close();
    await new Promise((resolve) => wss?.close(resolve));
  });

  /** Opens a socket in the page, runs `body` with it (`ws`), resolves once the page saw it close. */
  const inPage = (body: string) =>
    tab.evaluate(`new Promise((resolve) => {
      const ws = new WebSocket(${JSON.stringify(wsUrl)});
      ws.binaryType = 'arraybuffer';
      const got = [];
      ws.onmessage = (m) => got.push(typeof m.data === 'string' ? m.data : 'binary:' + m.data.byteLength);
      ws.onclose = (e) => resolve({ got, code: e.code, reason: e.reason });
      ws.onopen = async () => { ${body} };
    })`);

  it('reports the opening, text and binary frames both ways, and the close (Chromium 153 reports no close code or reason)', async () => {
    const result = (await inPage(
      `ws.send('hi there'); ws.send(new Uint8Array([1, 2, 3, 250])); await new Promise((r) => setTimeout(r, 300)); ws.send('close-me');`,
    )) as {
      result: { value: { got: string[]; code: number; reason: string } };
    };
    expect(result.result.value).toEqual({ got: ['hi there', 'binary:4'], code: 4001, reason: 'bye' });
    const opened = await rig.stream.waitForEvent('network_websocket_opened', (e) => e.data!.url === wsUrl);
    expect(opened.data).toMatchObject({ target_id: tab.targetId, status: 101, status_text: 'Switching Protocols' });
    expect(opened.data!.headers).toMatchObject({ Upgrade: 'websocket' });
    expect(Object.keys(opened.data!.request_headers).map((h) => h.toLowerCase())).toContain('sec-websocket-key');
    const id = opened.data!.request_id;
    const closed = await rig.stream.waitForEvent('network_websocket_closed', (e) => e.data!.request_id === id);
    const frames = rig.stream.ofType('network_websocket_frame').filter((e) => e.data!.request_id === id);
    const summary = (direction: string) =>
      frames.filter((f) => f.data!.direction === direction).map((f) => [f.data!.opcode, f.data!.size, f.data!.payload ?? null]);
    // Binary payloads are off by default (the body policy does not admit application/octet-stream).
    expect(summary('sent')).toEqual([
      [1, 8, 'hi there'],
      [2, 4, null],
      [1, 8, 'close-me'],
    ]);
    expect(summary('received')).toEqual([
      [1, 8, 'hi there'],
      [2, 4, null],
    ]);
    expect(frames[0]!.data!.url).toBe(wsUrl);
    // Chromium reports no close frame over CDP: the code and reason are not known (docs/events.md).
    expect(closed.data).toMatchObject({ request_id: id, url: wsUrl, target_id: tab.targetId, ended_by: 'closed' });
    expect(closed.data!.code).toBeUndefined();
  });

  it('keeps binary payloads as base64 and cuts payloads to max_bytes when the body policy says so', async () => {
    expect((await patchBodies({ mime_types: ['text/*', 'application/octet-stream'], max_bytes: 6 })).status).toBe(200);
    try {
      await inPage(
        `ws.send('abcdefghij'); ws.send(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8])); await new Promise((r) => setTimeout(r, 300)); ws.send('close-me');`,
      );
      const opened = rig.stream.ofType('network_websocket_opened').at(-1)!;
      await rig.stream.waitForEvent('network_websocket_closed', (e) => e.data!.request_id === opened.data!.request_id);
      const frames = rig.stream.ofType('network_websocket_frame').filter((e) => e.data!.request_id === opened.data!.request_id);
      const sentText = frames[0]!;
      expect(sentText.data).toMatchObject({ opcode: 1, size: 10, payload: 'abcdef' });
      expect(sentText.truncated).toBe(true);
      const sentBinary = frames.find((f) => f.data!.opcode === 2)!;
      expect(sentBinary.data).toMatchObject({ size: 8, payload: Buffer.from([1, 2, 3, 4, 5, 6]).toString('base64'), payload_encoding: 'base64' });
      expect(sentBinary.truncated).toBe(true);
    } finally {
      await patchBodies({ mime_types: ['text/*', 'application/json'], max_bytes: 65536 });
    }
  });

  it('drops the frames of a flooding socket over the rate limit and counts them', async () => {
    const flood = 1000;
    await inPage(`ws.send('flood ${flood}'); await new Promise((r) => setTimeout(r, 1000)); ws.send('close-me');`);
    const opened = rig.stream.ofType('network_websocket_opened').at(-1)!;
    const closed = await rig.stream.waitForEvent('network_websocket_closed', (e) => e.data!.request_id === opened.data!.request_id);
    const frames = rig.stream.ofType('network_websocket_frame').filter((e) => e.data!.request_id === opened.data!.request_id);
    // 1002 frames in about a second: the burst and about a second's refill pass.
    expect(frames.length).toBeGreaterThanOrEqual(SOCKET_FRAME_BURST);
    expect(frames.length).toBeLessThan(SOCKET_FRAME_BURST + 250);
    expect(closed.data!.dropped_frames).toBe(flood + 2 - frames.length);
    const metrics = await (await fetch(`${rig.agent.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    expect(metrics).toMatch(/bta_events_dropped_total\{reason="rate_limit"\} ([1-9]\d*)/);
  });

  it('reports an EventSource opening and its messages', async () => {
    await tab.evaluate(
      `new Promise((resolve) => { const es = new EventSource('/events'); let n = 0; const done = () => { if (++n === 2) { es.close(); resolve(); } }; es.addEventListener('greet', done); es.onmessage = done; })`,
    );
    const opened = await rig.stream.waitForEvent('network_eventsource_opened', (e) => e.data!.url!.endsWith('/events'));
    expect(opened.data).toMatchObject({ target_id: tab.targetId, status: 200, status_text: 'OK', headers: { 'content-type': 'text/event-stream' } });
    await rig.stream.waitFor(
      (s) => s.ofType('network_eventsource_message').filter((e) => e.data!.request_id === opened.data!.request_id).length === 2,
      'two messages',
    );
    const messages = rig.stream.ofType('network_eventsource_message').filter((e) => e.data!.request_id === opened.data!.request_id);
    expect(messages.map((m) => [m.data!.event_name, m.data!.event_id, m.data!.size, m.data!.data])).toEqual([
      ['greet', '1', 5, 'hello'],
      ['message', '1', 6, 'second'],
    ]);
  });

  it('carries the WebSockets in the HAR as _webSocketMessages, and the HAR stays valid', async () => {
    const response = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/har?target_id=${tab.targetId}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const har = (await response.json()) as { log: { entries: HarEntry[] } };
    const validate = harValidator();
    expect(validate(har), JSON.stringify(validate.errors)).toBe(true);
    const sockets = har.log.entries.filter((e) => e._resourceType === 'websocket');
    expect(sockets.length).toBeGreaterThanOrEqual(3);
    const first = sockets[0]!;
    expect(first.request.url).toBe(wsUrl);
    expect(first.response.status).toBe(101);
    expect(first.pageref).toBeDefined();
    const messages = (type: string) => first._webSocketMessages!.filter((m) => m.type === type).map((m) => [m.opcode, m.data]);
    expect(messages('send')).toEqual([
      [1, 'hi there'],
      [2, ''],
      [1, 'close-me'],
    ]);
    expect(messages('receive')).toEqual([
      [1, 'hi there'],
      [2, ''],
    ]);
    expect(first._webSocketMessages![0]!.time).toBeGreaterThan(1.7e9);
    expect(first.comment).toContain('2 frame payloads not kept');
  });
});
