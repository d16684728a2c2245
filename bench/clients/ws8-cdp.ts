// A minimal flatten-mode CDP client on ws 8 (the project's own `ws`), used by the bare client's
// `ws8` transport to measure what chrome-remote-interface itself costs: it parses each message
// once and dispatches it once, and uses ws 8's native UTF-8 check and pooled frame masks (ws 7,
// which chrome-remote-interface bundles, validates UTF-8 in JavaScript and draws a mask from the
// CSPRNG for every frame it sends).

import { EventEmitter } from 'node:events';
import WebSocket from 'ws';

/** The answer to a command (it has the command's id) or an event (it has a method). */
type Message = { id: number; result?: unknown; error?: { message: string } } | { id?: undefined; method: string; params?: unknown; sessionId?: string };

export class Ws8Cdp extends EventEmitter {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(private readonly socket: WebSocket) {
    super();
    socket.on('message', (data: Buffer) => {
      const message = JSON.parse(data.toString()) as Message;
      if (message.id !== undefined) {
        const waiter = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (message.error) waiter?.reject(new Error(message.error.message));
        else waiter?.resolve(message.result);
      } else {
        // One dispatch per event: { method, params, sessionId }.
        this.emit('event', message);
      }
    });
    socket.on('close', () => {
      for (const waiter of this.pending.values()) waiter.reject(new Error('closed'));
      this.pending.clear();
    });
  }

  static connect(wsUrl: string): Promise<Ws8Cdp> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(wsUrl, { perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
      socket.once('open', () => resolve(new Ws8Cdp(socket)));
      socket.once('error', reject);
    });
  }

  /** The websocket itself: its `message` events carry each CDP message's raw bytes. */
  get websocket(): WebSocket {
    return this.socket;
  }

  send(method: string, params: object = {}, sessionId?: string): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.socket.send(JSON.stringify(sessionId === undefined ? { id, method, params } : { id, method, params, sessionId }));
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.socket.once('close', () => resolve());
      this.socket.close();
    });
  }
}
