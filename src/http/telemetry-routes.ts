// GET /browsers/{id}/telemetry[/stream] (SPEC §5): the SSE stream. Everything that can fail
// (auth, id, query, Last-Event-ID) is checked before the response is hijacked, so failures get
// the JSON error body and no stream byte is ever written for them.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { delimitByConnection, socketSink } from '../stream/socket-sink.ts';
import { resolveStartSeq } from '../stream/start-position.ts';
import type { BearerAuth } from './auth.ts';
import { browserGuard, browserParamsSchema } from './browser-guard.ts';
import { browserUnavailable } from './errors.ts';
import { BROWSER_ERRORS, errorResponses } from './schemas.ts';
import type { HttpDeps } from './session-view.ts';

export const SSE_HEADERS = {
  'Content-Type': 'text/event-stream',
  'X-SSE-Content-Type': 'application/json',
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no',
} as const;

interface StreamQuery {
  replay?: 'all';
}

const streamQuerySchema = {
  type: 'object',
  properties: { replay: { type: 'string', enum: ['all'], description: 'Start at the oldest retained event' } },
} as const;

export function registerTelemetryRoutes(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth): void {
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
    const { replay } = request.query as StreamQuery;
    const startSeq = resolveStartSeq(deps.log, headerValue(request.headers['last-event-id']), replay === 'all');
    if (deps.hub.isClosed) throw browserUnavailable('the session is ending');

    reply.hijack();
    const res = reply.raw;
    delimitByConnection(res);
    res.writeHead(200, SSE_HEADERS);
    // Headers go out now, so the client knows the stream is open before the first event.
    res.flushHeaders();
    deps.hub.open(socketSink(res), startSeq);
    // A hijacked reply never reaches onResponse: log the stream here.
    request.log.info({ req: request, start_seq: startSeq }, 'stream opened');
  };
  app.get('/browsers/:id/telemetry', options, handler);
  app.get('/browsers/:id/telemetry/stream', options, handler);
}

/** Node joins repeated unknown headers with ", "; an array is treated the same way. */
function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}
