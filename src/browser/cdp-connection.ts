// One browser-level CDP connection in flatten mode. Every target's session is multiplexed over it
// by sessionId.
//
// chrome-remote-interface opens the connection (its websocket: ws 8 through the package's npm
// `overrides`, 256 MiB messages, no compression) and reports its loss; the message path is this
// module's own. Per message, chrome-remote-interface's reader parses the JSON, then emits three
// events (`event`, the method, `method.sessionId`, building that string) whether or not anything
// listens, and counts its pending commands with `Object.keys` at every answer; none of it can be
// turned off. Here a message costs one lookup of its method in a handler table, and a JSON parse
// only when it has a handler or answers a command: Chromium writes `method` first in every event,
// so the method is read off the raw bytes, and an event nobody handles (the `*ExtraInfo` events,
// a third of a page load's messages with their raw header blocks) is never parsed at all
// (docs/performance.md "CDP messages").
//
// While a tab loads, the socket can rest between reads (setReadRest): what Chromium sends meanwhile
// waits in the kernel's buffer and comes in one read, where it would otherwise wake the process
// once per message or two (docs/performance.md "Reading CDP in batches while a tab loads").

import CDP from 'chrome-remote-interface';
import type { ProtocolMapping } from 'devtools-protocol/types/protocol-mapping.js';
import type { EventEmitter } from 'node:events';
import type WebSocket from 'ws';
import { ConnectionClosedError } from './cdp-errors.ts';

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

/**
 * The libuv handle under a net.Socket (Node's `_handle`): readStop() stops reading the file
 * descriptor itself. socket.pause() does not: a paused stream keeps reading into its buffer up to
 * its high-water mark, so the wake-ups stay (measured, docs/performance.md).
 */
interface ReadHandle {
  reading: boolean;
  readStart(): number;
  readStop(): number;
}

interface Message {
  id?: number;
  method?: string;
  params?: unknown;
  sessionId?: string;
  result?: unknown;
  error?: { message: string; data?: string };
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
/**
 * chrome-remote-interface builds its per-domain shorthands from a protocol description: with
 * `local: true` it loads its bundled 1.2 MB copy (2.3 MB of heap, 8.7 MB of RSS measured). None
 * of the shorthands is used here.
 */
const NO_SHORTHANDS = { version: { major: '1', minor: '3' }, domains: [] };

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
  reads = 0;
  /** setReadRest: after a read, the socket is not read again for this many ms (0: never rests). */
  private restMs = 0;
  private restTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly client: CDP.Client,
    private readonly ws: WebSocket,
  ) {
    // The message path is ours from here on (module comment); the socket and its loss stay
    // chrome-remote-interface's.
    ws.removeAllListeners('message');
    ws.on('message', (data: Buffer) => this.onMessage(data));
    (ws as unknown as { _socket?: EventEmitter })._socket?.on('data', () => this.reads++);
    client.on('disconnect', () => this.handleDisconnect());
  }

  static async connect(wsUrl: string): Promise<CdpConnection> {
    // In flatten mode the target must be the browser's own websocket URL.
    const client = await CDP({ target: wsUrl, protocol: NO_SHORTHANDS as unknown as CDP.Options['protocol'] });
    const ws = (client as unknown as { _ws?: WebSocket })._ws;
    if (ws === undefined) {
      await client.close();
      throw new Error('chrome-remote-interface no longer exposes its websocket (_ws): check the dependency version');
    }
    return new CdpConnection(client, ws);
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
   * `ms`: the socket's file descriptor is not read, so what Chromium sends meanwhile comes in one
   * read. A command sent ends the rest, so answers are never held back. 0: read as data arrives.
   */
  setReadRest(ms: number): void {
    this.restMs = ms;
    if (ms === 0) this.endRest();
  }

  /** The socket's read handle, when Node still exposes it (else resting is skipped: reads go on as usual). */
  private readHandle(): ReadHandle | undefined {
    const socket = (this.ws as unknown as { _socket?: { destroyed: boolean; _handle?: Partial<ReadHandle> | null } })._socket;
    const handle = socket?.destroyed === false ? socket._handle : undefined;
    return typeof handle?.readStop === 'function' && typeof handle.readStart === 'function' ? (handle as ReadHandle) : undefined;
  }

  private startRest(): void {
    const handle = this.readHandle();
    // Not reading: the stream itself stopped (backpressure); it resumes on its own.
    if (handle === undefined || !handle.reading) return;
    // `reading` stays true, so net.Socket's own read-ahead does not start the handle again.
    handle.readStop();
    this.restTimer = setTimeout(this.endRest, this.restMs);
  }

  private readonly endRest = (): void => {
    if (this.restTimer === undefined) return;
    clearTimeout(this.restTimer);
    this.restTimer = undefined;
    const handle = this.readHandle();
    if (handle?.reading === true) handle.readStart();
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
    try {
      await this.client.close();
    } catch {
      // Already gone.
    }
    this.failPending();
    (this.client as unknown as EventEmitter).removeAllListeners();
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
      if (message.error !== undefined) waiter.reject(protocolError(waiter.method, message.error));
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
    this.endRest();
    this.failPending();
    if (this.disconnected && this.closedByUs) return;
    this.disconnected = true;
    for (const listener of this.disconnectListeners) listener();
  }
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

function protocolError(method: string, error: { message: string; data?: string }): Error {
  const err = new Error(error.data === undefined ? error.message : `${error.message} (${error.data})`);
  (err as Error & { method?: string }).method = method;
  return err;
}
