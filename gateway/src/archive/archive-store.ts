// The archive's SQL (docs/gateway.md), one part per job: the sessions and the reads here
// (archived events keyed by (session_key, seq), pages for the reads), the writes of events in
// archive-inserts.ts, the follow lease in archive-leases.ts, what retention removes in
// archive-retention-queries.ts. Written once for both backends through the store's Database
// (gateway/src/storage/database.ts). The sessions are rows of `browsers`, read here and written
// only through storage/browser-rows.ts.

import { filterSql, type EventFilter } from 'browser-telemetry-agent/events';
import { markEnded } from '../storage/browser-rows.ts';
import type { Database, SqlValue } from '../storage/database.ts';
import { Conditions, readPage } from '../storage/list-query.ts';
import { toBrowser, type BrowserRecord, type BrowserRow, type EndedReason, type Page, type PageRequest } from '../storage/store.ts';
import { ArchiveInserts } from './archive-inserts.ts';
import { ArchiveLeases } from './archive-leases.ts';
import { ArchiveRetentionQueries, OF_LIVE_PROJECT } from './archive-retention-queries.ts';

export type { SessionBatchResult } from './archive-inserts.ts';
export type { LeasedSession } from './archive-leases.ts';

/** A session as the archive sees it: live or ended, of a live project (or of none). */
export interface SessionRecord extends BrowserRecord {
  /** Unix ms; null while live. */
  endedAt: number | null;
  endedReason: EndedReason | null;
  /** Newest seq archived. */
  archivedSeq: number;
  logId: string | null;
  eventCount: number;
  errorCount: number;
  failedRequestCount: number;
  /** Unix µs of the oldest and newest archived event; null when none. */
  firstEventTs: number | null;
  lastEventTs: number | null;
}

export type SessionStatusFilter = 'active' | 'ended' | 'all';

export interface SessionFilter extends PageRequest {
  status: SessionStatusFilter;
  /** Only sessions of this project. */
  projectId?: string;
  /** Case-insensitive substring of the session id. */
  query?: string;
}

export interface PageQuery {
  sessionKey: number;
  filter: EventFilter | undefined;
  order: 'asc' | 'desc';
  /** Bounds on seq, inclusive. */
  minSeq?: number;
  maxSeq?: number;
  /** Event ts (Unix µs): since inclusive, until exclusive. */
  sinceTs?: number;
  untilTs?: number;
  limit: number;
}

/** An archived event as read: its seq and the event's JSON text. */
export interface StoredEvent {
  seq: number;
  eventJson: string;
}

/** How far apart in time two targets' events may be admitted out of order (the agent's own bound). */
const TS_SKEW_US = 10_000_000;

const SESSION_COLUMNS = `b.session_id, b.session_key, b.project_id, b.agent_url, b.agent_token, b.created_at, b.deleted_at,
  b.ended_reason, b.archived_seq, b.log_id, b.event_count, b.error_count, b.failed_request_count, b.first_event_ts, b.last_event_ts`;

interface SessionRow extends BrowserRow {
  deleted_at: number | null;
  ended_reason: EndedReason | null;
  archived_seq: number;
  log_id: string | null;
  event_count: number;
  error_count: number;
  failed_request_count: number;
  first_event_ts: number | null;
  last_event_ts: number | null;
  [key: string]: unknown;
}

const nullableNumber = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

function toSession(row: SessionRow): SessionRecord {
  return {
    ...toBrowser(row),
    endedAt: nullableNumber(row.deleted_at),
    endedReason: row.ended_reason,
    archivedSeq: Number(row.archived_seq),
    logId: row.log_id,
    eventCount: Number(row.event_count),
    errorCount: Number(row.error_count),
    failedRequestCount: Number(row.failed_request_count),
    firstEventTs: nullableNumber(row.first_event_ts),
    lastEventTs: nullableNumber(row.last_event_ts),
  };
}

export class ArchiveStore {
  /** Writing events (the follower's batches, a drain). */
  readonly inserts: ArchiveInserts;
  /** Which instance follows which session. */
  readonly leases: ArchiveLeases;
  /** What retention removes. */
  readonly retention: ArchiveRetentionQueries;

  constructor(
    readonly db: Database,
    private readonly now: () => number = Date.now,
  ) {
    this.inserts = new ArchiveInserts(db);
    this.leases = new ArchiveLeases(db, now);
    this.retention = new ArchiveRetentionQueries(db);
  }

  // ---- sessions -------------------------------------------------------------------------------

  /** A session by id, live or ended; undefined when unknown, purged, or of a deleted project. */
  async findSession(sessionId: string): Promise<SessionRecord | undefined> {
    const rows = await this.db.all<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM browsers b WHERE b.session_id = ? AND ${OF_LIVE_PROJECT}`, [sessionId]);
    return rows[0] ? toSession(rows[0]) : undefined;
  }

  async sessionByKey(sessionKey: number): Promise<SessionRecord | undefined> {
    const rows = await this.db.all<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM browsers b WHERE b.session_key = ?`, [sessionKey]);
    return rows[0] ? toSession(rows[0]) : undefined;
  }

  /** Sessions for GET /browsers: oldest first by (created_at, session_id), like the projects. */
  async listSessions(filter: SessionFilter): Promise<Page<SessionRecord>> {
    // Session ids are [A-Za-z0-9_-]: only `_` needs escaping, and case folds in JavaScript.
    const idLike = filter.query ? `%${filter.query.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%` : undefined;
    const where = new Conditions(OF_LIVE_PROJECT)
      .when(filter.status === 'active', 'b.deleted_at IS NULL')
      .when(filter.status === 'ended', 'b.deleted_at IS NOT NULL')
      .bind('b.project_id = ?', filter.projectId)
      .bind("LOWER(b.session_id) LIKE ? ESCAPE '\\'", idLike);
    return readPage(this.db, `SELECT ${SESSION_COLUMNS} FROM browsers b${where.clause} ORDER BY b.created_at, b.session_id`, where.params, filter, toSession);
  }

  /** Ends a live session; false when it had already ended. */
  async markEnded(sessionKey: number, reason: EndedReason): Promise<boolean> {
    return markEnded(this.db, sessionKey, reason, this.now());
  }

  // ---- reading --------------------------------------------------------------------------------

  /**
   * One page of a session's archived events, in seq order (`order`), filtered. A time bound is
   * first turned into a seq bound, as the agent's store does (src/store/event-store.ts): events
   * are admitted in time order but for small skews between targets' clocks (TS_SKEW_US), so the
   * page is one walk of the (session, seq) index from there, with the time bound applied exactly
   * on the way, instead of a sort of everything inside the window.
   */
  async page(query: PageQuery): Promise<StoredEvent[]> {
    const where = ['session_key = ?'];
    const params: SqlValue[] = [query.sessionKey];
    let minSeq = query.minSeq;
    let maxSeq = query.maxSeq;
    if (query.order === 'asc' && query.sinceTs !== undefined) {
      minSeq = Math.max(minSeq ?? 0, await this.firstSeqAtOrAfter(query.sessionKey, query.sinceTs - TS_SKEW_US));
    }
    if (query.order === 'desc' && query.untilTs !== undefined) {
      const bound = await this.firstSeqAtOrAfter(query.sessionKey, query.untilTs + TS_SKEW_US);
      if (Number.isFinite(bound)) maxSeq = Math.min(maxSeq ?? Infinity, bound - 1);
    }
    if (minSeq !== undefined && Number.isFinite(minSeq)) {
      where.push('seq >= ?');
      params.push(minSeq);
    } else if (minSeq !== undefined) {
      return [];
    }
    if (maxSeq !== undefined) {
      where.push('seq <= ?');
      params.push(maxSeq);
    }
    addFilterTo(query.filter, where, params, query.sinceTs, query.untilTs);
    const rows = await this.db.all<{ seq: number; event: string }>(
      `SELECT seq, event FROM archive_events WHERE ${where.join(' AND ')} ORDER BY seq ${query.order === 'asc' ? 'ASC' : 'DESC'} LIMIT ?`,
      [...params, query.limit],
    );
    return rows.map((row) => ({ seq: Number(row.seq), eventJson: row.event }));
  }

  /**
   * The first seq whose event is at or after `ts` (Unix µs), by bisection over seq with one
   * index probe per step; Infinity when there is none.
   */
  private async firstSeqAtOrAfter(sessionKey: number, ts: number): Promise<number> {
    const [bounds] = await this.db.all<{ lo: number | null; hi: number | null }>(
      // Two subqueries: SQLite reads a MIN or MAX off the index's ends only when it is alone (together, it scans the session).
      'SELECT (SELECT MIN(seq) FROM archive_events WHERE session_key = ?) AS lo, (SELECT MAX(seq) FROM archive_events WHERE session_key = ?) AS hi',
      [sessionKey, sessionKey],
    );
    if (bounds?.lo === null || bounds?.lo === undefined || bounds.hi === null) return Infinity;
    let lo = Number(bounds.lo);
    let hi = Number(bounds.hi) + 1;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const [row] = await this.db.all<{ seq: number; ts: number }>(
        'SELECT seq, ts FROM archive_events WHERE session_key = ? AND seq >= ? ORDER BY seq LIMIT 1',
        [sessionKey, mid],
      );
      if (row === undefined || Number(row.ts) >= ts) hi = mid;
      else lo = Number(row.seq) + 1;
    }
    return lo > Number(bounds.hi) ? Infinity : lo;
  }

  /** The oldest archived seq of a session (0 when none). */
  async oldestSeq(sessionKey: number): Promise<number> {
    const rows = await this.db.all<{ seq: number | null }>('SELECT MIN(seq) AS seq FROM archive_events WHERE session_key = ?', [sessionKey]);
    return Number(rows[0]?.seq ?? 0);
  }

  /**
   * Every archived event of a session from `fromSeq` to `toSeq`, in pages of `pageSize`, oldest
   * first; with `window`, only those in its time bounds (Unix µs, until exclusive).
   */
  async *events(
    sessionKey: number,
    fromSeq: number,
    toSeq: number,
    filter: EventFilter | undefined,
    pageSize = 1000,
    window: { sinceTs?: number; untilTs?: number } = {},
  ): AsyncGenerator<StoredEvent[]> {
    let next = fromSeq;
    while (next <= toSeq) {
      const rows = await this.page({
        sessionKey,
        filter,
        order: 'asc',
        minSeq: next,
        maxSeq: toSeq,
        sinceTs: window.sinceTs,
        untilTs: window.untilTs,
        limit: pageSize,
      });
      if (rows.length === 0) return;
      yield rows;
      if (rows.length < pageSize) return;
      next = rows[rows.length - 1]!.seq + 1;
    }
  }
}

function addFilterTo(filter: EventFilter | undefined, where: string[], params: SqlValue[], sinceTs?: number, untilTs?: number): void {
  // The event's JSON alone (the envelope is rebuilt around it); cast, since PostgreSQL's json has no LIKE.
  const sql = filterSql(filter, sinceTs, untilTs, { column: 'CAST(event AS TEXT)', envelope: false });
  where.push(...sql.clauses);
  params.push(...sql.params);
}
