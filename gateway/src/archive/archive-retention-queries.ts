// What retention removes (docs/gateway.md "Retention"), as queries: purged sessions' events in
// chunks and then their rows, and events older than the cut-off with the sessions' counts (the
// session rows through storage/browser-rows.ts, in the same transaction). retention.ts decides
// when and how much.

import { deleteEnded, takeOffCounts } from '../storage/browser-rows.ts';
import type { Database } from '../storage/database.ts';
import { EVENT_KIND } from './event-row.ts';

/** Sessions of a deleted project are gone for readers (and purged by retention). */
export const OF_LIVE_PROJECT = '(b.project_id IS NULL OR EXISTS (SELECT 1 FROM projects p WHERE p.id = b.project_id AND p.deleted_at IS NULL))';

export class ArchiveRetentionQueries {
  constructor(private readonly db: Database) {}

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
    await this.db.transaction((tx) => deleteEnded(tx, sessionKey));
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
      await takeOffCounts(tx, sessionKey, { events: total, errors, failedRequests: failed });
      return total;
    });
  }
}
