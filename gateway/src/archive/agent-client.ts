// The archive's own requests to agents (docs/gateway.md "Following"): the telemetry stream a
// follower reads, pages of the agent's history (the drain before a DELETE, the live part of a
// read), and the replays' list and files (docs/gateway.md "Replays"). Always with the registered agent token; connection pools of their own, so the archive's
// long-lived streams never share sockets with forwarded client requests.

import type { ClientRequest, IncomingMessage } from 'node:http';
import { AgentConnections } from '../agent-link/agent-connections.ts';
import type { BrowserRecord } from '../storage/store.ts';

/** What the archive needs of a registration to reach its agent. */
export type AgentAddress = Pick<BrowserRecord, 'sessionId' | 'agentUrl' | 'agentToken'>;

/** The agent could not be reached or did not answer in time (a network failure, not an answer). */
export class AgentUnreachable extends Error {
  override name = 'AgentUnreachable';
  constructor(
    message: string,
    readonly code: string | undefined,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The agent answered with a status the caller did not expect. */
export class AgentAnswered extends Error {
  override name = 'AgentAnswered';
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`the agent answered HTTP ${status}`);
  }
}

export interface HistoryPageQuery {
  offset?: number;
  limit: number;
  order?: 'asc' | 'desc';
  since?: string;
  until?: string;
  /** The filter parameters as the caller gave them (each a list). */
  filters?: Record<string, readonly string[]>;
}

/** An envelope of an agent's history page. */
export interface AgentEnvelope {
  seq: number;
  /** The event's ts (Unix µs). */
  ts: number;
  /** The envelope's JSON text. */
  json: string;
}

export interface AgentHistoryPage {
  /** The envelopes, in the page's order. */
  items: AgentEnvelope[];
  hasMore: boolean;
  nextOffset: number;
}

const MAX_ERROR_BODY = 16 * 1024;

export class AgentClient {
  private readonly connections = new AgentConnections();

  constructor(
    private readonly timeouts: {
      connectMs: number;
      /** History pages: the head, then the longest pause in the body. */
      responseMs: number;
      /** Streams: a live agent answers the head at once (3 keepalive periods, like the proxy). */
      streamHeadMs: number;
    },
  ) {}

  /**
   * Opens `GET /browsers/{id}/telemetry` with `headers`; resolves with the response head (any
   * status). The caller owns the response: it reads or destroys it.
   */
  openStream(agent: AgentAddress, query: string, headers: Record<string, string>): Promise<{ request: ClientRequest; response: IncomingMessage }> {
    return this.send(agent, `/browsers/${encodeURIComponent(agent.sessionId)}/telemetry${query}`, headers, this.timeouts.streamHeadMs);
  }

  /** One page of `GET /browsers/{id}/telemetry/events`; AgentAnswered for any status but 200. */
  async historyPage(agent: AgentAddress, query: HistoryPageQuery): Promise<AgentHistoryPage> {
    const params = new URLSearchParams();
    if (query.offset !== undefined) params.set('offset', String(query.offset));
    params.set('limit', String(query.limit));
    if (query.order !== undefined) params.set('order', query.order);
    if (query.since !== undefined) params.set('since', query.since);
    if (query.until !== undefined) params.set('until', query.until);
    for (const [name, values] of Object.entries(query.filters ?? {})) for (const value of values) params.append(name, value);
    const path = `/browsers/${encodeURIComponent(agent.sessionId)}/telemetry/events?${params.toString()}`;
    const { response, parsed } = await this.jsonArray(agent, path, 'the history page');
    // The agent writes each envelope with JSON.stringify, so writing it again gives its bytes.
    const items: AgentEnvelope[] = [];
    for (const item of parsed as Array<{ seq?: unknown; event?: { ts?: unknown } }>) {
      if (typeof item?.seq !== 'number') throw new AgentAnswered(200, 'a history envelope has no seq');
      items.push({ seq: item.seq, ts: typeof item.event?.ts === 'number' ? item.event.ts : 0, json: JSON.stringify(item) });
    }
    return {
      items,
      hasMore: response.headers['x-has-more'] === 'true',
      nextOffset: Number(response.headers['x-next-offset'] ?? 0),
    };
  }

  /**
   * `GET /browsers/{id}/replays`: the agent's replay objects (docs/gateway.md "Replays");
   * AgentAnswered for any status but 200 (an agent without replays, a token without the scope).
   */
  async replays(agent: AgentAddress): Promise<unknown[]> {
    return (await this.jsonArray(agent, `/browsers/${encodeURIComponent(agent.sessionId)}/replays`, 'the replay list')).parsed;
  }

  /** `GET path` answered 200 with a JSON array; AgentAnswered otherwise, `what` naming the body. */
  private async jsonArray(agent: AgentAddress, path: string, what: string): Promise<{ response: IncomingMessage; parsed: unknown[] }> {
    const { response } = await this.send(agent, path, { accept: 'application/json' }, this.timeouts.responseMs);
    const body = await readBody(response, this.timeouts.responseMs);
    if (response.statusCode !== 200) throw new AgentAnswered(response.statusCode ?? 0, body.slice(0, MAX_ERROR_BODY));
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      throw new AgentAnswered(200, `${what} is not JSON`);
    }
    if (!Array.isArray(parsed)) throw new AgentAnswered(200, `${what} is not a JSON array`);
    return { response, parsed };
  }

  /**
   * `GET /browsers/{id}/replays/{replay_id}`, from byte `from` when given (a Range request that
   * holds only while the file is still the one of `etag`). Resolves with the response head (any
   * status); the caller reads or destroys the body.
   */
  replayFile(agent: AgentAddress, replayId: string, from?: { offset: number; etag: string }): Promise<IncomingMessage> {
    const headers: Record<string, string> = { accept: 'video/*' };
    if (from !== undefined) {
      headers.range = `bytes=${from.offset}-`;
      headers['if-range'] = from.etag;
    }
    const path = `/browsers/${encodeURIComponent(agent.sessionId)}/replays/${encodeURIComponent(replayId)}`;
    return this.send(agent, path, headers, this.timeouts.responseMs).then(({ response }) => response);
  }

  /** How long a body may go without a byte (the history pages' wait). */
  get bodyIdleMs(): number {
    return this.timeouts.responseMs;
  }

  close(): void {
    this.connections.destroy();
  }

  private send(
    agent: AgentAddress,
    path: string,
    headers: Record<string, string>,
    responseMs: number,
  ): Promise<{ request: ClientRequest; response: IncomingMessage }> {
    const request = this.connections.request(new URL(`${agent.agentUrl}${path}`), 'GET', { ...headers, authorization: `Bearer ${agent.agentToken}` });
    return new Promise((resolve, reject) => {
      let connectTimer: NodeJS.Timeout | undefined;
      const responseTimer = setTimeout(() => request.destroy(Object.assign(new Error('no response head in time'), { code: 'ETIMEDOUT' })), responseMs);
      request.on('socket', (socket) => {
        socket.setNoDelay(true);
        if (!socket.connecting) return;
        connectTimer = setTimeout(() => request.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), this.timeouts.connectMs);
        socket.once('connect', () => clearTimeout(connectTimer));
      });
      request.once('response', (response) => {
        clearTimeout(connectTimer);
        clearTimeout(responseTimer);
        resolve({ request, response });
      });
      request.once('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(connectTimer);
        clearTimeout(responseTimer);
        reject(new AgentUnreachable(err.message, err.code));
      });
      request.end();
    });
  }
}

/** The whole body as text; the response is destroyed after `idleMs` without a byte. */
async function readBody(response: IncomingMessage, idleMs: number): Promise<string> {
  const chunks: Buffer[] = [];
  let timer = setTimeout(() => response.destroy(new Error('body timed out')), idleMs);
  try {
    for await (const chunk of response) {
      clearTimeout(timer);
      timer = setTimeout(() => response.destroy(new Error('body timed out')), idleMs);
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    throw new AgentUnreachable(`the agent's answer was cut: ${(err as Error).message}`, (err as NodeJS.ErrnoException).code, { cause: err });
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
