// The archive's SQL (docs/gateway.md): archived events keyed by (session_key, seq), the session
// rows' archive columns (high-water seq, counts, the follow lease, silence), pages for the reads,
// and what retention removes. Written once for both backends through the store's Database
// (src/gateway/storage/database.ts); the batched insert is the one place the two differ
// (a prepared statement per row inside one transaction on SQLite, one `unnest` on PostgreSQL).

import { filterSql, type EventFilter } from 'browser-telemetry-agent/events';
import type { Database, Queryable, SqlValue } from '../storage/database.ts';
import { Conditions, readPage } from '../storage/list-query.ts';
import { toBrowser, type BrowserRecord, type BrowserRow, type EndedReason, type Page, type PageRequest } from '../storage/store.ts';
import { EVENT_KIND, type ArchivedEvent } from './event-row.ts';

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

/** A session a follower took the lease of. */
export interface LeasedSession {
  sessionId: string;
  sessionKey: number;
  agentUrl: string;
  agentToken: string;
  archivedSeq: number;
  createdAt: number;
  lastHeardAt: number | null;
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

/** What one committed batch did to one session. */
export interface SessionBatchResult {
  sessionKey: number;
  /** Rows new to the archive (the others were already there: stored once). */
  inserted: number;
  maxSeq: number;
}

/** How far apart in time two targets' events may be admitted out of order (the agent's own bound). */
const TS_SKEW_US = 10_000_000;

const SESSION_COLUMNS = `b.session_id, b.session_key, b.project_id, b.agent_url, b.agent_token, b.created_at, b.deleted_at,
  b.ended_reason, b.archived_seq, b.log_id, b.event_count, b.error_count, b.failed_request_count, b.first_event_ts, b.last_event_ts`;

/** Sessions of a deleted project are gone for readers (and purged by retention). */
const OF_LIVE_PROJECT = '(b.project_id IS NULL OR EXISTS (SELECT 1 FROM projects p WHERE p.id = b.project_id AND p.deleted_at IS NULL))';

const INSERT_ROW = `INSERT INTO archive_events (session_key, seq, ts, type, target_id, nav_seq, kind, event)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`;

// PostgreSQL: the whole batch in one statement, so one round trip and its own transaction: the
// rows go in through `unnest` of PostgreSQL arrays, and the sessions' counts move by the rows
// actually inserted (a row already there counts nothing), their high-water marks by the batch.
const INSERT_BATCH_POSTGRES = `WITH inserted AS (
    INSERT INTO archive_events (session_key, seq, ts, type, target_id, nav_seq, kind, event)
    SELECT * FROM unnest(?::bigint[], ?::bigint[], ?::bigint[], ?::text[], ?::text[], ?::bigint[], ?::smallint[], ?::json[])
    ON CONFLICT DO NOTHING
    RETURNING session_key, kind, ts
  ),
  counted AS (
    SELECT session_key, COUNT(*) AS n, SUM(CASE WHEN kind = 1 THEN 1 ELSE 0 END) AS errors,
      SUM(CASE WHEN kind = 2 THEN 1 ELSE 0 END) AS failed, MIN(ts) AS min_ts, MAX(ts) AS max_ts
    FROM inserted GROUP BY session_key
  ),
  batch AS (SELECT * FROM unnest(?::bigint[], ?::bigint[]) AS t(session_key, max_seq))
  UPDATE browsers b SET
    event_count = b.event_count + COALESCE(c.n, 0),
    error_count = b.error_count + COALESCE(c.errors, 0),
    failed_request_count = b.failed_request_count + COALESCE(c.failed, 0),
    archived_seq = GREATEST(b.archived_seq, batch.max_seq),
    first_event_ts = LEAST(b.first_event_ts, c.min_ts),
    last_event_ts = GREATEST(b.last_event_ts, c.max_ts)
  FROM batch LEFT JOIN counted c ON c.session_key = batch.session_key
  WHERE b.session_key = batch.session_key
  RETURNING b.session_key, COALESCE(c.n, 0) AS n`;

const UPDATE_COUNTS = `UPDATE browsers SET
    event_count = event_count + ?, error_count = error_count + ?, failed_request_count = failed_request_count + ?,
    archived_seq = CASE WHEN archived_seq > ? THEN archived_seq ELSE ? END,
    first_event_ts = CASE WHEN first_event_ts IS NULL OR first_event_ts > ? THEN ? ELSE first_event_ts END,
    last_event_ts = CASE WHEN last_event_ts IS NULL OR last_event_ts < ? THEN ? ELSE last_event_ts END
  WHERE session_key = ?`;

const UPDATE_HIGH_WATER = 'UPDATE browsers SET archived_seq = CASE WHEN archived_seq > ? THEN archived_seq ELSE ? END WHERE session_key = ?';

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

interface SessionTotals {
  inserted: number;
  errors: number;
  failed: number;
  minTs: number;
  maxTs: number;
}

export class ArchiveStore {
  constructor(
    readonly db: Database,
    private readonly now: () => number = Date.now,
  ) {}

  // ---- writing --------------------------------------------------------------------------------

  /**
   * Stores `events` (any sessions, any order) in one transaction, each (session, seq) once, and
   * moves each session's high-water seq and counts. Rows already archived change nothing.
   */
  async insert(events: ReadonlyArray<{ sessionKey: number; event: ArchivedEvent }>): Promise<SessionBatchResult[]> {
    if (events.length === 0) return [];
    // One order for every writer (the follower's batches, a drain): concurrent transactions on
    // PostgreSQL then take row locks in the same order and cannot deadlock each other.
    const sorted = [...events].sort((a, b) => a.sessionKey - b.sessionKey || a.event.seq - b.event.seq);
    const maxSeq = new Map<number, number>();
    for (const { sessionKey, event } of sorted) maxSeq.set(sessionKey, Math.max(maxSeq.get(sessionKey) ?? 0, event.seq));
    if (this.db.dialect === 'postgres') return this.insertPostgres(sorted, maxSeq);
    return this.db.transaction(async (tx) => {
      const totals = await this.insertEach(tx, sorted);
      const results: SessionBatchResult[] = [];
      for (const [sessionKey, seq] of maxSeq) {
        const t = totals.get(sessionKey);
        if (t === undefined || t.inserted === 0) {
          await tx.run(UPDATE_HIGH_WATER, [seq, seq, sessionKey]);
          results.push({ sessionKey, inserted: 0, maxSeq: seq });
          continue;
        }
        await tx.run(UPDATE_COUNTS, [t.inserted, t.errors, t.failed, seq, seq, t.minTs, t.minTs, t.maxTs, t.maxTs, sessionKey]);
        results.push({ sessionKey, inserted: t.inserted, maxSeq: seq });
      }
      return results;
    });
  }

  private async insertEach(tx: Queryable, events: ReadonlyArray<{ sessionKey: number; event: ArchivedEvent }>): Promise<Map<number, SessionTotals>> {
    const totals = new Map<number, SessionTotals>();
    for (const { sessionKey, event: e } of events) {
      const changed = await tx.run(INSERT_ROW, [sessionKey, e.seq, e.ts, e.type, e.targetId, e.navSeq, e.kind, e.eventJson]);
      if (changed === 0) continue;
      let t = totals.get(sessionKey);
      if (!t) totals.set(sessionKey, (t = { inserted: 0, errors: 0, failed: 0, minTs: e.ts, maxTs: e.ts }));
      t.inserted++;
      if (e.kind === EVENT_KIND.error) t.errors++;
      if (e.kind === EVENT_KIND.failedRequest) t.failed++;
      if (e.ts < t.minTs) t.minTs = e.ts;
      if (e.ts > t.maxTs) t.maxTs = e.ts;
    }
    return totals;
  }

  private async insertPostgres(
    events: ReadonlyArray<{ sessionKey: number; event: ArchivedEvent }>,
    maxSeq: Map<number, number>,
  ): Promise<SessionBatchResult[]> {
    const n = events.length;
    const keys = new Array<number>(n);
    const seqs = new Array<number>(n);
    const tss = new Array<number>(n);
    const types = new Array<string>(n);
    const targets = new Array<string | null>(n);
    const navSeqs = new Array<number | null>(n);
    const kinds = new Array<number>(n);
    const json = new Array<string>(n);
    for (let i = 0; i < n; i++) {
      const { sessionKey, event: e } = events[i]!;
      keys[i] = sessionKey;
      seqs[i] = e.seq;
      tss[i] = e.ts;
      types[i] = e.type;
      targets[i] = e.targetId;
      navSeqs[i] = e.navSeq;
      kinds[i] = e.kind;
      json[i] = e.eventJson;
    }
    const rows = await this.db.all<{ session_key: number; n: number }>(INSERT_BATCH_POSTGRES, [
      keys,
      seqs,
      tss,
      types,
      targets,
      navSeqs,
      kinds,
      json,
      [...maxSeq.keys()],
      [...maxSeq.values()],
    ]);
    return rows.map((row) => ({ sessionKey: Number(row.session_key), inserted: Number(row.n), maxSeq: maxSeq.get(Number(row.session_key)) ?? 0 }));
  }

  async recordLogId(sessionKey: number, logId: string): Promise<void> {
    await this.db.run('UPDATE browsers SET log_id = ? WHERE session_key = ? AND (log_id IS NULL OR log_id <> ?)', [logId, sessionKey, logId]);
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
    const changed = await this.db.run('UPDATE browsers SET deleted_at = ?, ended_reason = ? WHERE session_key = ? AND deleted_at IS NULL', [
      this.now(),
      reason,
      sessionKey,
    ]);
    return changed > 0;
  }

  // ---- the follow lease -----------------------------------------------------------------------

  /**
   * Takes the lease of up to `limit` live sessions nobody holds (never taken, released, or
   * expired at `now`). The condition is checked again on each row as it is written (an upsert
   * whose update has the condition), so of several instances claiming at once exactly one gets
   * each session.
   */
  async claim(holder: string, now: number, expiresAt: number, limit: number): Promise<LeasedSession[]> {
    const taken = await this.db.all<{ session_key: number }>(
      `INSERT INTO archive_follow (session_key, lease_holder, lease_expires_at)
       SELECT b.session_key, ?, ? FROM browsers b LEFT JOIN archive_follow f ON f.session_key = b.session_key
       WHERE b.deleted_at IS NULL AND (f.session_key IS NULL OR f.lease_expires_at IS NULL OR f.lease_expires_at < ?)
       ORDER BY b.created_at LIMIT ?
       ON CONFLICT (session_key) DO UPDATE SET lease_holder = excluded.lease_holder, lease_expires_at = excluded.lease_expires_at
         WHERE archive_follow.lease_expires_at IS NULL OR archive_follow.lease_expires_at < ?
       RETURNING session_key`,
      [holder, expiresAt, now, limit, now],
    );
    if (taken.length === 0) return [];
    const keys = taken.map((row) => Number(row.session_key));
    const rows = await this.db.all<{
      session_id: string;
      session_key: number;
      agent_url: string;
      agent_token: string;
      archived_seq: number;
      created_at: number;
      last_heard_at: number | null;
    }>(
      `SELECT b.session_id, b.session_key, b.agent_url, b.agent_token, b.archived_seq, b.created_at, f.last_heard_at
       FROM browsers b JOIN archive_follow f ON f.session_key = b.session_key WHERE b.session_key IN (${keys.map(() => '?').join(', ')})`,
      keys,
    );
    return rows.map((row) => ({
      sessionId: row.session_id,
      sessionKey: Number(row.session_key),
      agentUrl: row.agent_url,
      agentToken: row.agent_token,
      archivedSeq: Number(row.archived_seq),
      createdAt: Number(row.created_at),
      lastHeardAt: nullableNumber(row.last_heard_at),
    }));
  }

  /**
   * Extends every lease `holder` still has; returns them with whether their session has ended
   * meanwhile. A lease not returned was lost (expired and taken by another instance).
   */
  async renew(holder: string, expiresAt: number): Promise<Array<{ sessionKey: number; ended: boolean }>> {
    const rows = await this.db.all<{ session_key: number }>('UPDATE archive_follow SET lease_expires_at = ? WHERE lease_holder = ? RETURNING session_key', [
      expiresAt,
      holder,
    ]);
    const keys = rows.map((row) => Number(row.session_key));
    const ended = new Set<number>();
    for (let start = 0; start < keys.length; start += 500) {
      const slice = keys.slice(start, start + 500);
      const endedRows = await this.db.all<{ session_key: number }>(
        `SELECT session_key FROM browsers WHERE deleted_at IS NOT NULL AND session_key IN (${slice.map(() => '?').join(', ')})`,
        slice,
      );
      for (const row of endedRows) ended.add(Number(row.session_key));
    }
    return keys.map((sessionKey) => ({ sessionKey, ended: ended.has(sessionKey) }));
  }

  /** Records that the agents of `sessionKeys` answered at `at` (the silence clock). */
  async heard(holder: string, sessionKeys: readonly number[], at: number): Promise<void> {
    for (let start = 0; start < sessionKeys.length; start += 500) {
      const slice = sessionKeys.slice(start, start + 500);
      await this.db.run(`UPDATE archive_follow SET last_heard_at = ? WHERE lease_holder = ? AND session_key IN (${slice.map(() => '?').join(', ')})`, [
        at,
        holder,
        ...slice,
      ]);
    }
  }

  /** Gives up `holder`'s lease of one session, or of all (shutdown): another instance takes them at once. */
  async release(holder: string, sessionKey?: number): Promise<void> {
    if (sessionKey === undefined) {
      await this.db.run('UPDATE archive_follow SET lease_holder = NULL, lease_expires_at = NULL WHERE lease_holder = ?', [holder]);
    } else {
      await this.db.run('UPDATE archive_follow SET lease_holder = NULL, lease_expires_at = NULL WHERE lease_holder = ? AND session_key = ?', [
        holder,
        sessionKey,
      ]);
    }
  }

  /** The instance holding the lease of a session now; null when nobody does. */
  async leaseHolder(sessionKey: number): Promise<string | null> {
    const rows = await this.db.all<{ lease_holder: string | null; lease_expires_at: number | null }>(
      'SELECT lease_holder, lease_expires_at FROM archive_follow WHERE session_key = ?',
      [sessionKey],
    );
    const row = rows[0];
    if (!row || row.lease_holder === null || row.lease_expires_at === null || Number(row.lease_expires_at) < this.now()) return null;
    return row.lease_holder;
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

  /** Every archived event of a session from `fromSeq` on, in pages of `pageSize`, oldest first. */
  async *events(sessionKey: number, fromSeq: number, toSeq: number, filter: EventFilter | undefined, pageSize = 1000): AsyncGenerator<StoredEvent[]> {
    let next = fromSeq;
    while (next <= toSeq) {
      const rows = await this.page({ sessionKey, filter, order: 'asc', minSeq: next, maxSeq: toSeq, limit: pageSize });
      if (rows.length === 0) return;
      yield rows;
      if (rows.length < pageSize) return;
      next = rows[rows.length - 1]!.seq + 1;
    }
  }

  // ---- retention ------------------------------------------------------------------------------

  /**
   * Sessions whose every trace is due to go: ended before `cutoffMs` with no event newer than it,
   * or ended and of a deleted project.
   */
  async purgeable(cutoffMs: number, limit: number): Promise<number[]> {
    const rows = await this.db.all<{ session_key: number }>(
      `SELECT b.session_key FROM browsers b WHERE b.deleted_at IS NOT NULL AND (
         (b.deleted_at < ? AND (b.last_event_ts IS NULL OR b.last_event_ts < ?))
         OR NOT ${OF_LIVE_PROJECT}
       ) LIMIT ?`,
      [cutoffMs, cutoffMs * 1000, limit],
    );
    return rows.map((row) => Number(row.session_key));
  }

  /**
   * Deletes up to `chunk` of a session's oldest events (each chunk its own statement, so no
   * transaction grows with the session); the number deleted.
   */
  async deleteEventsChunk(sessionKey: number, chunk: number): Promise<number> {
    const [bounds] = await this.db.all<{ lo: number | null }>('SELECT MIN(seq) AS lo FROM archive_events WHERE session_key = ?', [sessionKey]);
    if (bounds?.lo === null || bounds?.lo === undefined) return 0;
    return this.db.run('DELETE FROM archive_events WHERE session_key = ? AND seq < ?', [sessionKey, Number(bounds.lo) + chunk]);
  }

  /** Removes an ended session's rows once its events are gone; its id may then be registered again. */
  async deleteSessionRow(sessionKey: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.run('DELETE FROM archive_follow WHERE session_key = ?', [sessionKey]);
      await tx.run('DELETE FROM browsers WHERE session_key = ? AND deleted_at IS NOT NULL', [sessionKey]);
    });
  }

  /** Sessions holding events older than `cutoffTs` (Unix µs). */
  async withEventsBefore(cutoffTs: number, limit: number): Promise<number[]> {
    const rows = await this.db.all<{ session_key: number }>('SELECT session_key FROM browsers WHERE first_event_ts < ? LIMIT ?', [cutoffTs, limit]);
    return rows.map((row) => Number(row.session_key));
  }

  /** Deletes a session's events older than `cutoffTs` and takes them off its counts; the number deleted. */
  async trimBefore(sessionKey: number, cutoffTs: number): Promise<number> {
    return this.db.transaction(async (tx) => {
      const rows = await tx.all<{ kind: number; n: number }>('SELECT kind, COUNT(*) AS n FROM archive_events WHERE session_key = ? AND ts < ? GROUP BY kind', [
        sessionKey,
        cutoffTs,
      ]);
      let total = 0;
      let errors = 0;
      let failed = 0;
      for (const row of rows) {
        const n = Number(row.n);
        total += n;
        if (Number(row.kind) === EVENT_KIND.error) errors += n;
        if (Number(row.kind) === EVENT_KIND.failedRequest) failed += n;
      }
      await tx.run('DELETE FROM archive_events WHERE session_key = ? AND ts < ?', [sessionKey, cutoffTs]);
      await tx.run(
        `UPDATE browsers SET event_count = event_count - ?, error_count = error_count - ?, failed_request_count = failed_request_count - ?,
           first_event_ts = (SELECT MIN(ts) FROM archive_events WHERE session_key = ?) WHERE session_key = ?`,
        [total, errors, failed, sessionKey, sessionKey],
      );
      return total;
    });
  }
}

function addFilterTo(filter: EventFilter | undefined, where: string[], params: SqlValue[], sinceTs?: number, untilTs?: number): void {
  const sql = filterSql(filter, sinceTs, untilTs, 'event');
  where.push(...sql.clauses);
  params.push(...sql.params);
}
