// One browser-level CDP connection in flatten mode (chrome-remote-interface). Every target's
// session is multiplexed over it by sessionId.

import CDP from 'chrome-remote-interface';
import type { ProtocolMapping } from 'devtools-protocol/types/protocol-mapping.js';
import type { EventEmitter } from 'node:events';

export type CommandName = keyof ProtocolMapping.Commands & string;
export type CommandParams<M extends CommandName> = ProtocolMapping.Commands[M]['paramsType'][0];
export type CommandResult<M extends CommandName> = ProtocolMapping.Commands[M]['returnType'];
export type EventName = keyof ProtocolMapping.Events & string;
export type EventParams<E extends EventName> = ProtocolMapping.Events[E][0];

export type EventHandler<E extends EventName> = (params: EventParams<E>, sessionId: string | undefined) => void;

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

export class CdpConnection {
  private closedByUs = false;
  private disconnectListeners: Array<() => void> = [];
  private disconnected = false;

  private constructor(private readonly client: CDP.Client) {
    client.on('disconnect', () => this.handleDisconnect());
  }

  static async connect(wsUrl: string): Promise<CdpConnection> {
    // `local: true` skips downloading the protocol description (~0.4 s); in flatten mode the
    // target must be the browser's own websocket URL.
    const client = await CDP({ target: wsUrl, local: true });
    return new CdpConnection(client);
  }

  get isConnected(): boolean {
    return !this.disconnected;
  }

  send<M extends CommandName>(method: M, params?: CommandParams<M>, sessionId?: string): Promise<CommandResult<M>> {
    if (this.disconnected) return Promise.reject(new Error(`CDP connection closed (${method})`));
    // chrome-remote-interface picks its optional arguments by type; an undefined sessionId is skipped.
    return (this.client.send as (m: string, p?: object, s?: string) => Promise<CommandResult<M>>)(method, params ?? {}, sessionId);
  }

  on<E extends EventName>(event: E, handler: EventHandler<E>): () => void {
    const listener = handler as (...args: unknown[]) => void;
    const emitter = this.client as unknown as EventEmitter;
    emitter.on(event, listener);
    return () => emitter.removeListener(event, listener);
  }

  /** Called once when the connection is lost (not when we close it). */
  onDisconnect(listener: () => void): void {
    this.disconnectListeners.push(listener);
  }

  async close(): Promise<void> {
    if (this.disconnected) return;
    this.closedByUs = true;
    this.disconnected = true;
    try {
      await this.client.close();
    } catch {
      // Already gone.
    }
    (this.client as unknown as EventEmitter).removeAllListeners();
  }

  private handleDisconnect(): void {
    if (this.disconnected && this.closedByUs) return;
    this.disconnected = true;
    for (const listener of this.disconnectListeners) listener();
  }
}
