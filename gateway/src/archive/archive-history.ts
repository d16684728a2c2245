// GET /browsers/{id}/telemetry/events through the gateway (docs/gateway.md "Reading"): the agent's
// history read (docs/events.md "History": same filters, paging, envelope and headers) served from
// the archive, and for a live session continued from the agent past the archive's newest seq.
// The switch is at a seq read once per request (the archived high-water mark): the archive
// answers seq ≤ mark, the agent seq > mark, so a page never has a gap or a duplicate there.
// When the agent cannot answer, the page is the archive's alone and X-Next-Offset points just
// past the mark, so a poller continues where the archive stops.

import type { EventFilter } from 'browser-telemetry-agent/events';
import { AgentAnswered, AgentUnreachable, type AgentClient, type AgentEnvelope } from './agent-client.ts';
import type { ArchiveStore, SessionRecord } from './archive-store.ts';
import { envelopeJson } from './event-row.ts';

export interface ArchiveHistoryRequest {
  filter: EventFilter | undefined;
  /** The filter parameters as given, passed on to the agent for the live part. */
  filterQuery: Record<string, readonly string[]>;
  order: 'asc' | 'desc';
  offset: number | undefined;
  /** Unix µs, inclusive; applies when offset is unset (asc only). */
  sinceTs: number | undefined;
  /** Unix µs, exclusive. */
  untilTs: number | undefined;
  limit: number;
}

export interface ArchiveHistoryPage {
  /** Envelope JSON texts, in the page's order. */
  items: string[];
  hasMore: boolean;
  nextOffset: number;
}

/** The agent's largest history page (src/http/telemetry-routes.ts, HISTORY_MAX_LIMIT). */
const AGENT_MAX_LIMIT = 1000;

interface Row {
  seq: number;
  json: string;
}

export class ArchiveHistory {
  constructor(
    private readonly store: ArchiveStore,
    private readonly client: AgentClient,
  ) {}

  async read(session: SessionRecord, request: ArchiveHistoryRequest): Promise<ArchiveHistoryPage> {
    const live = session.endedAt === null;
    return request.order === 'asc' ? this.ascending(session, request, live) : this.descending(session, request, live);
  }

  private async ascending(session: SessionRecord, request: ArchiveHistoryRequest, live: boolean): Promise<ArchiveHistoryPage> {
    const mark = session.archivedSeq;
    const sinceTs = request.offset === undefined ? request.sinceTs : undefined;
    const archived = (
      await this.store.page({
        sessionKey: session.sessionKey,
        filter: request.filter,
        order: 'asc',
        minSeq: request.offset,
        maxSeq: mark,
        sinceTs,
        untilTs: request.untilTs,
        limit: request.limit + 1,
      })
    ).map(toRow);
    if (archived.length > request.limit) return pageOf(archived, request.limit, 'asc', 0);
    if (!live) return { items: archived.map((r) => r.json), hasMore: false, nextOffset: mark + 1 };

    let agentRows: Row[];
    let agentHasMore: boolean;
    let agentNext: number;
    try {
      const need = Math.min(AGENT_MAX_LIMIT, request.limit + 1 - archived.length);
      // With nothing archived in the window, the agent finds the window's start itself (its
      // `since`); otherwise it continues right after the mark (an offset: since no longer applies
      // there, so it is applied here, exactly).
      const bySince = request.offset === undefined && archived.length === 0 && sinceTs !== undefined;
      const page = await this.client.historyPage(session, {
        offset: bySince ? undefined : Math.max(request.offset ?? 0, mark + 1),
        since: bySince ? isoMicros(sinceTs) : undefined,
        until: request.untilTs === undefined ? undefined : isoMicros(request.untilTs),
        limit: need,
        order: 'asc',
        filters: request.filterQuery,
      });
      agentRows = page.items.filter((e) => e.seq > mark && (sinceTs === undefined || e.ts >= sinceTs)).map(fromAgent);
      agentHasMore = page.hasMore;
      agentNext = Math.max(page.nextOffset, mark + 1);
    } catch (err) {
      if (!(err instanceof AgentUnreachable || err instanceof AgentAnswered)) throw err;
      return { items: archived.map((r) => r.json), hasMore: false, nextOffset: mark + 1 };
    }
    const rows = archived.concat(agentRows);
    if (rows.length > request.limit) return pageOf(rows, request.limit, 'asc', 0);
    return { items: rows.map((r) => r.json), hasMore: agentHasMore, nextOffset: agentNext };
  }

  private async descending(session: SessionRecord, request: ArchiveHistoryRequest, live: boolean): Promise<ArchiveHistoryPage> {
    const mark = session.archivedSeq;
    const archivePage = (limit: number) =>
      this.store.page({
        sessionKey: session.sessionKey,
        filter: request.filter,
        order: 'desc',
        maxSeq: Math.min(request.offset ?? mark, mark),
        untilTs: request.untilTs,
        limit,
      });
    let rows: Row[] = [];
    if (live && (request.offset === undefined || request.offset > mark)) {
      let agentHasMore = false;
      try {
        const page = await this.client.historyPage(session, {
          offset: request.offset,
          until: request.untilTs === undefined ? undefined : isoMicros(request.untilTs),
          limit: Math.min(AGENT_MAX_LIMIT, request.limit + 1),
          order: 'desc',
          filters: request.filterQuery,
        });
        // Newest first: the ones past the mark, then the archive takes over below it.
        rows = page.items.filter((e) => e.seq > mark).map(fromAgent);
        agentHasMore = page.hasMore;
      } catch (err) {
        if (!(err instanceof AgentUnreachable || err instanceof AgentAnswered)) throw err;
      }
      if (rows.length >= request.limit) {
        const page = rows.slice(0, request.limit);
        const hasMore = rows.length > request.limit || agentHasMore || (await archivePage(1)).length > 0;
        return { items: page.map((r) => r.json), hasMore, nextOffset: hasMore ? page[page.length - 1]!.seq - 1 : 0 };
      }
    }
    const archived = (await archivePage(request.limit + 1 - rows.length)).map(toRow);
    return pageOf(rows.concat(archived), request.limit, 'desc', 0);
  }
}

function toRow(stored: { seq: number; eventJson: string }): Row {
  return { seq: stored.seq, json: envelopeJson(stored.seq, stored.eventJson) };
}

function fromAgent(envelope: AgentEnvelope): Row {
  return { seq: envelope.seq, json: envelope.json };
}

/** `limit` of `rows` (which may hold one more, meaning more matched) and where to continue. */
function pageOf(rows: Row[], limit: number, order: 'asc' | 'desc', endOffset: number): ArchiveHistoryPage {
  const hasMore = rows.length > limit;
  const page = hasMore ? rows.slice(0, limit) : rows;
  const last = page[page.length - 1];
  let nextOffset = endOffset;
  if (hasMore && last) nextOffset = order === 'asc' ? last.seq + 1 : last.seq - 1;
  return { items: page.map((r) => r.json), hasMore, nextOffset };
}

/** Unix µs → RFC 3339 with microseconds, which the agent's parseTimeBound reads exactly. */
export function isoMicros(us: number): string {
  const ms = Math.floor(us / 1000);
  const micros = us - ms * 1000;
  const iso = new Date(ms).toISOString(); // 2026-01-01T00:00:00.123Z
  return `${iso.slice(0, -1)}${String(micros).padStart(3, '0')}Z`;
}
