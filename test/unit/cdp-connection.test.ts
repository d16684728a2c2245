// The CDP connection's own message path, against a websocket server that plays Chromium.

import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { CdpConnection, eventMethodOf } from '../../src/browser/cdp-connection.ts';
import { ConnectionClosedError } from '../../src/browser/cdp-errors.ts';

/** A browser endpoint: records the commands it gets, answers and sends what the test says. */
class FakeBrowser {
  readonly commands: Array<{ id: number; method: string; params: unknown; sessionId?: string }> = [];
  answer: (command: { id: number; method: string }) => object | undefined = (c) => ({ id: c.id, result: { echo: c.method } });
  private readonly server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  private socket: WebSocket | undefined;
  private connected!: Promise<void>;

  async start(): Promise<string> {
    this.connected = new Promise((resolve) =>
      this.server.on('connection', (socket) => {
        this.socket = socket;
        socket.on('message', (data: Buffer) => {
          const command = JSON.parse(data.toString());
          this.commands.push(command);
          const reply = this.answer(command);
          if (reply) socket.send(JSON.stringify(reply));
        });
        resolve();
      }),
    );
    await new Promise<void>((resolve) => this.server.once('listening', resolve));
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}/devtools/browser/fake`;
  }

  async ready(): Promise<void> {
    await this.connected;
  }

  /** Raw text, as Chromium writes it. */
  sendRaw(text: string): void {
    this.socket!.send(text);
  }

  dropConnection(): void {
    this.socket!.terminate();
  }

  close(): Promise<void> {
    for (const client of this.server.clients) client.terminate();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('CdpConnection', () => {
  let browser: FakeBrowser;
  let connection: CdpConnection;

  beforeEach(async () => {
    browser = new FakeBrowser();
    connection = await CdpConnection.connect(await browser.start());
    await browser.ready();
  });
  afterEach(async () => {
    await connection.close();
    await browser.close();
  });

  /** Resolves once a round trip has gone through (every message sent before it has arrived). */
  const roundTrip = () => connection.send('Browser.getVersion');

  it('sends a command with its session and resolves with its result', async () => {
    await expect(connection.send('Runtime.evaluate', { expression: '1' }, 'S1')).resolves.toEqual({ echo: 'Runtime.evaluate' });
    expect(browser.commands[0]).toEqual({ id: 1, method: 'Runtime.evaluate', params: { expression: '1' }, sessionId: 'S1' });
  });

  it('sends a browser-level command without a sessionId', async () => {
    await connection.send('Target.setDiscoverTargets', { discover: true });
    expect(browser.commands[0]).not.toHaveProperty('sessionId');
  });

  it("rejects with Chromium's message (and data) when the command fails", async () => {
    browser.answer = (c) => ({ id: c.id, error: { code: -32000, message: 'No resource with given identifier found', data: 'R1' } });
    await expect(connection.send('Network.getResponseBody', { requestId: 'R1' }, 'S1')).rejects.toThrow('No resource with given identifier found (R1)');
  });

  it('hands events to every handler of their method, with the session', async () => {
    const seen: unknown[] = [];
    connection.on('Runtime.consoleAPICalled', (params, sessionId) => seen.push(['a', params, sessionId]));
    connection.on('Runtime.consoleAPICalled', (params, sessionId) => seen.push(['b', params, sessionId]));
    browser.sendRaw('{"method":"Runtime.consoleAPICalled","params":{"type":"log"},"sessionId":"S1"}');
    await roundTrip();
    expect(seen).toEqual([
      ['a', { type: 'log' }, 'S1'],
      ['b', { type: 'log' }, 'S1'],
    ]);
  });

  it('never parses an event nobody handles', async () => {
    // Not even valid JSON past the method: parsing it would throw.
    browser.sendRaw('{"method":"Network.requestWillBeSentExtraInfo","params":{not json');
    await roundTrip();
    expect(connection.skippedEvents).toBe(1);
  });

  it('stops calling a handler once it is removed', async () => {
    let calls = 0;
    const off = connection.on('Page.loadEventFired', () => calls++);
    browser.sendRaw('{"method":"Page.loadEventFired","params":{"timestamp":1}}');
    await roundTrip();
    off();
    browser.sendRaw('{"method":"Page.loadEventFired","params":{"timestamp":2}}');
    await roundTrip();
    expect(calls).toBe(1);
  });

  it('fails pending commands and reports the loss once when the browser drops the connection', async () => {
    browser.answer = () => undefined;
    let lost = 0;
    connection.onDisconnect(() => lost++);
    const pending = connection.send('Network.getResponseBody', { requestId: 'R1' }, 'S1');
    await new Promise((resolve) => setTimeout(resolve, 20));
    browser.dropConnection();
    await expect(pending).rejects.toThrow(ConnectionClosedError);
    await expect(pending).rejects.toThrow(/CDP connection closed \(Network.getResponseBody\)/);
    expect(lost).toBe(1);
    expect(connection.isConnected).toBe(false);
    await expect(connection.send('Browser.getVersion')).rejects.toThrow(ConnectionClosedError);
  });

  describe('read rest (while a tab loads)', () => {
    const REST_MS = 60;
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const loadEvent = (n: number) => `{"method":"Page.loadEventFired","params":{"timestamp":${n}}}`;

    it('holds what comes during a rest until its end, reads it in order then, and reads at once when the rest is off', async () => {
      const seen: Array<[number, number]> = [];
      const t0 = performance.now();
      connection.on('Page.loadEventFired', (p) => seen.push([p.timestamp, performance.now() - t0]));
      connection.setReadRest(REST_MS);
      browser.sendRaw(loadEvent(1));
      await sleep(15);
      // The first read started a rest: nothing more is delivered until it ends.
      expect(seen.map(([n]) => n)).toEqual([1]);
      browser.sendRaw(loadEvent(2));
      await sleep(5);
      browser.sendRaw(loadEvent(3));
      browser.sendRaw(loadEvent(4));
      await sleep(15);
      expect(seen.map(([n]) => n)).toEqual([1]);
      await sleep(REST_MS);
      expect(seen.map(([n]) => n)).toEqual([1, 2, 3, 4]);
      expect(seen[1]![1]).toBeGreaterThanOrEqual(REST_MS - 1);
      connection.setReadRest(0);
      await sleep(REST_MS);
      browser.sendRaw(loadEvent(5));
      browser.sendRaw(loadEvent(6));
      await sleep(15);
      expect(seen.map(([n]) => n)).toEqual([1, 2, 3, 4, 5, 6]);
    });

    it('reads the socket at most twice a rest, however many messages come during it', async () => {
      let events = 0;
      connection.on('Page.loadEventFired', () => events++);
      // Long enough for the twenty sends below on a busy machine.
      const rest = 400;
      connection.setReadRest(rest);
      browser.sendRaw(loadEvent(0));
      await sleep(15);
      const reads = connection.reads;
      // Twenty messages during one rest, apart: without a rest, about one read each.
      for (let i = 1; i <= 20; i++) {
        browser.sendRaw(loadEvent(i));
        await sleep(1);
      }
      await sleep(rest);
      expect(events).toBe(21);
      // One read that the pause buffers, one at the rest's end for the rest of them.
      expect(connection.reads - reads).toBeLessThanOrEqual(2);
    });

    it('ends a rest when a command is sent, so its answer is not held back', async () => {
      let events = 0;
      connection.on('Page.loadEventFired', () => events++);
      connection.setReadRest(10_000);
      browser.sendRaw(loadEvent(1));
      await sleep(15);
      browser.sendRaw(loadEvent(2));
      await sleep(15);
      expect(events).toBe(1);
      const started = performance.now();
      await expect(connection.send('Runtime.evaluate', { expression: '1' }, 'S1')).resolves.toEqual({ echo: 'Runtime.evaluate' });
      expect(performance.now() - started).toBeLessThan(1000);
      expect(events).toBe(2);
    });

    it('does not rest while a command waits for its answer', async () => {
      browser.answer = () => undefined;
      let events = 0;
      connection.on('Page.loadEventFired', () => events++);
      connection.setReadRest(10_000);
      void connection.send('Network.getResponseBody', { requestId: 'R1' }, 'S1').catch(() => undefined);
      browser.sendRaw(loadEvent(1));
      await sleep(15);
      browser.sendRaw(loadEvent(2));
      await sleep(15);
      expect(events).toBe(2);
    });

    it('reports a connection lost during a rest once the rest ends', async () => {
      let lost = 0;
      connection.onDisconnect(() => lost++);
      connection.setReadRest(REST_MS);
      browser.sendRaw(loadEvent(1));
      await sleep(15);
      browser.dropConnection();
      await sleep(REST_MS + 50);
      expect(lost).toBe(1);
      expect(connection.isConnected).toBe(false);
    });
  });

  it('fails pending commands on close, without reporting a loss', async () => {
    browser.answer = () => undefined;
    let lost = 0;
    connection.onDisconnect(() => lost++);
    const pending = connection.send('Browser.getVersion');
    await connection.close();
    await expect(pending).rejects.toThrow(ConnectionClosedError);
    expect(lost).toBe(0);
  });
});

describe('eventMethodOf', () => {
  it('reads the method of an event off its bytes', () => {
    expect(eventMethodOf(Buffer.from('{"method":"Network.dataReceived","params":{}}'))).toBe('Network.dataReceived');
  });

  it('reads nothing from an answer or any other shape', () => {
    expect(eventMethodOf(Buffer.from('{"id":3,"result":{}}'))).toBeUndefined();
    expect(eventMethodOf(Buffer.from('{"params":{},"method":"A.b"}'))).toBeUndefined();
    expect(eventMethodOf(Buffer.from('{"method":"A.b'))).toBeUndefined();
    expect(eventMethodOf(Buffer.from(''))).toBeUndefined();
  });
});
