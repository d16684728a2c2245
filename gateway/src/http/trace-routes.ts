// GET /browsers/{id}/trace through the gateway (docs/gateway.md "Reading"): a live session's trace
// is its agent's (forwarded); an ended one's is built from the archive by the agent's own code
// (src/export/trace-archive.ts), with the same query, size cap and errors, its archived replays'
// pictures as the screencast (archive/replay-trace.ts).

import type { FastifyInstance } from 'fastify';
import { exportWindow, sendTrace, type ExportQuery } from 'browser-telemetry-agent/http-kit';
import { VERSION } from 'browser-telemetry-agent/program';
import type { Archive } from '../archive/archive.ts';
import { archiveTraceSource } from '../archive/archive-trace.ts';
import { archivedScreencast } from '../archive/replay-trace.ts';
import { accessibleSession } from './auth.ts';
import type { BrowserProxy } from './browser-proxy.ts';

const params = { type: 'object', properties: { id: { type: 'string', minLength: 1 } }, required: ['id'] } as const;
const list = { type: 'array', items: { type: 'string' } } as const;
const traceQuery = {
  type: 'object',
  properties: { target_id: list, nav_seq: list, since: { type: 'string', maxLength: 64 }, until: { type: 'string', maxLength: 64 } },
  additionalProperties: false,
} as const;

export function registerTraceRoutes(app: FastifyInstance, archive: Archive, proxy: BrowserProxy): void {
  const { store } = archive;
  app.get('/browsers/:id/trace', { schema: { params, querystring: traceQuery }, exposeHeadRoute: false }, async (request, reply) => {
    const { filter, sinceTs, untilTs } = exportWindow(request.query as ExportQuery);
    const session = await accessibleSession(store, request);
    if (session.endedAt === null) return proxy.forward(request, reply, session);
    const source = archiveTraceSource(store, session, sinceTs, untilTs);
    const creator = { name: 'browser-telemetry-gateway', version: VERSION };
    // The archived replays' pictures as the screencast, as the agent's trace has them.
    const screencast = () => archivedScreencast(archive.replayStore, session.sessionKey, { sinceTs, untilTs });
    return sendTrace(request, reply, source, { sessionId: session.sessionId, filter, creator, screencast }, 'archived trace export');
  });
}
