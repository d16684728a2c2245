// A WebSocket's end and its dropped frames are reported however the socket ends (docs/events.md
// "WebSockets and EventSource"): Chromium reports no `Network.webSocketClosed` when the page that
// opened the socket goes away, so the agent reports it itself, with `ended_by` saying how. Real
// Chromium, a local `ws` server that floods the socket past the frame rate limit.

import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { SOCKET_FRAME_BURST } from '../../src/telemetry/socket-family.ts';
import { startRig, TOKEN, type Tab, type TestRig } from './support/harness.ts';

const FLOOD = 600;

describe('a WebSocket that ends without a close', () => {
  let rig: TestRig;
  let wss: WebSocketServer;
  let wsUrl: string;
  let pageUrl: string;
  let otherUrl: string;

  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
    wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((resolve) => wss.once('listening', resolve));
    wss.on('connection', (socket) => {
      socket.on('message', (data) => {
        const text = (data as Buffer).toString('utf8');
        if (text.startsWith('flood ')) for (let i = 0; i < Number(text.slice(6)); i++) socket.send(`f${i}`);
      });
    });
    wsUrl = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/flood`;
    pageUrl = rig.server.route('/socket-page.html', '<!doctype html><title>S</title><p>sockets</p>');
    otherUrl = rig.server.route('/elsewhere.html', '<!doctype html><title>E</title><p>elsewhere</p>');
  }, 60_000);
  afterAll(async () => {
    await rig?.close();
    await new Promise((resolve) => wss?.close(resolve));
  });

  /** A fresh tab whose page opened a socket and received the whole flood; the socket stays open. */
  async function floodedTab(): Promise<{ tab: Tab; requestId: string }> {
    const tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(pageUrl);
    await rig.stream.waitForEvent('page_load', (e) => e.data!.url === pageUrl && e.data!.target_id === tab.targetId);
    const got = (await tab.evaluate(`new Promise((resolve) => {
      const ws = new WebSocket(${JSON.stringify(wsUrl)});
      let n = 0;
      ws.onmessage = () => { if (++n === ${FLOOD}) resolve(n); };
      ws.onopen = () => ws.send('flood ${FLOOD}');
      window.keptSocket = ws;
    })`)) as { result: { value: number } };
    expect(got.result.value).toBe(FLOOD);
    const opened = await rig.stream.waitForEvent('network_websocket_opened', (e) => e.data!.url === wsUrl && e.data!.target_id === tab.targetId);
    return { tab, requestId: opened.data!.request_id };
  }

  /** The socket's frames that reached the log, and its closing events. */
  function recordOf(requestId: string): { frames: number; closed: Array<TelemetryEvent<'network_websocket_closed'>> } {
    return {
      frames: rig.stream.ofType('network_websocket_frame').filter((e) => e.data!.request_id === requestId).length,
      closed: rig.stream.ofType('network_websocket_closed').filter((e) => e.data!.request_id === requestId),
    };
  }

  it('reports the end and the dropped frames of a flooded socket when its page navigates away', async () => {
    const { tab, requestId } = await floodedTab();
    await tab.navigate(otherUrl);
    const closed = await rig.stream.waitForEvent('network_websocket_closed', (e) => e.data!.request_id === requestId);
    await rig.stream.waitForEvent('page_load', (e) => e.data!.url === otherUrl && e.data!.target_id === tab.targetId);
    const { frames, closed: all } = recordOf(requestId);
    expect(frames).toBeGreaterThanOrEqual(SOCKET_FRAME_BURST);
    // The flood and the one frame sent: what did not reach the log was dropped.
    expect(closed.data).toMatchObject({ ended_by: 'navigated', url: wsUrl, target_id: tab.targetId, dropped_frames: FLOOD + 1 - frames });
    expect(all).toHaveLength(1);
  });

  it('reports the end and the dropped frames of a flooded socket when its tab closes', async () => {
    const { tab, requestId } = await floodedTab();
    await tab.close();
    const closed = await rig.stream.waitForEvent('network_websocket_closed', (e) => e.data!.request_id === requestId);
    const { frames, closed: all } = recordOf(requestId);
    expect(closed.data).toMatchObject({ ended_by: 'target_closed', url: wsUrl, target_id: tab.targetId, dropped_frames: FLOOD + 1 - frames });
    expect(all).toHaveLength(1);
  });

  it('reports the end and the dropped frames of a flooded socket when the session is deleted, before the stream ends', async () => {
    const { tab, requestId } = await floodedTab();
    const deleted = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}`, { method: 'DELETE', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(deleted.status).toBeLessThan(300);
    await rig.stream.waitForEnd(15_000);
    const { frames, closed } = recordOf(requestId);
    expect(closed).toHaveLength(1);
    expect(closed[0]!.data).toMatchObject({ ended_by: 'session_end', url: wsUrl, target_id: tab.targetId, dropped_frames: FLOOD + 1 - frames });
  });
});
