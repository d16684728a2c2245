// The archive's routes (docs/gateway.md "Reading", "Listing"):
//
// - GET /browsers: sessions, live and ended, paged like the projects, with their counts;
// - GET /browsers/{id}/telemetry/events: the agent's history read, from the archive (then the
//   agent, for a live session: archive/archive-history.ts);
// - GET /browsers/{id}/telemetry[/stream]: the stream, from the archive, then the agent
//   (archive/archive-stream.ts), or forwarded;
// - GET /browsers/{id}/har: an ended session's HAR from the archive; a live one's is the agent's.
//
// Everything that can fail (the query, the session, the key's project, Last-Event-ID) is checked
// before a byte is written, so failures get the error body. An ended session reads like a live
// one; a purged one, or one of a deleted project, is 404. A project-scoped key sees only its
// project's sessions: another project's is 403, as everywhere (auth.ts).

import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { exportWindow, invalidInput, requireDecimalIntegers, sendHar, timeBound, type ExportQuery } from 'browser-telemetry-agent/http-kit';
import { parseFilter, type FilterQuery } from 'browser-telemetry-agent/events';
import { VERSION } from 'browser-telemetry-agent/program';
import type { Archive } from '../archive/archive.ts';
import { archiveHarPieces } from '../archive/archive-har.ts';
import type { SessionRecord, SessionStatusFilter } from '../archive/archive-store.ts';
import { archiveStreamHeaders, planStream, writeArchivedFrames } from '../archive/archive-stream.ts';
import { accessibleSession as sessionFor, principalOf, requireProjectAccess } from './auth.ts';
import type { BrowserProxy } from './browser-proxy.ts';
import type { KeyWatch } from './key-watch.ts';
import { pagingQueryProperties, sendPage } from './paging.ts';
import { browserSessionView } from './views.ts';

/** The agent's history bounds (src/http/telemetry-routes.ts). */
export const HISTORY_MAX_LIMIT = 1000;
const HISTORY_DEFAULT_LIMIT = 100;
/** The agent's default window of a live session's history (docs/events.md "History"). */
const LIVE_DEFAULT_SINCE = '5m';

const params = { type: 'object', properties: { id: { type: 'string', minLength: 1 } }, required: ['id'] } as const;
const list = { type: 'array', items: { type: 'string' } } as const;
const filterProperties = { category: list, type: list, target_id: list, nav_seq: list, caused_by: list, step_id: list } as const;

const listQuery = {
  type: 'object',
  properties: {
    ...pagingQueryProperties,
    status: { type: 'string', enum: ['active', 'ended', 'deleted', 'all'] },
    include_deleted: { type: 'boolean' },
    project_id: { type: 'string', minLength: 1, maxLength: 255 },
    query: { type: 'string', maxLength: 128 },
  },
  additionalProperties: false,
} as const;

const historyQuery = {
  type: 'object',
  properties: {
    offset: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    limit: { type: 'integer', minimum: 1, maximum: HISTORY_MAX_LIMIT, default: HISTORY_DEFAULT_LIMIT },
    order: { type: 'string', enum: ['asc', 'desc'], default: 'asc' },
    since: { type: 'string', maxLength: 64 },
    until: { type: 'string', maxLength: 64 },
    ...filterProperties,
  },
  additionalProperties: false,
} as const;

const streamQuery = {
  type: 'object',
  properties: { replay: { type: 'string', enum: ['all'] }, ...filterProperties },
  additionalProperties: false,
} as const;

const harQuery = {
  type: 'object',
  properties: { target_id: list, nav_seq: list, since: { type: 'string', maxLength: 64 }, until: { type: 'string', maxLength: 64 } },
  additionalProperties: false,
} as const;

interface ListQuery {
  limit: number;
  offset: number;
  status?: 'active' | 'ended' | 'deleted' | 'all';
  include_deleted?: boolean;
  project_id?: string;
  query?: string;
}

interface HistoryQuery extends FilterQuery {
  offset?: number;
  limit: number;
  order: 'asc' | 'desc';
  since?: string;
  until?: string;
}

interface StreamQuery extends FilterQuery {
  replay?: 'all';
}

export interface ArchiveRoutes {
  /** Ends the streams the archive serves alone (gateway shutdown). */
  close(): void;
}

export function registerArchiveRoutes(app: FastifyInstance, archive: Archive, proxy: BrowserProxy, keys: KeyWatch): ArchiveRoutes {
  const { store } = archive;
  const openStreams = new Set<() => void>();

  /** A session the caller may read: 404 when there is none, 403 across projects. */
  const accessibleSession = (request: FastifyRequest): Promise<SessionRecord> => sessionFor(store, request);

  // offset and limit: decimal digits only, as on the agent (docs/events.md "Query parameters").
  const decimalPaging = async (request: FastifyRequest): Promise<void> => requireDecimalIntegers(request.query as Record<string, unknown>, ['offset', 'limit']);

  app.get('/browsers', { schema: { querystring: listQuery }, preValidation: decimalPaging }, async (request, reply) => {
    const query = request.query as ListQuery;
    const principal = principalOf(request);
    if (query.project_id !== undefined) requireProjectAccess(principal, query.project_id, 'project');
    const status: SessionStatusFilter =
      query.status === undefined ? (query.include_deleted ? 'all' : 'active') : query.status === 'deleted' ? 'ended' : query.status;
    const page = await store.listSessions({
      limit: query.limit,
      offset: query.offset,
      status,
      projectId: query.project_id ?? principal.projectId ?? undefined,
      query: query.query,
    });
    return sendPage(reply, query, page, (session) => browserSessionView(session, request.headers.host ?? 'localhost'));
  });

  app.get('/browsers/:id/telemetry/events', { schema: { params, querystring: historyQuery }, preValidation: decimalPaging }, async (request, reply) => {
    const query = request.query as HistoryQuery;
    const filter = parseFilter(query);
    if (query.order === 'desc' && query.since !== undefined) {
      throw invalidInput('since: not allowed with order=desc (a desc page ends at offset or until)', [
        { code: 'invalid_input', message: 'not allowed with order=desc', field: 'since' },
      ]);
    }
    const now = Date.now();
    const sinceTs = timeBound('since', query.since, now);
    const untilTs = timeBound('until', query.until, now);
    const session = await accessibleSession(request);
    // An ended session is read from its start unless asked otherwise: the default "last 5
    // minutes" is for watching a live session.
    const since = sinceTs ?? (query.order === 'asc' && session.endedAt === null ? timeBound('since', LIVE_DEFAULT_SINCE, now) : undefined);
    const page = await archive.history.read(session, {
      filter,
      filterQuery: filterLists(query),
      order: query.order,
      offset: query.offset,
      sinceTs: query.order === 'asc' ? since : undefined,
      untilTs,
      limit: query.limit,
    });
    reply.header('X-Has-More', String(page.hasMore)).header('X-Next-Offset', String(page.nextOffset));
    if (session.logId !== null) reply.header('X-Log-Id', session.logId);
    return reply.type('application/json; charset=utf-8').send(`[${page.items.join(',')}]`);
  });

  const stream = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const query = request.query as StreamQuery;
    const filter = parseFilter(query);
    const session = await accessibleSession(request);
    const lastEventId = headerValue(request.headers['last-event-id']);
    const plan = await planStream(store, session, lastEventId, query.replay === 'all');
    if (plan.kind === 'forward') return proxy.forward(request, reply, session);
    if (plan.kind === 'archive-then-agent') {
      const { startSeq, switchSeq, resume } = plan;
      return proxy.forward(request, reply, session, {
        // The agent continues right after the archived part: no replay, resumed at the switch.
        query: filterQueryString(query),
        lastEventId: String(switchSeq),
        prelude: {
          headers: (agentHeaders) => {
            const headers: OutgoingHttpHeaders = { ...agentHeaders, 'x-first-seq': String(startSeq) };
            if (resume === undefined) delete headers['x-resume'];
            else headers['x-resume'] = resume;
            return headers;
          },
          write: (response, open) => writeArchivedFrames(store, session, startSeq, switchSeq, filter, response, open),
        },
      });
    }

    reply.hijack();
    const response = reply.raw;
    response.writeHead(200, archiveStreamHeaders(session, plan.startSeq, plan.resume));
    response.flushHeaders();
    let open = true;
    const end = (): void => {
      if (!open) return;
      open = false;
      openStreams.delete(abort);
      untrack();
      if (!response.writableEnded) response.end();
    };
    const abort = (): void => {
      if (!open) return;
      end();
      response.destroy();
    };
    openStreams.add(abort);
    const untrack = keys.track(principalOf(request), { end });
    response.once('close', end);
    request.log.info({ req: request, start_seq: plan.startSeq, resume: plan.resume, filtered: filter !== undefined }, 'archived stream opened');
    writeArchivedFrames(store, session, plan.startSeq, plan.endSeq, filter, response, () => open && !response.destroyed).then(end, (err: unknown) => {
      request.log.warn({ err, session_id: session.sessionId }, 'archived stream failed');
      abort();
    });
  };
  const streamOptions = { schema: { params, querystring: streamQuery }, exposeHeadRoute: false };
  app.get('/browsers/:id/telemetry', streamOptions, stream);
  app.get('/browsers/:id/telemetry/stream', streamOptions, stream);

  app.get('/browsers/:id/har', { schema: { params, querystring: harQuery }, exposeHeadRoute: false }, async (request, reply) => {
    const { filter, sinceTs, untilTs } = exportWindow(request.query as ExportQuery);
    const session = await accessibleSession(request);
    if (session.endedAt === null) return proxy.forward(request, reply, session);
    const pieces = archiveHarPieces(
      store,
      session,
      { targetIds: filter?.targetIds, navSeqs: filter?.navSeqs, sinceTs, untilTs },
      { name: 'browser-telemetry-gateway', version: VERSION },
    );
    return sendHar(request, reply, pieces, session.sessionId, 'archived har export');
  });

  return {
    close() {
      for (const abort of [...openStreams]) abort();
    },
  };
}

/** The filter parameters, as lists (passed on to the agent for the live part). */
function filterLists(query: FilterQuery): Record<string, readonly string[]> {
  const lists: Record<string, readonly string[]> = {};
  for (const name of ['category', 'type', 'target_id', 'nav_seq', 'caused_by', 'step_id'] as const) {
    const value = query[name];
    if (value !== undefined) lists[name] = Array.isArray(value) ? value : [value];
  }
  return lists;
}

function filterQueryString(query: FilterQuery): string {
  const search = new URLSearchParams();
  for (const [name, values] of Object.entries(filterLists(query))) for (const value of values) search.append(name, value);
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}
