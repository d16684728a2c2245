// The CDP endpoint through the gateway (docs/gateway.md "CDP endpoint"): `/browsers/{id}/cdp`
// (the WebSocket) and its discovery paths (`/json/version`, `/json/list`, `/json`), forwarded to
// the session's agent with the registered agent token, which needs the agent's `cdp` scope. The
// caller's key and project are checked before a byte goes to the agent, as on the other browser
// routes (a key of another project: 403; an unknown session: 404).
//
// The WebSocket is relayed as bytes once both handshakes are done: the gateway does not parse
// frames, so extensions (permessage-deflate) are negotiated end to end with the agent. Each
// direction is a `pipe`, which stops reading one side while the other does not take what it has:
// a client that reads slowly fills its own agent connection only, where the agent's proxy cuts
// it (its bounded queue, docs/operations.md "CDP endpoint"); other clients and the browser go on.

import http, { type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, misdirectedRequest, notFound, refuseUpgrade, VIA_GATEWAY_HEADER, type HostPolicy } from 'browser-telemetry-agent/http-kit';
import type { AgentTimeouts } from '../agent-link/agent-silence.ts';
import type { BrowserRecord, GatewayStore } from '../storage/store.ts';
import { principalOf, requireProjectAccess, type KeyAuth, type Principal } from './auth.ts';
import { agentAnswered, browserTimedOut, browserUnreachable } from './errors.ts';
import type { KeyWatch } from './key-watch.ts';
import { gatewayCdpWsUrl } from './views.ts';

const DISCOVERY = ['json/version', 'json/list', 'json'] as const;
const UPGRADE_PATH = /^\/browsers\/([^/]+)\/cdp(\/.*)?$/;
/** The handshake headers passed to the agent; the caller's key and cookies stay here. */
const UPGRADE_HEADERS = ['sec-websocket-key', 'sec-websocket-version', 'sec-websocket-extensions', 'sec-websocket-protocol'] as const;
/** Largest discovery answer read from an agent (a list of targets). */
const MAX_DISCOVERY_BODY = 4 * 1024 * 1024;

export interface CdpForwardOptions {
  store: GatewayStore;
  auth: KeyAuth;
  hosts: HostPolicy;
  timeouts: AgentTimeouts;
  keys: KeyWatch;
}

/** One relayed WebSocket. */
interface Relay {
  end(): void;
  abort(): void;
}

export class CdpForward {
  private readonly relays = new Set<Relay>();

  constructor(private readonly options: CdpForwardOptions) {}

  /** Relayed CDP connections open now. */
  get openRelays(): number {
    return this.relays.size;
  }

  /** The discovery routes, in the authenticated scope (`scope`) of the server. */
  registerDiscovery(scope: FastifyInstance): void {
    const params = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } as const;
    for (const path of DISCOVERY) {
      for (const slash of ['', '/']) {
        scope.get(`/browsers/:id/cdp/${path}${slash}`, { schema: { params, hide: true } }, async (request) => this.discovery(path, request));
      }
    }
  }

  /** The WebSocket upgrades of the server (every upgrade comes here; other paths are 404). */
  registerUpgrade(app: FastifyInstance): void {
    app.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      // A TCP socket (TLS is a subclass): the only kind this server hands out.
      if (!(socket instanceof Socket)) {
        socket.destroy();
        return;
      }
      this.upgrade(request, socket, head).catch((err: unknown) =>
        refuseUpgrade(socket, err, (unexpected) => app.log.error({ err: unexpected }, 'CDP upgrade failed')),
      );
    });
  }

  /** Ends every relay (gateway shutdown). */
  close(): void {
    for (const relay of [...this.relays]) relay.abort();
    this.relays.clear();
  }

  private async discovery(path: (typeof DISCOVERY)[number], request: FastifyRequest): Promise<unknown> {
    const { id } = request.params as { id: string };
    const browser = await this.browserFor(principalOf(request), id);
    const target = new URL(`${browser.agentUrl}/browsers/${encodeURIComponent(browser.sessionId)}/cdp/${path}`);
    const response = await this.agentRequest(target, this.agentHeaders(browser), false);
    const body = await readBody(response, this.options.timeouts.idleMs);
    const status = response.statusCode ?? 502;
    if (status === 401 || status === 403) {
      request.log.warn({ session_id: id, status, body: body.slice(0, 2048) }, 'the agent rejected the registered token (CDP needs the cdp scope)');
      throw browserUnreachable(`the browser's agent rejected the gateway's credentials (HTTP ${status}; the agent token needs the cdp scope)`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      throw browserUnreachable("the browser's agent answered with something other than JSON");
    }
    // The agent's error (503 browser not connected, 404 session ended) as it is.
    if (status !== 200) throw agentAnswered(status, parsed);
    const base = gatewayCdpWsUrl(request.headers.host ?? 'localhost', browser.sessionId);
    const agentPrefix = `/browsers/${encodeURIComponent(browser.sessionId)}/cdp`;
    // The agent's URLs point at the agent; clients must reach the browser through the gateway.
    const rebase = (url: unknown): string => {
      const text = typeof url === 'string' ? url : '';
      const at = text.indexOf(agentPrefix);
      return at === -1 ? base : `${base}${text.slice(at + agentPrefix.length)}`;
    };
    if (path === 'json/version') return { ...(parsed as object), webSocketDebuggerUrl: base };
    return (parsed as Array<Record<string, unknown>>).map((t) => ({ ...t, webSocketDebuggerUrl: rebase(t.webSocketDebuggerUrl) }));
  }

  /** Host, path, key, session and project, in that order; then the agent's handshake, then bytes. */
  private async upgrade(request: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    if (!this.options.hosts.allows(request.headers.host)) {
      throw misdirectedRequest();
    }
    const path = new URL(request.url ?? '/', 'http://gateway').pathname;
    const match = UPGRADE_PATH.exec(path);
    if (!match) throw notFound('no WebSocket endpoint at this path (expected /browsers/{id}/cdp)');
    const principal = await this.options.auth.authenticate(request.headers.authorization);
    const browser = await this.browserFor(principal, decodeURIComponent(match[1]!));
    if (socket.destroyed) return;
    const rest = match[2] ?? '';
    const target = new URL(`${browser.agentUrl}/browsers/${encodeURIComponent(browser.sessionId)}/cdp${rest}`);
    const headers = this.agentHeaders(browser);
    headers.connection = 'Upgrade';
    headers.upgrade = 'websocket';
    for (const name of UPGRADE_HEADERS) {
      const value = request.headers[name];
      if (value !== undefined) headers[name] = value;
    }
    const upstream = await this.agentRequest(target, headers, true);
    if (!('socket' in upstream && 'head' in upstream)) {
      const response = upstream;
      const status = response.statusCode ?? 502;
      const body = await readBody(response, this.options.timeouts.idleMs);
      if (status === 401 || status === 403) {
        throw browserUnreachable(`the browser's agent rejected the gateway's credentials (HTTP ${status}; the agent token needs the cdp scope)`);
      }
      let error: unknown;
      try {
        error = JSON.parse(body);
      } catch {
        // Not the agent's error body: the status says enough.
      }
      throw agentAnswered(status, error);
    }
    this.relay(principal, socket, head, upstream);
  }

  private relay(principal: Principal, client: Socket, clientHead: Buffer, upstream: { response: IncomingMessage; socket: Socket; head: Buffer }): void {
    const agent = upstream.socket;
    if (client.destroyed) {
      agent.destroy();
      return;
    }
    const { response } = upstream;
    let headLines = `HTTP/1.1 101 Switching Protocols\r\n`;
    for (let i = 0; i < response.rawHeaders.length; i += 2) headLines += `${response.rawHeaders[i]}: ${response.rawHeaders[i + 1]}\r\n`;
    client.write(`${headLines}\r\n`);
    client.setNoDelay(true);
    agent.setNoDelay(true);
    client.setTimeout(0);
    if (upstream.head.length > 0) client.write(upstream.head);
    if (clientHead.length > 0) agent.write(clientHead);
    let done = false;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      untrack();
      this.relays.delete(relay);
      return true;
    };
    const relay: Relay = {
      // The key went: the connection ends (the client sees the socket close).
      end: () => {
        if (!finish()) return;
        agent.destroy();
        client.destroy();
      },
      abort: () => {
        if (!finish()) return;
        agent.destroy();
        client.destroy();
      },
    };
    this.relays.add(relay);
    const untrack = this.options.keys.track(principal, relay);
    // Backpressure per direction: pipe pauses the reading side while the writing side is full.
    agent.pipe(client);
    client.pipe(agent);
    // A side that closes ends the other once what it has is written; an error ends both at once.
    const closed = (other: Socket) => () => {
      if (!finish()) return;
      other.end();
      const cutoff = setTimeout(() => other.destroy(), this.options.timeouts.idleMs);
      cutoff.unref();
      other.once('close', () => clearTimeout(cutoff));
    };
    agent.on('error', () => relay.abort());
    client.on('error', () => relay.abort());
    agent.once('close', closed(client));
    client.once('close', closed(agent));
  }

  private async browserFor(principal: Principal, id: string): Promise<BrowserRecord> {
    const browser = await this.options.store.findBrowser(id);
    if (!browser) throw notFound('browser session not found');
    requireProjectAccess(principal, browser.projectId, 'browser');
    return browser;
  }

  private agentHeaders(browser: BrowserRecord): OutgoingHttpHeaders {
    return { authorization: `Bearer ${browser.agentToken}`, [VIA_GATEWAY_HEADER]: '1' };
  }

  /**
   * A GET to the agent (its own connection: an upgraded socket leaves any pool). Resolves with the
   * upgraded socket, or the response when the agent answered without upgrading.
   */
  private agentRequest(
    target: URL,
    headers: OutgoingHttpHeaders,
    upgrade: true,
  ): Promise<IncomingMessage | { response: IncomingMessage; socket: Socket; head: Buffer }>;
  private agentRequest(target: URL, headers: OutgoingHttpHeaders, upgrade: false): Promise<IncomingMessage>;
  private agentRequest(
    target: URL,
    headers: OutgoingHttpHeaders,
    upgrade: boolean,
  ): Promise<IncomingMessage | { response: IncomingMessage; socket: Socket; head: Buffer }> {
    const { timeouts } = this.options;
    const secure = target.protocol === 'https:';
    const request = (secure ? https : http).request({
      protocol: target.protocol,
      hostname: target.hostname,
      port: target.port,
      path: `${target.pathname}${target.search}`,
      method: 'GET',
      headers,
      agent: false,
    });
    return new Promise((resolve, reject) => {
      let timer = setTimeout(() => request.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), timeouts.connectMs);
      request.once('socket', (socket) => {
        socket.once('connect', () => {
          clearTimeout(timer);
          timer = setTimeout(() => request.destroy(new TimeoutError()), timeouts.responseMs);
        });
      });
      request.once('response', (response) => {
        clearTimeout(timer);
        resolve(response);
      });
      if (upgrade) {
        request.once('upgrade', (response, socket, head) => {
          clearTimeout(timer);
          resolve({ response, socket, head });
        });
      }
      request.once('error', (err) => {
        clearTimeout(timer);
        if (err instanceof TimeoutError) reject(browserTimedOut('response', timeouts.responseMs));
        else {
          const code = (err as NodeJS.ErrnoException).code;
          // The cause names the agent's address, which clients must not learn: only its code goes out.
          reject(browserUnreachable(`the browser's agent is unreachable${code ? ` (${code})` : ''}`));
        }
      });
      request.end();
    });
  }
}

class TimeoutError extends Error {}

/** The body, up to MAX_DISCOVERY_BODY; given up after `idleMs` without a byte. */
async function readBody(response: IncomingMessage, idleMs: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  let timer = setTimeout(() => response.destroy(), idleMs);
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      clearTimeout(timer);
      timer = setTimeout(() => response.destroy(), idleMs);
      size += chunk.length;
      if (size > MAX_DISCOVERY_BODY) throw browserUnreachable("the browser's agent answered with a too large body");
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw browserUnreachable("the browser's agent stopped answering");
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
