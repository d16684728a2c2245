// The CDP endpoint for automation clients (docs/operations.md "CDP endpoint"): every client gets
// its own WebSocket to the browser, and messages are relayed both ways as they are (the bytes of a
// frame are never re-encoded). The relay reads each client command to record the ones that drive
// the browser (command-shape.ts) and looks at the head of the browser's messages only to match the
// answers of recorded commands and to learn which session is which target.
//
// A client that does not read what the browser sends is cut once more than `maxClientBufferBytes`
// wait for it (close 1008 `slow_client`): its queue never grows without bound and the browser,
// which writes to this client's own socket, and the other clients never wait for it.

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocket, WebSocketServer } from 'ws';
import type { CdpDisconnectReason } from '../../injected/schema.ts';
import type { ActionStart, ControlRecorder } from '../control/control-recorder.ts';
import type { Steps } from '../control/steps.ts';
import { shapeCommand, type CommandRecord } from './command-shape.ts';
import { answerStepCommand, stepCommandOf } from './step-command.ts';

/** Default bound of what may wait for one client (docs/operations.md "CDP endpoint"). */
export const DEFAULT_CLIENT_BUFFER_BYTES = 32 * 1024 * 1024;
/**
 * Largest client frame taken (docs/operations.md "CDP endpoint"): every frame up to it is parsed
 * before it is relayed, a larger one closes the connection with 1009 `frame_too_large` before it
 * is buffered. Chromium's own limit is 100 MiB, but the time it takes to receive a frame grows
 * with the square of its size (16 MB: 25 s, measured in docs/decisions.md "CDP endpoint").
 */
export const MAX_CLIENT_FRAME_BYTES = 16 * 1024 * 1024;
/** Largest browser error answer parsed for its message. */
const MAX_INSPECTED_BYTES = 1024 * 1024;

/** What inspecting a client's frame decided: refuse it (false), relay it now (true), or hold it until the promise settles. */
type Inspected = boolean | Promise<void>;
/** How deep Target.sendMessageToTarget messages are unwrapped and recorded (a session of a session...); deeper is refused. */
const MAX_NESTING = 8;
/** How long a cut client gets to take its close frame before its socket is destroyed. */
const CLOSE_GRACE_MS = 5000;
/** How long a lost browser socket waits for the agent to report the browser gone (docs/events.md "Telemetry config, lifecycle and monitor events": within 3 s). */
const UPSTREAM_GRACE_MS = 3500;

export type ProxyEndpoint = { kind: 'browser' } | { kind: 'page'; targetId: string };

/** Told before a recorded command is relayed (docs/events.md "Snapshots": the page before it). */
export interface RelayHook {
  /**
   * `record` of `targetId` is about to be relayed as action `actionId`: a promise holds this
   * client's messages, in order, until it settles (the hook bounds the wait); undefined relays now.
   */
  beforeRelay(actionId: string, targetId: string | undefined, record: CommandRecord): Promise<void> | undefined;
}

/**
 * An upgrade the proxy cannot relay: no browser connected (503) or the browser refused (502). A
 * coded error, answered by the HTTP layer with the error body (src/http/cdp-routes.ts).
 */
export class UpgradeRefused extends Error {
  override readonly name = 'UpgradeRefused';
  readonly code = 'browser_unavailable';

  constructor(
    readonly status: 502 | 503,
    message: string,
  ) {
    super(message);
  }
}

export interface CdpProxyOptions {
  /** The browser's WebSocket URL of the current connection; undefined while there is none. */
  upstream: () => string | undefined;
  recorder: ControlRecorder;
  /** Steps (docs/events.md "Steps"): Telemetry.addStep is answered here, each connection a caller. */
  steps?: Steps;
  logger?: Logger;
  maxClientBufferBytes?: number;
  /**
   * A client brought a tab to the front (`Page.bringToFront`, `Target.activateTarget`): the
   * agent's "tab in front" follows (docs/replay.md "Which tab").
   */
  onActivate?: (targetId: string) => void;
  /** A client answers a dialog in `targetId` (Page.handleJavaScriptDialog): its close says `cdp_client` (docs/events.md "Dialogs and file choosers"). */
  onDialogAnswer?: (targetId: string) => void;
  relayHook?: RelayHook;
}

/** Counters for /metrics. */
export interface ProxyStats {
  readonly clients: number;
  readonly connectionsTotal: number;
  readonly messagesTotal: number;
  readonly cutTotal: number;
  readonly closedTotal: Readonly<Record<CdpDisconnectReason, number>>;
  /** Connections closed for a frame the proxy refuses (docs/operations.md "CDP endpoint"). */
  readonly refusedTotal: Readonly<Record<RefusedFrame, number>>;
}

/** Why a client frame was refused: larger than MAX_CLIENT_FRAME_BYTES, or binary (CDP is text). */
export type RefusedFrame = 'frame_too_large' | 'binary_frame' | 'nesting_too_deep';

interface Pending {
  start: ActionStart | undefined;
  record: CommandRecord;
  sessionId: string | undefined;
}

type Command = { id: number; method: string; params?: unknown; sessionId?: unknown };

export class CdpProxy implements ProxyStats {
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: MAX_CLIENT_FRAME_BYTES });
  private readonly relays = new Set<Relay>();
  private closed = false;
  connectionsTotal = 0;
  messagesTotal = 0;
  cutTotal = 0;
  readonly closedTotal: Record<CdpDisconnectReason, number> = { client_close: 0, upstream_changed: 0, upstream_error: 0, context_cancelled: 0 };
  readonly refusedTotal: Record<RefusedFrame, number> = { frame_too_large: 0, binary_frame: 0, nesting_too_deep: 0 };

  constructor(readonly options: CdpProxyOptions) {}

  get clients(): number {
    return this.relays.size;
  }

  /**
   * Take an authorized upgrade: dial the browser first, so that a client gets an HTTP error (502,
   * 503: rejects with UpgradeRefused) rather than an open socket to nowhere; then complete the
   * client's handshake.
   */
  async handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer, endpoint: ProxyEndpoint): Promise<void> {
    const base = this.options.upstream();
    if (this.closed || base === undefined) throw new UpgradeRefused(503, 'the browser is not connected');
    const url = endpoint.kind === 'browser' ? base : new URL(`/devtools/page/${encodeURIComponent(endpoint.targetId)}`, base).toString().replace(/^http/, 'ws');
    let upstream: WebSocket;
    try {
      upstream = await dial(url);
    } catch (err) {
      throw new UpgradeRefused(502, `the browser refused the connection: ${(err as Error).message}`);
    }
    if (this.closed || socket.destroyed) {
      upstream.terminate();
      socket.destroy();
      return;
    }
    this.wss.handleUpgrade(request, socket, head, (client) => {
      const relay = new Relay(this, client, upstream, endpoint);
      this.relays.add(relay);
      this.connectionsTotal++;
      relay.start();
    });
  }

  /** The browser changed (restart, reconnect): every client is closed so it can reconnect. */
  upstreamChanged(): void {
    for (const relay of [...this.relays]) relay.end('upstream_changed', 1012, 'upstream_changed: the browser restarted; reconnect');
  }

  /** Shutdown or session deletion: every client is closed. */
  close(detail: string): void {
    this.closed = true;
    for (const relay of [...this.relays]) relay.end('context_cancelled', 1001, `context_cancelled: ${detail}`, detail);
  }

  /** @internal */
  ended(relay: Relay, reason: CdpDisconnectReason, cut: boolean): void {
    if (!this.relays.delete(relay)) return;
    this.closedTotal[reason]++;
    if (cut) this.cutTotal++;
  }

  /** @internal */
  refused(what: RefusedFrame): void {
    this.refusedTotal[what]++;
  }
}

class Relay {
  private readonly connectionId: string;
  private readonly startedAt = performance.now();
  private messages = 0;
  private done = false;
  /** Flattened session id → target id, learned from Target.attachedToTarget. */
  private readonly sessions = new Map<string, string>();
  /** Recorded commands awaiting their answer, by id. */
  private readonly pending = new Map<number, Pending>();
  /**
   * Recorded commands carried by Target.sendMessageToTarget, awaiting their answer (which comes
   * back inside Target.receivedMessageFromTarget): by the carrying session (or `target:<id>`),
   * then by their own id.
   */
  private readonly nestedPending = new Map<string, Map<number, Pending>>();
  /** The id of a Target.sendMessageToTarget → the recorded command it carries (its error is that command's). */
  private readonly carriers = new Map<number, { key: string; id: number }>();
  private readonly maxBuffer: number;
  private goneTimer: NodeJS.Timeout | undefined;
  /** Client messages waiting, in order, while a relay hook holds the client (RelayHook). */
  private held: Buffer[] | undefined;

  constructor(
    private readonly proxy: CdpProxy,
    private readonly client: WebSocket,
    private readonly upstream: WebSocket,
    private readonly endpoint: ProxyEndpoint,
  ) {
    this.connectionId = proxy.options.recorder.newId('conn');
    this.maxBuffer = proxy.options.maxClientBufferBytes ?? DEFAULT_CLIENT_BUFFER_BYTES;
  }

  start(): void {
    const { recorder } = this.proxy.options;
    recorder.cdpConnect({
      connection_id: this.connectionId,
      endpoint: this.endpoint.kind,
      ...(this.endpoint.kind === 'page' ? { target_id: this.endpoint.targetId } : {}),
    });
    this.client.on('message', (data, isBinary) => this.fromClient(data as Buffer, isBinary));
    this.upstream.on('message', (data, isBinary) => this.fromBrowser(data as Buffer, isBinary));
    this.client.on('close', () => this.end('client_close'));
    this.client.on('error', (err: Error & { code?: string }) => {
      // ws refuses a frame over maxPayload from its header, before buffering it, and closes with 1009.
      if (err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') this.refuse('frame_too_large', 1009, `a frame over ${MAX_CLIENT_FRAME_BYTES} bytes`);
      else this.end('client_close');
    });
    this.upstream.on('close', () => this.upstreamGone('upstream_error: the browser closed the connection'));
    this.upstream.on('error', () => this.upstreamGone('upstream_error: the browser connection failed'));
  }

  /**
   * The browser's socket ended. When the browser itself went away the agent's link reports it
   * within UPSTREAM_GRACE_MS (CdpProxy.upstreamChanged: reason upstream_changed); otherwise only
   * this connection failed (upstream_error).
   */
  private upstreamGone(closeReason: string): void {
    if (this.done || this.goneTimer !== undefined) return;
    this.goneTimer = setTimeout(() => this.end('upstream_error', 1011, closeReason), UPSTREAM_GRACE_MS);
    this.goneTimer.unref();
  }

  private fromClient(data: Buffer, isBinary: boolean): void {
    if (this.done || this.goneTimer !== undefined) return;
    this.messages++;
    this.proxy.messagesTotal++;
    // Chromium drops a connection that sends a binary frame; refused here so that every frame
    // relayed is one the proxy parsed.
    if (isBinary) {
      this.refuse('binary_frame', 1003, 'CDP messages are text frames');
      return;
    }
    if (this.held !== undefined) this.held.push(data);
    else this.relay(data);
  }

  private relay(data: Buffer): void {
    if (this.answeredHere(data)) return;
    const inspected = this.inspectCommand(data);
    if (inspected === false) {
      this.refuse('nesting_too_deep', 1008, `more than ${MAX_NESTING} Target.sendMessageToTarget levels`);
      return;
    }
    if (inspected === true) {
      this.upstream.send(data, { binary: false });
      return;
    }
    this.held = [];
    void inspected.then(() => {
      const waiting = this.held ?? [];
      this.held = undefined;
      if (this.done || this.goneTimer !== undefined) return;
      this.upstream.send(data, { binary: false });
      for (let i = 0; i < waiting.length; i++) {
        // A message relayed just now may have been held in turn: the rest waits behind it.
        const heldAgain = this.held as Buffer[] | undefined;
        if (heldAgain !== undefined) {
          heldAgain.push(...waiting.slice(i));
          return;
        }
        if (this.done) return;
        this.relay(waiting[i]!);
      }
    });
  }

  private refuse(what: RefusedFrame, code: number, why: string): void {
    if (this.done) return;
    this.proxy.refused(what);
    this.end('context_cancelled', code, `${what}: ${why}`, what);
  }

  /** Telemetry.addStep is the proxy's own (step-command.ts): answered here, never relayed. */
  private answeredHere(data: Buffer): boolean {
    const { steps } = this.proxy.options;
    const command = steps && stepCommandOf(data);
    if (command === undefined || steps === undefined) return false;
    this.client.send(answerStepCommand(command, steps, { id: this.connectionId, via: 'cdp', connectionId: this.connectionId }));
    return true;
  }

  private fromBrowser(data: Buffer, isBinary: boolean): void {
    if (this.done) return;
    this.messages++;
    this.proxy.messagesTotal++;
    if (!isBinary) this.inspectBrowserMessage(data);
    if (this.client.bufferedAmount + data.length > this.maxBuffer) {
      this.end('context_cancelled', 1008, `slow_client: more than ${this.maxBuffer} bytes waited for this client`, 'slow_client');
      return;
    }
    this.client.send(data, { binary: isBinary });
  }

  /**
   * False when the frame carries messages nested deeper than the proxy reads; a promise when a
   * relay hook holds the command (RelayHook); true to relay it now.
   */
  private inspectCommand(data: Buffer): Inspected {
    const message = parseJson(data);
    return !isCommand(message) || this.inspectMessage(message, undefined, 0);
  }

  /**
   * Record one command. `carrier` is set for a command carried inside Target.sendMessageToTarget
   * (a session attached with `flatten: false`): it is recorded as the command it carries, with the
   * carrying session, and its answer is matched inside Target.receivedMessageFromTarget.
   */
  private inspectMessage(
    message: Command,
    carrier: { key: string; sessionId: string | undefined; targetId: string | undefined; outerId: number } | undefined,
    depth: number,
  ): Inspected {
    const { recorder, onActivate } = this.proxy.options;
    const params = typeof message.params === 'object' && message.params !== null ? (message.params as Record<string, unknown>) : undefined;
    const sessionId = carrier !== undefined ? carrier.sessionId : typeof message.sessionId === 'string' ? message.sessionId : undefined;
    const targetOf = () => (carrier !== undefined && carrier.sessionId === undefined ? carrier.targetId : this.targetOf(sessionId, message.method, params));
    if (message.method === 'Target.sendMessageToTarget') {
      if (depth >= MAX_NESTING) return false;
      const inner = typeof params?.message === 'string' ? parseJson(params.message) : undefined;
      const innerSession = typeof params?.sessionId === 'string' ? params.sessionId : undefined;
      const innerTarget = typeof params?.targetId === 'string' ? params.targetId : undefined;
      const key = innerSession ?? (innerTarget === undefined ? undefined : `target:${innerTarget}`);
      if (isCommand(inner) && key !== undefined) {
        return this.inspectMessage(inner, { key, sessionId: innerSession, targetId: innerTarget, outerId: carrier?.outerId ?? message.id }, depth + 1);
      }
      return true;
    }
    if (onActivate && (message.method === 'Page.bringToFront' || message.method === 'Target.activateTarget')) {
      const activated = targetOf();
      if (activated !== undefined) onActivate(activated);
    }
    if (message.method === 'Page.handleJavaScriptDialog') {
      const answered = targetOf();
      if (answered !== undefined) this.proxy.options.onDialogAnswer?.(answered);
    }
    if (!recorder.controlOn) return true;
    const record = shapeCommand(message.method, params, recorder.includeUrls);
    if (record === undefined) return true;
    const targetId = targetOf();
    const id = message.id;
    const actionId = recorder.newId('act');
    const hold = this.proxy.options.relayHook?.beforeRelay(actionId, targetId, record);
    const begin = (): void => {
      // The step this connection marked last (docs/events.md "Steps").
      const start = recorder.begin(targetId, record.opens, this.proxy.options.steps?.currentOf(this.connectionId), actionId);
      if (carrier === undefined) {
        this.pending.set(id, { start, record, sessionId });
        return;
      }
      let waiting = this.nestedPending.get(carrier.key);
      if (waiting === undefined) this.nestedPending.set(carrier.key, (waiting = new Map<number, Pending>()));
      waiting.set(id, { start, record, sessionId });
      this.carriers.set(carrier.outerId, { key: carrier.key, id });
    };
    if (hold === undefined) {
      begin();
      return true;
    }
    return hold.then(begin);
  }

  private targetOf(sessionId: string | undefined, method: string, params: Record<string, unknown> | undefined): string | undefined {
    if (sessionId !== undefined) return this.sessions.get(sessionId);
    if (this.endpoint.kind === 'page') return this.endpoint.targetId;
    if ((method === 'Target.closeTarget' || method === 'Target.activateTarget') && typeof params?.targetId === 'string') return params.targetId;
    return undefined;
  }

  /**
   * Only the head of the message is read: `{"id":N,` of an answer to a recorded command, and the
   * Target attach and detach events (for session → target). Everything else passes unparsed.
   */
  private inspectBrowserMessage(data: Buffer): void {
    // 0x7b '{', 0x22 '"'
    if (data[0] !== 0x7b || data[1] !== 0x22) return;
    if (data[2] === 0x69 && data[3] === 0x64 && data[4] === 0x22 && data[5] === 0x3a) {
      // {"id":
      if (this.pending.size === 0 && this.carriers.size === 0) return;
      let i = 6;
      let id = 0;
      while (i < data.length && i < 24 && data[i]! >= 0x30 && data[i]! <= 0x39) id = id * 10 + data[i++]! - 0x30;
      const carried = this.carriers.get(id);
      const pending = this.pending.get(id);
      // Most answers are to commands nobody recorded: those end here, with nothing allocated.
      if (carried === undefined && pending === undefined) return;
      const isError = data.subarray(i, i + 9).toString('latin1') === ',"error":';
      if (carried !== undefined) {
        this.carriers.delete(id);
        // The carrier failed (no such session): what it carried never reached the target.
        if (isError) this.answerNested(carried.key, carried.id, errorText(data));
      }
      if (pending === undefined) return;
      this.pending.delete(id);
      this.answer(pending, isError ? errorText(data) : undefined);
      return;
    }
    const head = data.subarray(0, 52).toString('latin1');
    if (head.startsWith('{"method":"Target.receivedMessageFromTarget"')) {
      if (this.nestedPending.size > 0) this.receivedFromTarget(parseJson(data), 0);
    } else if (head.startsWith('{"method":"Target.attachedToTarget"')) {
      const event = parseJson(data) as { params?: { sessionId?: string; targetInfo?: { targetId?: string } } } | undefined;
      const sessionId = event?.params?.sessionId;
      const targetId = event?.params?.targetInfo?.targetId;
      if (sessionId !== undefined && targetId !== undefined) this.sessions.set(sessionId, targetId);
    } else if (head.startsWith('{"method":"Target.detachedFromTarget"')) {
      const event = parseJson(data) as { params?: { sessionId?: string } } | undefined;
      if (event?.params?.sessionId !== undefined) this.sessions.delete(event.params.sessionId);
    }
  }

  /** A message of a `flatten: false` session: the answer of a carried command (or an event carrying one, deeper). */
  private receivedFromTarget(event: unknown, depth: number): void {
    const received = event as { method?: unknown; params?: { sessionId?: unknown; targetId?: unknown; message?: unknown } } | null | undefined;
    const params = received?.params;
    if (received?.method !== 'Target.receivedMessageFromTarget' || typeof params?.message !== 'string') return;
    const inner = parseJson(params.message) as { id?: unknown; error?: { message?: unknown }; method?: unknown } | undefined;
    if (typeof inner !== 'object' || inner === null) return;
    if (typeof inner.id === 'number') {
      const error = inner.error === undefined ? undefined : typeof inner.error?.message === 'string' ? inner.error.message.slice(0, 1024) : 'error';
      for (const key of [params.sessionId, `target:${String(params.targetId)}`]) if (typeof key === 'string' && this.answerNested(key, inner.id, error)) return;
    } else if (inner.method === 'Target.receivedMessageFromTarget' && depth < MAX_NESTING) {
      this.receivedFromTarget(inner, depth + 1);
    }
  }

  private answerNested(key: string, id: number, error: string | undefined): boolean {
    const waiting = this.nestedPending.get(key);
    const pending = waiting?.get(id);
    if (waiting === undefined || pending === undefined) return false;
    waiting.delete(id);
    if (waiting.size === 0) this.nestedPending.delete(key);
    this.answer(pending, error);
    return true;
  }

  private answer(pending: Pending, error: string | undefined): void {
    if (pending.start === undefined) return;
    const { opens: _opens, ...shape } = pending.record;
    this.proxy.options.recorder.cdpCommand(pending.start, {
      ...shape,
      connection_id: this.connectionId,
      ...(pending.sessionId === undefined ? {} : { session_id: pending.sessionId }),
      outcome: error === undefined ? 'ok' : 'error',
      ...(error === undefined ? {} : { error }),
    });
  }

  /** End the relay once: close both sockets, record cdp_disconnect. */
  end(reason: CdpDisconnectReason, code?: number, closeReason?: string, detail?: string): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.goneTimer);
    // Commands still unanswered end with the connection.
    for (const pending of [...this.pending.values(), ...[...this.nestedPending.values()].flatMap((m) => [...m.values()])]) {
      this.answer(pending, 'the connection closed before the answer');
    }
    this.pending.clear();
    this.nestedPending.clear();
    this.carriers.clear();
    this.proxy.options.steps?.forget(this.connectionId);
    const cut = detail === 'slow_client';
    this.proxy.ended(this, reason, cut);
    if (this.upstream.readyState === WebSocket.OPEN || this.upstream.readyState === WebSocket.CONNECTING) this.upstream.close();
    if (this.client.readyState === WebSocket.OPEN) {
      // The close reason is at most 123 bytes.
      this.client.close(code ?? 1000, (closeReason ?? '').slice(0, 123));
      const timer = setTimeout(() => this.client.terminate(), CLOSE_GRACE_MS);
      timer.unref();
      this.client.once('close', () => clearTimeout(timer));
    }
    this.proxy.options.logger?.info({ connection_id: this.connectionId, reason, detail, messages: this.messages }, 'CDP client disconnected');
    this.proxy.options.recorder.cdpDisconnect({
      duration_ms: Math.round(performance.now() - this.startedAt),
      message_count: this.messages,
      reason,
      connection_id: this.connectionId,
      ...(detail === undefined ? {} : { detail }),
    });
  }
}

function dial(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    // Chromium's text frames are not checked for UTF-8 (most of what is relayed, screenshots and
    // bodies included; the JavaScript check costs per byte): the client reads them anyway, as the
    // agent's own connection does. What clients send is checked (the server's default).
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 512 * 1024 * 1024, handshakeTimeout: 5000, skipUTF8Validation: true });
    ws.once('open', () => {
      ws.removeAllListeners('error');
      resolve(ws);
    });
    ws.once('error', reject);
  });
}

function isCommand(message: unknown): message is Command {
  return typeof message === 'object' && message !== null && typeof (message as Command).method === 'string' && typeof (message as Command).id === 'number';
}

function parseJson(data: Buffer | string): unknown {
  try {
    return JSON.parse(typeof data === 'string' ? data : data.toString('utf8'));
  } catch {
    return undefined;
  }
}

function errorText(data: Buffer): string {
  const answer = data.length <= MAX_INSPECTED_BYTES ? (parseJson(data) as { error?: { message?: unknown } } | undefined) : undefined;
  const message = answer?.error?.message;
  return typeof message === 'string' ? message.slice(0, 1024) : 'error';
}
