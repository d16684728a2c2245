// GET /browsers/{id}/har: the session's network traffic as a HAR 1.2 document (docs/export.md
// "HAR"), streamed while the history is read page by page. The query is checked before the first
// byte goes out, so a bad one gets the JSON error body.

import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { harPieces } from '../export/har-stream.ts';
import { parseFilter } from '../stream/event-filter.ts';
import { HistoryReader } from '../stream/history.ts';
import { VERSION } from '../version.ts';
import type { BearerAuth } from './auth.ts';
import { browserGuard, browserParamsSchema } from './browser-guard.ts';
import { timeBound } from './telemetry-routes.ts';
import { BROWSER_ERRORS, errorResponses } from './schemas.ts';
import type { HttpDeps } from './http-deps.ts';

interface HarQuery {
  target_id?: string[];
  nav_seq?: string[];
  since?: string;
  until?: string;
}

const harQuerySchema = {
  type: 'object',
  properties: {
    target_id: { type: 'array', items: { type: 'string' }, description: 'Only requests and pages of these targets (repeat or comma-separate)' },
    nav_seq: {
      type: 'array',
      items: { type: 'string' },
      description: "Only these navigations of their tab: the pages with this nav_seq and their requests, the navigation's own document request included",
    },
    since: { type: 'string', description: 'RFC 3339 time or a duration like 5m (that long ago); default: the oldest retained event' },
    until: { type: 'string', description: 'RFC 3339 time or a duration like 5m (that long ago); exclusive' },
  },
} as const;

/** A HAR 1.2 document in outline (the full schema is HAR 1.2's; extension fields start with `_`). */
const harResponseSchema = {
  description: 'A HAR 1.2 document: log.entries (one per request or redirect hop, in the order they ended), then log.pages',
  content: {
    'application/json': {
      schema: {
        type: 'object',
        required: ['log'],
        properties: {
          log: {
            type: 'object',
            required: ['version', 'creator', 'entries'],
            properties: {
              version: { type: 'string', const: '1.2' },
              creator: { type: 'object', properties: { name: { type: 'string' }, version: { type: 'string' } } },
              entries: { type: 'array', items: { type: 'object', additionalProperties: true } },
              pages: { type: 'array', items: { type: 'object', additionalProperties: true } },
            },
          },
        },
      },
    },
  },
} as const;

export function registerHarRoutes(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth): void {
  const history = deps.history ?? new HistoryReader(deps.log, undefined);
  app.get(
    '/browsers/:id/har',
    {
      onRequest: browserGuard(deps, auth, 'telemetry:read'),
      schema: {
        summary: "The session's network traffic as a HAR 1.2 document (scope telemetry:read)",
        description:
          'Built from the retained network and page events: entries with headers, post data, response bodies when captured, server address and resource timing; one page per top-level navigation. Streamed as the history is read.',
        tags: ['telemetry'],
        params: browserParamsSchema,
        querystring: harQuerySchema,
        response: {
          200: harResponseSchema,
          ...errorResponses(400, ...BROWSER_ERRORS),
        },
      },
    },
    async (request, reply) => {
      const query = request.query as HarQuery;
      // Validated as the history read validates them (400 naming the field).
      const filter = parseFilter({ target_id: query.target_id, nav_seq: query.nav_seq });
      const now = Date.now();
      const sinceTs = timeBound('since', query.since, now);
      const untilTs = timeBound('until', query.until, now);
      const pieces = harPieces(
        history,
        { targetIds: filter?.targetIds ? [...filter.targetIds] : undefined, sinceTs, untilTs, lastSeq: deps.log.latestSeq },
        { creator: { name: 'browser-telemetry-agent', version: VERSION }, navSeqs: filter?.navSeqs },
      );
      const body = Readable.from(pieces, { objectMode: false });
      body.on('error', (err) => request.log.warn({ err: err.message }, 'har export failed while streaming'));
      return reply.type('application/json; charset=utf-8').header('Content-Disposition', `attachment; filename="${deps.sessionId}.har"`).send(body);
    },
  );
}
