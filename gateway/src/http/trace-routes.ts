// GET /browsers/{id}/trace through the gateway (docs/gateway.md "Reading"): a live session's trace
// is its agent's (forwarded); an ended one's is built from the archive by the agent's own code
// (src/export/trace-archive.ts), with the same query, size cap and errors.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { checkTraceSize, parseFilter, parseTimeBound, traceArchive, type TraceRequest } from 'browser-telemetry-agent/events';
import { invalidInput, notFound, TRACE_MAX_EVENT_BYTES, tooLarge } from 'browser-telemetry-agent/http-kit';
import { VERSION } from 'browser-telemetry-agent/program';
import type { Archive } from '../archive/archive.ts';
import { archiveTraceSource } from '../archive/archive-trace.ts';
import type { SessionRecord } from '../archive/archive-store.ts';
import { principalOf, requireProjectAccess } from './auth.ts';
import type { BrowserProxy } from './browser-proxy.ts';

const params = { type: 'object', properties: { id: { type: 'string', minLength: 1 } }, required: ['id'] } as const;
const list = { type: 'array', items: { type: 'string' } } as const;
const traceQuery = {
  type: 'object',
  properties: { target_id: list, nav_seq: list, since: { type: 'string', maxLength: 64 }, until: { type: 'string', maxLength: 64 } },
  additionalProperties: false,
} as const;

interface TraceQuery {
  target_id?: string[];
  nav_seq?: string[];
  since?: string;
  until?: string;
}

export function registerTraceRoutes(app: FastifyInstance, archive: Archive, proxy: BrowserProxy): void {
  const { store } = archive;
  const accessibleSession = async (request: FastifyRequest): Promise<SessionRecord> => {
    const { id } = request.params as { id: string };
    const session = await store.findSession(id);
    if (!session) throw notFound('browser session not found');
    requireProjectAccess(principalOf(request), session.projectId, 'browser');
    return session;
  };

  app.get('/browsers/:id/trace', { schema: { params, querystring: traceQuery }, exposeHeadRoute: false }, async (request, reply) => {
    const query = request.query as TraceQuery;
    const filter = parseFilter({ target_id: query.target_id, nav_seq: query.nav_seq });
    const now = Date.now();
    const sinceTs = timeBound('since', query.since, now);
    const untilTs = timeBound('until', query.until, now);
    const session = await accessibleSession(request);
    if (session.endedAt === null) return proxy.forward(request, reply, session);
    const source = archiveTraceSource(store, session, sinceTs, untilTs);
    const traceRequest: TraceRequest = {
      sessionId: session.sessionId,
      targetIds: filter?.targetIds,
      navSeqs: filter?.navSeqs,
      creator: { name: 'browser-telemetry-gateway', version: VERSION },
      maxBytes: TRACE_MAX_EVENT_BYTES,
    };
    await checkTraceSize(source, traceRequest).catch(tooLarge);
    const body = traceArchive(source, traceRequest, (err) => request.log.warn({ err: err.message }, 'archived trace export failed while streaming'));
    return reply.type('application/zip').header('Content-Disposition', `attachment; filename="${session.sessionId}.trace.zip"`).send(body);
  });
}

/** `since`/`until` as the agent reads them (400 naming the field). */
function timeBound(name: 'since' | 'until', text: string | undefined, now: number): number | undefined {
  if (text === undefined) return undefined;
  const value = parseTimeBound(text, now);
  if (value === undefined) {
    throw invalidInput(`${name}: expected an RFC 3339 time or a duration like 5m`, [
      { code: 'invalid_input', message: 'expected an RFC 3339 time or a duration like 5m', field: name },
    ]);
  }
  return value;
}
