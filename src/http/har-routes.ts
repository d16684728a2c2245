// GET /browsers/{id}/har: the session's network traffic as a HAR 1.2 document (docs/export.md
// "HAR"), streamed while the history is read page by page. The query is checked before the first
// byte goes out, so a bad one gets the JSON error body.

import type { FastifyInstance } from 'fastify';
import { harPieces } from '../export/har-stream.ts';
import { HistoryReader } from '../stream/history.ts';
import { VERSION } from '../version.ts';
import type { BearerAuth } from './auth.ts';
import { browserGuard, browserParamsSchema } from './browser-guard.ts';
import { exportQuerySchema, exportWindow, type ExportQuery } from './export-query.ts';
import { sendHar } from './export-reply.ts';
import { BROWSER_ERRORS, errorResponses } from './schemas.ts';
import type { HttpDeps } from './http-deps.ts';

const harQuerySchema = exportQuerySchema({
  targetId: 'Only requests and pages of these targets (repeat or comma-separate)',
  navSeq: "Only these navigations of their tab: the pages with this nav_seq and their requests, the navigation's own document request included",
});

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
      const { filter, sinceTs, untilTs } = exportWindow(request.query as ExportQuery);
      const pieces = harPieces(
        history,
        { targetIds: filter?.targetIds ? [...filter.targetIds] : undefined, sinceTs, untilTs, lastSeq: deps.log.latestSeq },
        { creator: { name: 'browser-telemetry-agent', version: VERSION }, navSeqs: filter?.navSeqs },
      );
      return sendHar(request, reply, pieces, deps.sessionId, 'har export');
    },
  );
}
