// The public browser paths (docs/gateway.md): `/browsers/{id}`, `/browsers/{id}/telemetry[/stream]`,
// `/browsers/{id}/telemetry/steps`, `/browsers/{id}/computer/batch`, `/browsers/{id}/fs/write_file`,
// `/browsers/{id}/replays[...]`. After the caller's key and project are checked, the request is
// forwarded to the session's agent with the agent's own token and the caller's key id (whose steps
// and actions go together, docs/events.md "Steps"): method, path and query verbatim, the body
// streamed unread. The agent's answer is piped
// back byte for byte (status, headers, body), so agent errors reach the client as they are.
//
// Streams: `pipe` moves bytes only as fast as the slower side takes them. A stalled client
// stops the gateway reading from the agent, whose socket then fills and the agent's own
// backpressure takes over (its subscriber falls behind and resumes from its log). The gateway
// holds at most the streams' high-water marks per connection, whatever the client does.
//
// An agent that goes quiet does not hold the caller forever (agent-silence.ts): no response head
// within the response timeout (a telemetry stream: 3 keepalive periods) is 504; a body that stops
// moving is cut. An exchange whose key is deleted or expires while it flows is ended (key-watch.ts).
//
// The archive (docs/gateway.md) uses two hooks here: a DELETE first drains what the agent still
// has into the archive, and after the agent's answer waits for the follower to read the stream's
// tail; and a telemetry stream may be preceded by archived frames (`StreamPrelude`), written
// while the agent's response waits unread, so that a client resuming from far back gets the
// archive first and the agent's frames after it.

import type { ClientRequest, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { finished, pipeline } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CALLER_HEADER, notFound, requestedWaitMs, VIA_GATEWAY_HEADER, type Action } from 'browser-telemetry-agent/http-kit';
import type { BrowserRecord, GatewayStore } from '../storage/store.ts';
import { AgentConnections } from '../agent-link/agent-connections.ts';
import { AgentTimeout, SilenceWatch, streamSilenceLimitMs, type AgentTimeouts } from '../agent-link/agent-silence.ts';
import { principalOf, requireProjectAccess, type Principal } from './auth.ts';
import { gatewayCdpWsUrl } from './views.ts';
import { browserTimedOut, browserUnreachable, type GatewayError } from './errors.ts';
import type { KeyWatch } from './key-watch.ts';

const BATCH_ROUTE = '/browsers/:id/computer/batch';
const WRITE_FILE_ROUTE = '/browsers/:id/fs/write_file';
/** A batch body larger than this is not read for its waits (the agent refuses it anyway): the longest allowed wait applies. */
const MAX_BATCH_BODY_READ = 1024 * 1024;
/** The most waiting a batch may declare (src/computer/batch-schema.ts BATCH_LIMITS.maxTotalWaitMs). */
const MAX_BATCH_WAIT_MS = 60_000;

/**
 * The waiting a batch body declares (docs/gateway.md "Timeouts"), as the agent counts it; the
 * longest allowed when the body cannot be read as a batch (the agent answers 400 for it at once).
 */
export function declaredBatchWaitMs(body: Buffer | undefined): number {
  if (body === undefined) return MAX_BATCH_WAIT_MS;
  try {
    const actions = (JSON.parse(body.toString('utf8')) as { actions?: unknown }).actions;
    if (!Array.isArray(actions)) return 0;
    let total = 0;
    for (const action of actions as Action[]) {
      if (typeof action !== 'object' || action === null) continue;
      const payload = (action as unknown as Record<string, unknown>)[action.type];
      if (typeof payload !== 'object' || payload === null) continue;
      total += requestedWaitMs(action);
    }
    return Math.min(total, MAX_BATCH_WAIT_MS);
  } catch {
    return MAX_BATCH_WAIT_MS;
  }
}

/** Request headers the agent needs; everything else (cookies, the caller's key) stays here. */
const FORWARDED_REQUEST_HEADERS = ['accept', 'content-type', 'content-length', 'transfer-encoding', 'last-event-id', 'range', 'if-range'] as const;

/** Hop-by-hop headers (RFC 9110 §7.6.1) describe one connection and are never passed on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** Largest agent error body kept when the gateway answers in its place (a rejected token). */
const MAX_INNER_BODY = 16 * 1024;
/** Largest replay list read to add the viewer links (a session's replays are a few hundred bytes each). */
const MAX_REPLAY_LIST_BODY = 4 * 1024 * 1024;

/** The replay routes whose JSON answer holds replay objects, which get the gateway's viewer link. */
const REPLAY_OBJECT_ROUTES = new Set(['/browsers/:id/replays', '/browsers/:id/replays/:replay_id/stop']);

/** The routes whose answer is a telemetry stream (SSE), watched by the agents' keepalive. */
const STREAM_ROUTES = new Set(['/browsers/:id/telemetry', '/browsers/:id/telemetry/stream']);

/** What the archive does around a DELETE (archive/archive.ts). */
export interface SessionEndHooks {
  /** Before the DELETE is forwarded: the agent's events not yet archived are archived. */
  beforeDelete(browser: BrowserRecord): Promise<void>;
  /** After the agent ended the session (2xx or 404) and the registration is marked deleted. */
  afterDelete(browser: BrowserRecord): Promise<void>;
}

/** Frames written to a forwarded stream's client before the agent's (archive/archive-stream.ts). */
export interface StreamPrelude {
  /** The response headers, from the agent's. */
  headers(agentHeaders: OutgoingHttpHeaders): OutgoingHttpHeaders;
  /** Writes the frames; stops early when `open()` turns false (the exchange ended). */
  write(response: ServerResponse, open: () => boolean): Promise<void>;
}

export interface ForwardOptions {
  /** The query string sent instead of the request's (`''` or `?a=b`). */
  query?: string;
  /** Last-Event-ID sent instead of the request's; null sends none. */
  lastEventId?: string | null;
  prelude?: StreamPrelude;
}

export interface BrowserProxyOptions {
  store: GatewayStore;
  timeouts: AgentTimeouts;
  /** Ends open exchanges whose key goes. */
  keys: KeyWatch;
  sessionEnds?: SessionEndHooks;
  /**
   * The gateway's one-time viewer link at a replay (docs/replay.md "Through the gateway"): the
   * agent leaves its own out of what the gateway forwards.
   */
  replayViewUrl?: (request: FastifyRequest, browser: BrowserRecord, replayId: string) => string;
}

/** One forwarded exchange whose response is being piped. */
interface OpenExchange {
  /** Ends the client's response cleanly where it is (its key is gone). */
  end(): void;
  /** Destroys both sides (shutdown, a silent agent, a failed side). */
  abort(): void;
}

export class BrowserProxy {
  private readonly connections = new AgentConnections();
  private readonly open = new Set<OpenExchange>();
  /**
   * Requests sent to an agent whose head has not come yet. close() ends them too: a hung agent's
   * head wait (45 s for a stream) would otherwise hold the server's close past the shutdown
   * deadline.
   */
  private readonly awaitingHead = new Set<ClientRequest>();

  constructor(private readonly options: BrowserProxyOptions) {}

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
      // The telemetry streams are the archive's routes (http/archive-routes.ts), which forward
      // through forward().
      scope.post('/browsers/:id/telemetry/steps', options, handler);
      scope.post('/browsers/:id/computer/batch', options, handler);
      scope.put('/browsers/:id/fs/write_file', options, handler);
      // Replays (docs/replay.md): the download passes Range on and pipes the video back as it comes.
      const replayParams = { type: 'object', properties: { id: { type: 'string' }, replay_id: { type: 'string' } }, required: ['id', 'replay_id'] } as const;
      const replayOptions = { schema: { params: replayParams }, exposeHeadRoute: false };
      scope.route({ method: ['GET', 'POST'], url: '/browsers/:id/replays', ...options, handler });
      scope.post('/browsers/:id/replays/:replay_id/stop', replayOptions, handler);
      scope.get('/browsers/:id/replays/:replay_id', replayOptions, handler);
    });
  }

  /** Ends every forwarded exchange (gateway shutdown): clients reconnect elsewhere with Last-Event-ID. */
  close(): void {
    for (const exchange of [...this.open]) exchange.abort();
    this.open.clear();
    for (const upstream of [...this.awaitingHead]) upstream.destroy(new Error('the gateway is shutting down'));
    this.awaitingHead.clear();
    this.connections.destroy();
  }

  private async handle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const { id } = request.params as { id: string };
    const browser = await this.options.store.findBrowser(id);
    if (!browser) throw notFound('browser session not found');
    requireProjectAccess(principalOf(request), browser.projectId, 'browser');
    if (request.method === 'DELETE' && this.options.sessionEnds) {
      try {
        await this.options.sessionEnds.beforeDelete(browser);
      } catch (err) {
        // The DELETE goes on: what the archive missed stays missed, the session still ends.
        request.log.warn({ session_id: id, err }, 'archive drain before DELETE failed');
      }
    }
    await this.forward(request, reply, browser);
  }

  /**
   * Forwards the request to the agent of `browser` (already found and access-checked) and pipes
   * its answer back; `options` change what is sent and may put archived frames first.
   */
  async forward(request: FastifyRequest, reply: FastifyReply, browser: BrowserRecord, options: ForwardOptions = {}): Promise<void> {
    const id = browser.sessionId;
    const principal = principalOf(request);
    const stream = STREAM_ROUTES.has(request.routeOptions.url!);
    let upstreamResponse: IncomingMessage;
    let upstream: ClientRequest;
    try {
      ({ upstream, response: upstreamResponse } = await this.send(request, reply, browser, stream, options));
    } catch (err) {
      if (err instanceof AgentTimeout) {
        request.log.warn({ session_id: id, err }, 'agent timed out');
        throw failure(request, browserTimedOut(err.waitedFor, err.afterMs));
      }
      request.log.warn({ session_id: id, err }, 'agent unreachable');
      // The cause names the agent's address, which clients must not learn: only its code goes out.
      const code = (err as NodeJS.ErrnoException).code;
      throw failure(request, browserUnreachable(`the browser's agent is unreachable${code ? ` (${code})` : ''}`));
    }
    // Errors after the head come out of the response, handled by whoever reads it.
    upstream.on('error', () => undefined);

    const status = upstreamResponse.statusCode ?? 502;
    if (status === 401 || status === 403) {
      // The caller's key was fine; the registration's agent token is not. Not the caller's fault.
      const { text: body } = await readSmallBody(upstreamResponse, this.options.timeouts.idleMs);
      request.log.warn({ session_id: id, status, body }, 'the agent rejected the registered token');
      throw failure(request, browserUnreachable(`the browser's agent rejected the gateway's credentials (HTTP ${status})`));
    }
    if (request.method === 'DELETE' && ((status >= 200 && status < 300) || status === 404)) {
      // The session is gone on the agent (just now, or earlier): so is the registration.
      try {
        await this.options.store.markBrowserDeleted(id);
      } catch (err) {
        upstreamResponse.destroy();
        throw err;
      }
      try {
        await this.options.sessionEnds?.afterDelete(browser);
      } catch (err) {
        request.log.warn({ session_id: id, err }, 'archive: waiting for the tail after DELETE failed');
      }
    }
    if (status === 200 && request.method === 'GET' && request.routeOptions.url === '/browsers/:id') {
      // The browser object carries the gateway's CDP endpoint (the agent left its own out).
      const { text: body, cut } = await readSmallBody(upstreamResponse, this.options.timeouts.idleMs);
      // A body the agent stopped sending is a timeout, as for any other route (docs/gateway.md "Timeouts").
      if (cut) throw failure(request, browserTimedOut('rest of the browser object', this.options.timeouts.idleMs));
      let view: unknown;
      try {
        view = JSON.parse(body);
      } catch {
        throw failure(request, browserUnreachable("the browser's agent answered with something other than JSON"));
      }
      const host = request.headers.host ?? 'localhost';
      reply.code(200).send({ ...(view as object), cdp_ws_url: gatewayCdpWsUrl(host, browser.sessionId) });
      return;
    }
    if ((status === 200 || status === 201) && this.options.replayViewUrl && REPLAY_OBJECT_ROUTES.has(request.routeOptions.url!)) {
      const { text: body, cut } = await readSmallBody(upstreamResponse, this.options.timeouts.idleMs, MAX_REPLAY_LIST_BODY);
      if (cut) throw failure(request, browserTimedOut('rest of the replays', this.options.timeouts.idleMs));
      let answer: unknown;
      try {
        answer = JSON.parse(body);
      } catch {
        throw failure(request, browserUnreachable("the browser's agent answered with something other than JSON"));
      }
      const withLink = (replay: unknown): unknown => {
        const id = (replay as { replay_id?: unknown } | null)?.replay_id;
        return typeof id === 'string' ? { ...(replay as object), replay_view_url: this.options.replayViewUrl!(request, browser, id) } : replay;
      };
      reply.code(status).send(Array.isArray(answer) ? answer.map(withLink) : withLink(answer));
      return;
    }
    const prelude = status === 200 ? options.prelude : undefined;
    this.pipeResponse(request, reply, upstream, upstreamResponse, principal, stream, prelude);
  }

  /**
   * Sends the request to the agent; resolves with its response head. Rejects when the agent
   * cannot be reached, or with AgentTimeout when it takes the request and goes quiet.
   */
  private send(
    request: FastifyRequest,
    reply: FastifyReply,
    browser: BrowserRecord,
    stream: boolean,
    options: ForwardOptions,
  ): Promise<{ upstream: ClientRequest; response: IncomingMessage }> {
    // The agent's path is rebuilt from the route and the registered id (never the raw URL, which
    // may spell the id in other ways); the query passes on verbatim.
    const queryAt = request.url.indexOf('?');
    const query = options.query ?? (queryAt === -1 ? '' : request.url.slice(queryAt));
    const { replay_id: replayId } = request.params as { replay_id?: string };
    const path = request.routeOptions.url!.replace(':id', encodeURIComponent(browser.sessionId)).replace(':replay_id', encodeURIComponent(replayId ?? ''));
    const target = new URL(`${browser.agentUrl}${path}${query}`);
    // The agent then leaves its own cdp_ws_url out of the browser object: clients must not route
    // around the gateway (docs/gateway.md).
    const headers: OutgoingHttpHeaders = {
      authorization: `Bearer ${browser.agentToken}`,
      [VIA_GATEWAY_HEADER]: '1',
      [CALLER_HEADER]: `key:${principalOf(request).keyId}`,
    };
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const value: string | string[] | undefined = request.headers[name];
      if (value !== undefined) headers[name as string] = value;
    }
    if (options.lastEventId === null) delete headers['last-event-id'];
    else if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
    const hasBody = headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined;
    const upstream = this.connections.request(target, request.method, headers);
    this.awaitingHead.add(upstream);
    upstream.once('close', () => this.awaitingHead.delete(upstream));
    const route = request.routeOptions.url;
    // A batch's body is kept (up to MAX_BATCH_BODY_READ) as it streams through, for its waits.
    let batchBody: Buffer[] | undefined = route === BATCH_ROUTE ? [] : undefined;
    let batchBytes = 0;

    const { timeouts } = this.options;
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let watch: SilenceWatch | undefined;
      let answered = false;
      const settle = () => {
        clearTimeout(timer);
        watch?.stop();
      };
      const silent = (waitedFor: string, afterMs: number) => () => upstream.destroy(new AgentTimeout(waitedFor, afterMs));
      upstream.on('socket', (socket) => {
        socket.setNoDelay(true);
        if (!socket.connecting) return;
        timer = setTimeout(() => upstream.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), timeouts.connectMs);
        socket.once('connect', () => clearTimeout(timer));
      });
      // The whole request is with the agent: now it is the agent's turn to answer. A stream's
      // head comes at once from a live agent, so it gets the stream's limit.
      upstream.once('finish', () => {
        if (answered) return;
        watch?.stop();
        // Per route (docs/gateway.md "Timeouts"): a batch may wait as long as it declares; a
        // write_file's agent is still writing to disk, which the idle limit covers.
        let limit = timeouts.responseMs;
        if (stream) limit = streamSilenceLimitMs(timeouts);
        else if (route === BATCH_ROUTE) limit = declaredBatchWaitMs(batchBody && Buffer.concat(batchBody)) + timeouts.batchMarginMs;
        else if (route === WRITE_FILE_ROUTE) limit = timeouts.idleMs;
        batchBody = undefined;
        watch = new SilenceWatch(limit, () => true, silent(stream ? 'response headers' : 'response', limit));
      });
      upstream.once('response', (response) => {
        answered = true;
        this.awaitingHead.delete(upstream);
        settle();
        resolve({ upstream, response });
      });
      upstream.once('error', (err) => {
        answered = true;
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
        // all (413, 404) ends this pipe early, which is fine: its answer is what counts. While
        // the agent does not take what the client sent, it is the silent one.
        watch = new SilenceWatch(timeouts.idleMs, () => upstream.writableNeedDrain, silent('progress on the request body', timeouts.idleMs));
        pipeline(request.raw, upstream, () => undefined);
        request.raw.on('data', (chunk: Buffer) => {
          watch?.touch();
          if (batchBody === undefined) return;
          batchBytes += chunk.length;
          // Too large to be a batch the agent takes: counted at the longest wait.
          if (batchBytes > MAX_BATCH_BODY_READ) batchBody = undefined;
          else batchBody.push(chunk);
        });
      } else {
        upstream.end();
      }
    });
  }

  private pipeResponse(
    request: FastifyRequest,
    reply: FastifyReply,
    upstream: ClientRequest,
    upstreamResponse: IncomingMessage,
    principal: Principal,
    stream: boolean,
    prelude?: StreamPrelude,
  ): void {
    let headers: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(upstreamResponse.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    if (prelude) {
      headers = prelude.headers(headers);
      // Not read while the prelude is written: paused, so that the silence watch below knows the
      // wait is not the agent's.
      upstreamResponse.pause();
    }
    reply.hijack();
    const response = reply.raw;
    response.writeHead(upstreamResponse.statusCode ?? 502, headers);
    // An SSE stream may stay silent for a while: the client must see that it is open now.
    if (String(upstreamResponse.headers['content-type'] ?? '').startsWith('text/event-stream')) response.flushHeaders();

    const { timeouts } = this.options;
    const limit = stream ? streamSilenceLimitMs(timeouts) : timeouts.idleMs;
    // While the client does not take what the gateway has (its socket full, the pipe paused),
    // the gateway does not read from the agent either: that silence is not the agent's.
    const watch = new SilenceWatch(
      limit,
      () => !upstreamResponse.isPaused() && !response.writableNeedDrain,
      () => {
        request.log.warn({ session_id: (request.params as { id: string }).id, silent_ms: limit }, 'agent went silent: forwarded response cut');
        exchange.abort();
      },
    );
    let done = false;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      watch.stop();
      untrack();
      this.open.delete(exchange);
      return true;
    };
    const exchange: OpenExchange = {
      end: () => {
        if (!finish()) return;
        upstreamResponse.unpipe(response);
        upstream.destroy();
        response.end();
        // A client that does not take the rest does not keep the connection.
        const cutoff = setTimeout(() => response.destroy(), timeouts.idleMs);
        cutoff.unref();
        response.once('close', () => clearTimeout(cutoff));
      },
      abort: () => {
        if (!finish()) return;
        upstream.destroy();
        response.destroy();
      },
    };
    this.open.add(exchange);
    const untrack = this.options.keys.track(principal, exchange);

    // The agent's response failed (reset, destroyed): the client's cannot be completed.
    finished(upstreamResponse, (err) => {
      if (err) exchange.abort();
    });
    // The client went away (or its response failed): the agent's side goes too.
    finished(response, (err) => {
      if (err) exchange.abort();
      else finish();
    });
    const pipeAgent = (): void => {
      if (done) return;
      // Ends the client's response when the agent's ends (a terminated session closes its
      // streams). fastify still logs the request when the response finishes.
      upstreamResponse.pipe(response);
      upstreamResponse.on('data', () => watch.touch());
    };
    if (!prelude) {
      pipeAgent();
      return;
    }
    prelude
      .write(response, () => !done && !response.destroyed)
      .then(pipeAgent, (err: unknown) => {
        request.log.warn({ session_id: (request.params as { id: string }).id, err }, 'archived part of a stream failed');
        exchange.abort();
      });
  }
}

/**
 * The gateway's answer in place of the agent's. A failed non-GET request is never worth an
 * automatic retry (docs/operations.md#threat-model): the agent may have run part of a batch or written a file; a GET may
 * be retried (the SDK retries 5xx by default). A request body not all received (an agent that
 * stopped taking an upload) leaves the connection unusable: it is closed after the answer.
 */
function failure(request: FastifyRequest, error: GatewayError): GatewayError {
  if (request.method !== 'GET') error.withHeader('x-should-retry', 'false');
  if (!request.raw.complete) error.withHeader('connection', 'close');
  return error;
}

/** The agent's (error) body, up to MAX_INNER_BODY; given up after `idleMs` without a byte. */
/** A small body, read until its end or `idleMs` without a byte (then `cut`). */
async function readSmallBody(response: IncomingMessage, idleMs: number, maxChars = MAX_INNER_BODY): Promise<{ text: string; cut: boolean }> {
  let text = '';
  let cut = false;
  const watch = new SilenceWatch(
    idleMs,
    () => true,
    () => {
      cut = true;
      response.destroy();
    },
  );
  try {
    for await (const chunk of response) {
      watch.touch();
      if (text.length < maxChars) text += String(chunk);
    }
  } catch {
    // What arrived is enough for the log.
  } finally {
    watch.stop();
  }
  return { text: text.slice(0, maxChars), cut };
}
