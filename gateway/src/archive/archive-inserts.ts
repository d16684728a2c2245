// The archive's writes of events (docs/gateway.md "The archive"): each (session, seq) stored
// once, and the session rows' high-water seq and counts moved with them (through
// storage/browser-rows.ts, the one writer of `browsers`), in one transaction.
// Written once for both backends; the batched insert is the one place the two differ (a prepared
// statement per row inside one transaction on SQLite, one `unnest` on PostgreSQL).

import { ADD_COUNTS_FROM_BATCH_POSTGRES, addArchivedCounts, raiseArchivedSeq, recordLogId } from '../storage/browser-rows.ts';
import type { Database, Queryable } from '../storage/database.ts';
import { EVENT_KIND, type ArchivedEvent } from './event-row.ts';

/** What one committed batch did to one session. */
export interface SessionBatchResult {
  sessionKey: number;
  /** Rows new to the archive (the others were already there: stored once). */
  inserted: number;
  maxSeq: number;
}

const INSERT_ROW = `INSERT INTO archive_events (session_key, seq, ts, type, target_id, nav_seq, kind, event)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`;

// PostgreSQL: the whole batch in one statement, so one round trip and its own transaction: the
// rows go in through `unnest` of PostgreSQL arrays, and the sessions' counts move by the rows
// actually inserted (a row already there counts nothing), their high-water marks by the batch
// (the sessions' rows are written by storage/browser-rows.ts, which owns that last part).
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
  ${ADD_COUNTS_FROM_BATCH_POSTGRES}`;

interface SessionTotals {
  inserted: number;
  errors: number;
  failed: number;
  minTs: number;
  maxTs: number;
}

export class ArchiveInserts {
  constructor(private readonly db: Database) {}

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
          await raiseArchivedSeq(tx, sessionKey, seq);
          results.push({ sessionKey, inserted: 0, maxSeq: seq });
          continue;
        }
        await addArchivedCounts(tx, sessionKey, {
          inserted: t.inserted,
          errors: t.errors,
          failedRequests: t.failed,
          maxSeq: seq,
          minTs: t.minTs,
          maxTs: t.maxTs,
        });
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
    await recordLogId(this.db, sessionKey, logId);
  }
}
