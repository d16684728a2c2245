// One browser-level CDP connection in flatten mode. Every target's session is multiplexed over it
// by sessionId.
//
// The agent owns the transport: a `ws` 8 websocket to the browser's own websocket URL (256 MiB
// messages, no compression, no UTF-8 check of Chromium's text frames: the JSON parse reads them
// anyway), on a TCP socket this module opens, so all it touches is the public API of `ws` and
// Node (docs/decisions.md "The CDP transport"). Per message, the cost is one lookup of its method
// in a handler table, and a JSON parse only when it has a handler or answers a command: Chromium
// writes `method` first in every event, so the method is read off the raw bytes, and an event
// nobody handles (the `*ExtraInfo` events, a third of a page load's messages with their raw
// header blocks) is never parsed at all (docs/performance.md "CDP messages").
//
// While a tab loads, the connection can rest between reads (setReadRest): the socket stops reading,
// so what Chromium sends meanwhile waits in the kernel's buffer and comes in one read, where it
// would otherwise wake the process once per message or two (docs/decisions.md "Chromium's
// messages read in batches while a tab loads").

import type { ClientRequestArgs } from 'node:http';
import { connect as netConnect, type NetConnectOpts, type Socket } from 'node:net';
import type { ProtocolMapping } from 'devtools-protocol/types/protocol-mapping.js';
import WebSocket from 'ws';
import { ConnectionClosedError, IgnoredFailures, ProtocolError } from './cdp-errors.ts';

export type CommandName = keyof ProtocolMapping.Commands;
export type CommandParams<M extends CommandName> = ProtocolMapping.Commands[M]['paramsType'][0];
export type CommandResult<M extends CommandName> = ProtocolMapping.Commands[M]['returnType'];
export type EventName = keyof ProtocolMapping.Events;
export type EventParams<E extends EventName> = ProtocolMapping.Events[E][0];

export type EventHandler<E extends EventName> = (params: EventParams<E>, sessionId: string | undefined) => void;
type AnyHandler = (params: unknown, sessionId: string | undefined) => void;

interface Pending {
  method: string;
  resolve(result: unknown): void;
  reject(error: Error): void;
}

interface Message {
  id?: number;
  method?: string;
  params?: unknown;
  sessionId?: string;
  result?: unknown;
  error?: { code?: number; message: string; data?: string };
}

/**
 * Resolve an endpoint to the browser's websocket URL. `http://host:port` goes through
 * `/json/version` every time, so a browser restarted on the same port is found again.
 */
export async function resolveBrowserWsUrl(endpoint: string, timeoutMs = 5000): Promise<string> {
  if (/^wss?:/i.test(endpoint)) return endpoint;
  const base = endpoint.replace(/\/+$/, '');
  const response = await fetch(`${base}/json/version`, { signal: AbortSignal.timeout(timeoutMs) });
  if (!response.ok) throw new Error(`${base}/json/version answered ${response.status}`);
  const body = (await response.json()) as { webSocketDebuggerUrl?: string };
  if (!body.webSocketDebuggerUrl) throw new Error(`${base}/json/version has no webSocketDebuggerUrl`);
  return body.webSocketDebuggerUrl;
}

/** `{"method":"` as bytes: how every event Chromium sends begins. */
const EVENT_PREFIX = Buffer.from('{"method":"');
const QUOTE = 0x22;
/** Chromium's largest messages (a response body, a screenshot) are a few MiB. */
const MAX_MESSAGE_BYTES = 256 * 1024 * 1024;
const HANDSHAKE_TIMEOUT_MS = 10_000;
/** How long close() waits for Chromium's close frame before dropping the socket. */
const CLOSE_TIMEOUT_MS = 1000;

export class CdpConnection {
  private closedByUs = false;
  private disconnectListeners: Array<() => void> = [];
  private disconnected = false;
  private readonly handlers = new Map<string, AnyHandler[]>();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /** Events read off the wire and dropped unparsed: nothing handles their method. */
  skippedEvents = 0;
  /** Messages received, and the socket reads they came in (/metrics: how batched the reads are). */
  messages = 0;
  private readCount: () => number = () => 0;
  get reads(): number {
    return this.readCount();
  }
  /** setReadRest: after a read, the socket is not read again for this many ms (0: never rests). */
  private restMs = 0;
  private restTimer: NodeJS.Timeout | undefined;
  private readonly closed: Promise<void>;

  private constructor(
    /** The browser's websocket URL: a CDP relay can open its own connection to it. */
    readonly url: string,
    private readonly ws: WebSocket,
    /** The TCP socket under the websocket (readRestSocket); undefined: it cannot rest. */
    private readonly socket: Socket | undefined,
    /** Where the best-effort commands on this connection count what they let pass: the agent's. */
    readonly failures: IgnoredFailures,
  ) {
    ws.on('message', (data: Buffer) => this.onMessage(data));
    this.closed = new Promise((resolve) => ws.once('close', () => resolve()));
    ws.once('close', () => this.handleDisconnect());
    // Its close follows; the error itself is the browser's business (gone, reset).
    ws.on('error', () => undefined);
  }

  /** `failures`: the agent's count of best-effort failures (a fresh one, logging nothing, by default). */
  static async connect(wsUrl: string, failures = new IgnoredFailures()): Promise<CdpConnection> {
    // In flatten mode the URL must be the browser's own websocket URL (not a page's).
    let socket: Socket | undefined;
    let reads = 0;
    const ws = new WebSocket(wsUrl, {
      perMessageDeflate: false,
      maxPayload: MAX_MESSAGE_BYTES,
      skipUTF8Validation: true,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      // Typed as net.createConnection's overloads; `ws` calls it like http.request does.
      createConnection: ((options: ClientRequestArgs) => (socket = readRestSocket(options, () => reads++))) as typeof netConnect,
    });
    await new Promise<void>((resolve, reject) => {
      const failed = (err: Error) => {
        ws.off('open', opened);
        reject(new Error(`CDP websocket ${wsUrl}: ${err.message}`, { cause: err }));
      };
      const opened = () => {
        ws.off('error', failed);
        resolve();
      };
      ws.once('open', opened);
      ws.once('error', failed);
    });
    const connection = new CdpConnection(wsUrl, ws, socket, failures);
    // The handshake's reads are not the connection's.
    reads = 0;
    connection.readCount = () => reads;
    return connection;
  }

  get isConnected(): boolean {
    return !this.disconnected;
  }

  send<M extends CommandName>(method: M, params?: CommandParams<M>, sessionId?: string): Promise<CommandResult<M>> {
    if (this.disconnected) return Promise.reject(new ConnectionClosedError(method));
    // Its answer is read as soon as it comes.
    this.endRest();
    const id = this.nextId++;
    const text = JSON.stringify(sessionId === undefined ? { id, method, params: params ?? {} } : { id, method, params: params ?? {}, sessionId });
    return new Promise<CommandResult<M>>((resolve, reject) => {
      this.pending.set(id, { method, resolve: resolve, reject });
      this.ws.send(text, (err) => {
        if (err === undefined || err === null) return;
        this.pending.delete(id);
        reject(err);
      });
    });
  }

  on<E extends EventName>(event: E, handler: EventHandler<E>): () => void {
    const listener = handler as AnyHandler;
    // Copied on change: a dispatch in progress keeps the list it started with.
    this.handlers.set(event, [...(this.handlers.get(event) ?? []), listener]);
    return () => {
      const left = (this.handlers.get(event) ?? []).filter((h) => h !== listener);
      if (left.length > 0) this.handlers.set(event, left);
      else this.handlers.delete(event);
    };
  }

  /**
   * While `ms` > 0, a read that leaves no command waiting for its answer is followed by a rest of
   * `ms`: the websocket is paused, its socket reads once more into its buffer and then stops
   * reading, so what Chromium sends meanwhile comes in one read at the rest's end. A command sent
   * ends the rest, so answers are never held back. 0: read as data arrives.
   */
  setReadRest(ms: number): void {
    this.restMs = this.socket === undefined ? 0 : ms;
    if (ms === 0) this.endRest();
  }

  private startRest(): void {
    this.socket?.pause();
    this.restTimer = setTimeout(this.endRest, this.restMs);
  }

  private readonly endRest = (): void => {
    if (this.restTimer === undefined) return;
    clearTimeout(this.restTimer);
    this.restTimer = undefined;
    this.socket?.resume();
  };

  /** Called once when the connection is lost (not when we close it). */
  onDisconnect(listener: () => void): void {
    this.disconnectListeners.push(listener);
  }

  async close(): Promise<void> {
    if (this.disconnected) return;
    this.closedByUs = true;
    this.disconnected = true;
    this.endRest();
    this.ws.close();
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)));
    await Promise.race([this.closed, waited]);
    clearTimeout(timer);
    this.ws.terminate();
    this.failPending();
    this.handlers.clear();
  }

  private onMessage(data: Buffer): void {
    this.messages++;
    // The rest of this read's messages are still delivered; the next read waits.
    if (this.restMs > 0 && this.restTimer === undefined && this.pending.size === 0) this.startRest();
    const method = eventMethodOf(data);
    if (method !== undefined && !this.handlers.has(method)) {
      this.skippedEvents++;
      return;
    }
    const message = JSON.parse(data.toString()) as Message;
    if (message.id !== undefined) {
      const waiter = this.pending.get(message.id);
      if (waiter === undefined) return;
      this.pending.delete(message.id);
      if (message.error !== undefined) waiter.reject(new ProtocolError(waiter.method, message.error.code, message.error.message, message.error.data));
      else waiter.resolve(message.result ?? {});
      return;
    }
    if (message.method === undefined) return;
    const handlers = this.handlers.get(message.method);
    if (handlers === undefined) return;
    for (const handler of handlers) handler(message.params, message.sessionId);
  }

  private failPending(): void {
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const waiter of waiting) waiter.reject(new ConnectionClosedError(waiter.method));
  }

  private handleDisconnect(): void {
    if (this.restTimer !== undefined) clearTimeout(this.restTimer);
    this.restTimer = undefined;
    this.failPending();
    if (this.disconnected && this.closedByUs) return;
    this.disconnected = true;
    for (const listener of this.disconnectListeners) listener();
  }
}

/** Bytes of one socket read: Chromium's messages are mostly small; a big one takes several reads. */
const READ_BUFFER_BYTES = 64 * 1024;

/**
 * The TCP socket under the websocket, opened like `ws` opens it, with Node's `onread` option: each
 * read lands in one buffer and goes to a callback instead of the socket's stream, and pause() then
 * stops reading the file descriptor at once (Node's net docs, `socket.connect` `onread`). Without
 * it a paused stream reads once more into its buffer, which woke the process once per rest on top
 * of the rest's own read (measured, docs/decisions.md). The callback hands a copy of each read on
 * as a `data` event, which is how the HTTP client and `ws` read a socket; `onRead` counts reads.
 */
function readRestSocket(options: ClientRequestArgs, onRead: () => void): Socket {
  // `path` is a unix socket's, as `ws` passes it to http.request.
  const socket: Socket = netConnect({
    ...(options as NetConnectOpts),
    path: options.socketPath,
    onread: {
      buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES),
      callback: (bytes: number, buffer: Uint8Array): boolean => {
        onRead();
        // The buffer is read into again; the websocket may keep a chunk until its frame is whole.
        socket.emit('data', Buffer.from(buffer.subarray(0, bytes)));
        return true;
      },
    },
  } as NetConnectOpts);
  return socket;
}

/**
 * The method of an event message, read off its bytes: `{"method":"Domain.name",...`. Undefined
 * for anything else (a command's answer starts with `{"id":`), which is then parsed whole.
 */
export function eventMethodOf(data: Buffer): string | undefined {
  const start = EVENT_PREFIX.length;
  if (data.length <= start || data[0] !== 0x7b || data.compare(EVENT_PREFIX, 0, start, 0, start) !== 0) return undefined;
  // A method name is ASCII and never holds a quote or an escape.
  const end = data.indexOf(QUOTE, start);
  return end === -1 ? undefined : data.toString('latin1', start, end);
}
