// The public browser paths (SPEC §13): `/browsers/{id}`, `/browsers/{id}/telemetry[/stream]`,
// `/browsers/{id}/computer/batch`, `/browsers/{id}/fs/write_file`. After the caller's key and
// project are checked, the request is forwarded to the session's agent with the agent's own
// token: method, path and query verbatim, the body streamed unread. The agent's answer is piped
// back byte for byte (status, headers, body), so agent errors reach the client as they are.
//
// Streams: `pipeline` moves bytes only as fast as the slower side takes them. A stalled client
// stops the gateway reading from the agent, whose socket then fills and the agent's own
// backpressure takes over (its subscriber falls behind and resumes from its log). The gateway
// holds at most the streams' high-water marks per connection, whatever the client does.

import http, { type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import https from 'node:https';
import { pipeline } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { notFound, type ApiError } from '../../http/errors.ts';
import type { BrowserRecord, GatewayStore } from '../storage/store.ts';
import { principalOf, requireProjectAccess } from './auth.ts';
import { browserUnreachable } from './errors.ts';

/** Request headers the agent needs; everything else (cookies, the caller's key) stays here. */
const FORWARDED_REQUEST_HEADERS = ['accept', 'content-type', 'content-length', 'transfer-encoding', 'last-event-id'] as const;

/** Hop-by-hop headers (RFC 9110 §7.6.1) describe one connection and are never passed on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** Largest agent error body kept when the gateway answers in its place (a rejected token). */
const MAX_INNER_BODY = 16 * 1024;

export interface BrowserProxyOptions {
  store: GatewayStore;
  /** Time to establish the TCP connection to an agent; then 502. */
  connectTimeoutMs?: number;
}

/** One forwarded exchange whose response is being piped. */
interface OpenExchange {
  upstream: ClientRequest;
  response: ServerResponse;
}

export class BrowserProxy {
  private readonly httpAgent = new http.Agent({ keepAlive: true });
  private readonly httpsAgent = new https.Agent({ keepAlive: true });
  private readonly open = new Set<OpenExchange>();
  private readonly connectTimeoutMs: number;

  constructor(private readonly options: BrowserProxyOptions) {
    this.connectTimeoutMs = options.connectTimeoutMs ?? 5000;
  }

  /** Forwarded exchanges still piping (streams mostly). */
  get openExchanges(): number {
    return this.open.size;
  }

  register(app: FastifyInstance): void {
    // An encapsulated scope whose only body "parser" leaves the body unread, so it can be
    // streamed to the agent as it arrives (write_file bodies are up to 512 MiB).
    void app.register(async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
      const handler = (request: FastifyRequest, reply: FastifyReply) => this.handle(request, reply);
      const params = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } as const;
      // HEAD would open a stream for nothing.
      const options = { schema: { params }, exposeHeadRoute: false };
      scope.route({ method: ['GET', 'PATCH', 'DELETE'], url: '/browsers/:id', ...options, handler });
      scope.get('/browsers/:id/telemetry', options, handler);
      scope.get('/browsers/:id/telemetry/stream', options, handler);
      scope.post('/browsers/:id/computer/batch', options, handler);
      scope.put('/browsers/:id/fs/write_file', options, handler);
    });
  }

  /** Ends every forwarded exchange (gateway shutdown): clients reconnect elsewhere with Last-Event-ID. */
  close(): void {
    for (const exchange of this.open) {
      exchange.upstream.destroy();
      exchange.response.destroy();
    }
    this.open.clear();
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  private async handle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const { id } = request.params as { id: string };
    const browser = await this.options.store.findBrowser(id);
    if (!browser) throw notFound('browser session not found');
    requireProjectAccess(principalOf(request), browser.projectId, 'browser');

    const idempotent = request.method === 'GET';
    let upstreamResponse: IncomingMessage;
    let upstream: ClientRequest;
    try {
      ({ upstream, response: upstreamResponse } = await this.send(request, reply, browser));
    } catch (err) {
      request.log.warn({ session_id: id, err }, 'agent unreachable');
      // The cause names the agent's address, which clients must not learn: only its code goes out.
      const code = (err as NodeJS.ErrnoException).code;
      throw this.unreachable(idempotent, `the browser's agent is unreachable${code ? ` (${code})` : ''}`);
    }

    const status = upstreamResponse.statusCode ?? 502;
    if (status === 401 || status === 403) {
      // The caller's key was fine; the registration's agent token is not. Not the caller's fault.
      const body = await readSmallBody(upstreamResponse);
      request.log.warn({ session_id: id, status, body }, 'the agent rejected the registered token');
      throw this.unreachable(idempotent, `the browser's agent rejected the gateway's credentials (HTTP ${status})`);
    }
    if (request.method === 'DELETE' && ((status >= 200 && status < 300) || status === 404)) {
      // The session is gone on the agent (just now, or earlier): so is the registration.
      try {
        await this.options.store.markBrowserDeleted(id);
      } catch (err) {
        upstreamResponse.destroy();
        throw err;
      }
    }
    this.pipeResponse(reply, upstream, upstreamResponse);
  }

  /** Sends the request to the agent; resolves with its response head. */
  private send(request: FastifyRequest, reply: FastifyReply, browser: BrowserRecord): Promise<{ upstream: ClientRequest; response: IncomingMessage }> {
    // The agent's path is rebuilt from the route and the registered id (never the raw URL, which
    // may spell the id in other ways); the query passes on verbatim.
    const query = request.url.indexOf('?');
    const path = request.routeOptions.url!.replace(':id', encodeURIComponent(browser.sessionId));
    const target = new URL(`${browser.agentUrl}${path}${query === -1 ? '' : request.url.slice(query)}`);
    const headers: OutgoingHttpHeaders = { authorization: `Bearer ${browser.agentToken}` };
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const value: string | string[] | undefined = request.headers[name];
      if (value !== undefined) headers[name as string] = value;
    }
    const hasBody = headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined;
    const secure = target.protocol === 'https:';
    const upstream = (secure ? https : http).request({
      protocol: target.protocol,
      hostname: target.hostname,
      port: target.port,
      path: `${target.pathname}${target.search}`,
      method: request.method,
      headers,
      agent: secure ? this.httpsAgent : this.httpAgent,
    });

    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = () => clearTimeout(timer);
      upstream.on('socket', (socket) => {
        socket.setNoDelay(true);
        if (!socket.connecting) return;
        timer = setTimeout(() => upstream.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), this.connectTimeoutMs);
        socket.once('connect', settle);
      });
      upstream.once('response', (response) => {
        settle();
        resolve({ upstream, response });
      });
      upstream.once('error', (err) => {
        settle();
        reject(err);
      });
      // A client that leaves before the agent answered takes the forwarded request with it.
      const onClientGone = () => {
        if (!reply.raw.headersSent) upstream.destroy(new Error('the client went away'));
      };
      reply.raw.once('close', onClientGone);
      upstream.once('response', () => reply.raw.off('close', onClientGone));

      if (hasBody) {
        // The body streams through with backpressure; an agent that answers before reading it
        // all (413, 404) ends this pipe early, which is fine: its answer is what counts.
        pipeline(request.raw, upstream, () => undefined);
      } else {
        upstream.end();
      }
    });
  }

  private pipeResponse(reply: FastifyReply, upstream: ClientRequest, upstreamResponse: IncomingMessage): void {
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(upstreamResponse.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    reply.hijack();
    const response = reply.raw;
    response.writeHead(upstreamResponse.statusCode ?? 502, headers);
    // An SSE stream may stay silent for a while: the client must see that it is open now.
    if (String(upstreamResponse.headers['content-type'] ?? '').startsWith('text/event-stream')) response.flushHeaders();

    const exchange: OpenExchange = { upstream, response };
    this.open.add(exchange);
    // Ends the client's response when the agent's ends (a terminated session closes its streams);
    // destroys either side when the other fails or goes away. fastify still logs the request
    // when the response finishes.
    pipeline(upstreamResponse, response, (err) => {
      this.open.delete(exchange);
      if (err) upstream.destroy();
    });
  }

  /** 502 browser_unavailable; a failed non-GET request is never worth an automatic retry. */
  private unreachable(idempotent: boolean, message: string): ApiError {
    const error = browserUnreachable(message);
    return idempotent ? error : error.withHeader('x-should-retry', 'false');
  }
}

async function readSmallBody(response: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of response) {
    if (text.length < MAX_INNER_BODY) text += String(chunk);
  }
  return text.slice(0, MAX_INNER_BODY);
}
