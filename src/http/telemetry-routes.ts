// GET /browsers/{id}/telemetry[/stream]: the SSE stream, and GET /browsers/{id}/telemetry/events:
// the history read (docs/events.md "Filters", "Resuming", "History"). Everything that can fail
// (auth, id, query, Last-Event-ID) is checked before the response is hijacked, so failures get
// the JSON error body and no stream byte is ever written for them.

import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { EVENT_TYPES, FILTER_CATEGORIES, parseFilter, type FilterQuery } from '../stream/event-filter.ts';
import { HistoryReader } from '../stream/history.ts';
import { delimitByConnection, socketSink } from '../stream/socket-sink.ts';
import { resolveStart } from '../stream/start-position.ts';
import type { BearerAuth } from './auth.ts';
import { browserGuard, browserParamsSchema } from './browser-guard.ts';
import { browserUnavailable, invalidInput } from './errors.ts';
import { timeBound } from './export-query.ts';
import { requireDecimalIntegers } from './query-rules.ts';
import { BROWSER_ERRORS, errorResponses } from './schemas.ts';
import type { HttpDeps } from './http-deps.ts';

export const SSE_HEADERS = {
  'Content-Type': 'text/event-stream',
  'X-SSE-Content-Type': 'application/json',
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no',
} as const;

/** Response headers of a stream: which log it reads, where it starts, how a resume went. */
export const LOG_ID_HEADER = 'X-Log-Id';
export const FIRST_SEQ_HEADER = 'X-First-Seq';
export const RESUME_HEADER = 'X-Resume';

interface StreamQuery extends FilterQuery {
  replay?: 'all';
}

const listParam = (description: string, items: object = { type: 'string' }) => ({ type: 'array', items, description });

/** The filter parameters, shared by the stream and the history read. */
const filterProperties = {
  category: listParam(`Only these categories (repeat or comma-separate): ${FILTER_CATEGORIES.join(', ')}; combines with type as a union`),
  type: listParam(`Only these event types (repeat or comma-separate): ${EVENT_TYPES.join(', ')}`),
  target_id: listParam('Only events of these targets (data.target_id)'),
  nav_seq: listParam('Only events of these navigations of their target (data.nav_seq)'),
  caused_by: listParam('Only these actions and the events they caused (data.action_id or data.caused_by)'),
  step_id: listParam("Only these steps, their callers' actions under them and what those caused (data.step_id)"),
} as const;

// Both routes reject what they do not know, so a misspelt filter is an error, not a silently
// unfiltered stream (docs/events.md "Query parameters").
const streamQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    replay: { type: 'string', enum: ['all'], description: 'Start at the oldest retained event' },
    ...filterProperties,
  },
} as const;

interface HistoryQuery extends FilterQuery {
  offset?: number;
  limit?: number;
  order?: 'asc' | 'desc';
  since?: string;
  until?: string;
}

export const HISTORY_MAX_LIMIT = 1000;
const HISTORY_DEFAULT_LIMIT = 100;

const historyQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    offset: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'The seq to continue from (X-Next-Offset of the previous page)' },
    limit: { type: 'integer', minimum: 1, maximum: HISTORY_MAX_LIMIT, default: HISTORY_DEFAULT_LIMIT, description: 'Events per page' },
    order: {
      type: 'string',
      enum: ['asc', 'desc'],
      default: 'asc',
      description: 'asc: oldest first from offset or since; desc: newest first, ending at offset or until',
    },
    since: { type: 'string', description: 'RFC 3339 time or a duration like 5m (that long ago); default 5m; ignored when offset is set; 400 with order=desc' },
    until: { type: 'string', description: 'RFC 3339 time or a duration like 5m (that long ago); exclusive' },
    ...filterProperties,
  },
} as const;

export function registerTelemetryRoutes(
  app: FastifyInstance,
  deps: HttpDeps,
  auth: BearerAuth,
  viewers?: { viewerOf(request: FastifyRequest): string | undefined },
): void {
  const history = deps.history ?? new HistoryReader(deps.log, undefined);
  const logId = deps.logId ?? randomBytes(9).toString('base64url');
  const options = {
    onRequest: browserGuard(deps, auth, 'telemetry:read'),
    schema: {
      summary: 'The telemetry stream as server-sent events (scope telemetry:read)',
      tags: ['telemetry'],
      params: browserParamsSchema,
      querystring: streamQuerySchema,
      headers: {
        type: 'object',
        properties: { 'last-event-id': { type: 'string', description: 'Resume after this seq (a non-negative integer)' } },
      },
      response: {
        200: {
          description: 'Frames `id: <seq>\\ndata: <envelope JSON>\\n\\n` and `: keepalive` comments',
          content: { 'text/event-stream': { schema: { type: 'string' } } },
        },
        ...errorResponses(400, ...BROWSER_ERRORS, 503),
      },
    },
    // A HEAD request has no body to stream into; it would hold a subscriber open for nothing.
    exposeHeadRoute: false,
  };
  const handler = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const query = request.query as StreamQuery;
    const filter = parseFilter(query);
    const { startSeq, resume } = resolveStart(deps.log, headerValue(request.headers['last-event-id']), query.replay === 'all');
    if (deps.hub.isClosed) throw browserUnavailable('the session is ending');
    deps.hub.checkCanOpen(startSeq);

    reply.hijack();
    const res = reply.raw;
    delimitByConnection(res);
    const headers: Record<string, string> = { ...SSE_HEADERS, [LOG_ID_HEADER]: logId, [FIRST_SEQ_HEADER]: String(startSeq) };
    if (resume !== undefined) headers[RESUME_HEADER] = resume;
    res.writeHead(200, headers);
    // Headers go out now, so the client knows the stream is open before the first event.
    res.flushHeaders();
    deps.hub.open(socketSink(res), startSeq, filter);
    // A viewer page's stream: live_view_connect now, live_view_disconnect when it ends.
    const viewerId = viewers?.viewerOf(request);
    if (viewerId !== undefined && deps.liveView) res.once('close', deps.liveView.opened(viewerId));
    // A hijacked reply never reaches onResponse: log the stream here.
    request.log.info({ req: request, start_seq: startSeq, resume, filtered: filter !== undefined }, 'stream opened');
  };
  app.get('/browsers/:id/telemetry', options, handler);
  app.get('/browsers/:id/telemetry/stream', options, handler);

  app.get(
    '/browsers/:id/telemetry/events',
    {
      onRequest: browserGuard(deps, auth, 'telemetry:read'),
      preValidation: async (request) => requireDecimalIntegers(request.query as Record<string, unknown>, ['offset', 'limit']),
      schema: {
        summary: "A page of the session's telemetry history, filtered (scope telemetry:read)",
        description:
          'The body is a JSON array of envelopes exactly as on the stream. Page with offset: X-Next-Offset names the seq to continue from, X-Has-More says whether more matched. Served from the durable store when there is one, else from the RAM ring.',
        tags: ['telemetry'],
        params: browserParamsSchema,
        querystring: historyQuerySchema,
        response: {
          200: {
            description: 'Envelopes `{seq, event}`; headers X-Has-More (true/false) and X-Next-Offset',
            type: 'array',
            items: { type: 'object', properties: { seq: { type: 'integer' }, event: { type: 'object', additionalProperties: true } } },
          },
          ...errorResponses(400, ...BROWSER_ERRORS),
        },
      },
    },
    async (request, reply) => {
      const query = request.query as HistoryQuery;
      const filter = parseFilter(query);
      const order = query.order ?? 'asc';
      const now = Date.now();
      if (order === 'desc' && query.since !== undefined)
        throw invalidInput('since: not allowed with order=desc (a desc page ends at offset or until)', [
          { code: 'invalid_input', message: 'not allowed with order=desc', field: 'since' },
        ]);
      const page = history.read({
        filter,
        order,
        offset: query.offset,
        sinceTs: order === 'asc' ? timeBound('since', query.since ?? '5m', now) : undefined,
        untilTs: timeBound('until', query.until, now),
        limit: query.limit ?? HISTORY_DEFAULT_LIMIT,
      });
      return reply
        .header('X-Has-More', String(page.hasMore))
        .header('X-Next-Offset', String(page.nextOffset))
        .header(LOG_ID_HEADER, logId)
        .type('application/json; charset=utf-8')
        .send(`[${page.items.join(',')}]`);
    },
  );
}

/** Node joins repeated unknown headers with ", "; an array is treated the same way. */
function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}
