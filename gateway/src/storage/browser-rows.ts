// Every write to the `browsers` table, in one module: a row is a session (docs/gateway.md "The
// archive"), written by registration and DELETE (store.ts) and by the archive (its counts, its
// high-water seq, the agent's log id, the end marks, retention's removal). A row's follow lease
// (`archive_follow`, otherwise the archive's: archive-leases.ts) goes with the row when the row
// is removed or taken over, so that happens here too. The archive calls these with its
// transaction where its own rows and the session's counts must move together. Each function takes
// the `Queryable` to run on: the database, or a transaction of it.

import type { Queryable } from './database.ts';

/** How a session ended (docs/gateway.md "Ending"). */
export type EndedReason = 'deleted' | 'agent_ended' | 'agent_silent';

/** What one committed batch of archived events adds to a session. */
export interface ArchivedCounts {
  /** Rows new to the archive. */
  inserted: number;
  errors: number;
  failedRequests: number;
  /** Newest seq of the batch (inserted or not). */
  maxSeq: number;
  /** Unix µs of the oldest and newest inserted event. */
  minTs: number;
  maxTs: number;
}

/** What retention took off a session: events deleted, of which errors and failed requests. */
export interface RemovedCounts {
  events: number;
  errors: number;
  failedRequests: number;
}

/** A registration: the session and its agent. */
export interface BrowserRecord {
  sessionId: string;
  /** The number standing for the session in its archived events (migrations.ts, version 2). */
  sessionKey: number;
  projectId: string | null;
  agentUrl: string;
  agentToken: string;
  createdAt: number;
}

const ADD_COUNTS = `UPDATE browsers SET
    event_count = event_count + ?, error_count = error_count + ?, failed_request_count = failed_request_count + ?,
    archived_seq = CASE WHEN archived_seq > ? THEN archived_seq ELSE ? END,
    first_event_ts = CASE WHEN first_event_ts IS NULL OR first_event_ts > ? THEN ? ELSE first_event_ts END,
    last_event_ts = CASE WHEN last_event_ts IS NULL OR last_event_ts < ? THEN ? ELSE last_event_ts END
  WHERE session_key = ?`;

const RAISE_ARCHIVED_SEQ = 'UPDATE browsers SET archived_seq = CASE WHEN archived_seq > ? THEN archived_seq ELSE ? END WHERE session_key = ?';

/**
 * The archive's batched insert on PostgreSQL is one statement (one round trip, its own
 * transaction); this is its last part, the sessions' update. The statement defines before it
 * `batch(session_key, max_seq)`, each session of the batch with its newest seq, and
 * `counted(session_key, n, errors, failed, min_ts, max_ts)`, what was actually inserted (a row
 * already there counts nothing); the statement returns `session_key` and `n` per session.
 */
export const ADD_COUNTS_FROM_BATCH_POSTGRES = `UPDATE browsers b SET
    event_count = b.event_count + COALESCE(c.n, 0),
    error_count = b.error_count + COALESCE(c.errors, 0),
    failed_request_count = b.failed_request_count + COALESCE(c.failed, 0),
    archived_seq = GREATEST(b.archived_seq, batch.max_seq),
    first_event_ts = LEAST(b.first_event_ts, c.min_ts),
    last_event_ts = GREATEST(b.last_event_ts, c.max_ts)
  FROM batch LEFT JOIN counted c ON c.session_key = batch.session_key
  WHERE b.session_key = batch.session_key
  RETURNING b.session_key, COALESCE(c.n, 0) AS n`;

/** A batch's events are archived: the session's counts and time span grow, its high-water seq rises. */
export async function addArchivedCounts(q: Queryable, sessionKey: number, c: ArchivedCounts): Promise<void> {
  await q.run(ADD_COUNTS, [c.inserted, c.errors, c.failedRequests, c.maxSeq, c.maxSeq, c.minTs, c.minTs, c.maxTs, c.maxTs, sessionKey]);
}

/** A batch had nothing new: only the high-water seq may rise. */
export async function raiseArchivedSeq(q: Queryable, sessionKey: number, seq: number): Promise<void> {
  await q.run(RAISE_ARCHIVED_SEQ, [seq, seq, sessionKey]);
}

/** The agent's event log id (which log the archived seqs belong to); written only when it changes. */
export async function recordLogId(q: Queryable, sessionKey: number, logId: string): Promise<void> {
  await q.run('UPDATE browsers SET log_id = ? WHERE session_key = ? AND (log_id IS NULL OR log_id <> ?)', [logId, sessionKey, logId]);
}

/** Ends a live session at `at` (Unix ms); false when it had already ended. */
export async function markEnded(q: Queryable, sessionKey: number, reason: EndedReason, at: number): Promise<boolean> {
  const changed = await q.run('UPDATE browsers SET deleted_at = ?, ended_reason = ? WHERE session_key = ? AND deleted_at IS NULL', [at, reason, sessionKey]);
  return changed > 0;
}

/**
 * A DELETE through the gateway ended the session. A follower may have seen the agent end it a
 * moment before (its stream's 404 comes before the DELETE's own answer): that end was this
 * DELETE, and says so.
 */
export async function markDeleted(q: Queryable, sessionId: string, at: number): Promise<void> {
  await q.run(
    `UPDATE browsers SET deleted_at = COALESCE(deleted_at, ?), ended_reason = 'deleted'
       WHERE session_id = ? AND (deleted_at IS NULL OR ended_reason = 'agent_ended')`,
    [at, sessionId],
  );
}

/** A new session id's row. */
export async function insertRegistered(q: Queryable, row: BrowserRecord): Promise<void> {
  await q.run(
    'INSERT INTO browsers (project_id, agent_url, agent_token, created_at, session_key, session_id) VALUES (?, ?, ?, ?, ?, ?)',
    registeredValues(row),
  );
}

/**
 * An ended row with nothing archived, taken over by a new registration of its id: live again, its
 * archive state cleared, the old session key's follow lease gone with it. Run it in a transaction.
 */
export async function replaceEnded(q: Queryable, row: BrowserRecord): Promise<void> {
  await q.run('DELETE FROM archive_follow WHERE session_key = (SELECT session_key FROM browsers WHERE session_id = ?)', [row.sessionId]);
  await q.run(
    `UPDATE browsers SET project_id = ?, agent_url = ?, agent_token = ?, created_at = ?, session_key = ?, deleted_at = NULL,
               ended_reason = NULL, log_id = NULL, first_event_ts = NULL, last_event_ts = NULL WHERE session_id = ?`,
    registeredValues(row),
  );
}

function registeredValues(row: BrowserRecord): Array<string | number | null> {
  return [row.projectId, row.agentUrl, row.agentToken, row.createdAt, row.sessionKey, row.sessionId];
}

/**
 * Retention deleted a session's events older than a cut-off: they come off its counts, and its
 * oldest event time is read again from what is left (so run it in the deleting transaction).
 */
export async function takeOffCounts(q: Queryable, sessionKey: number, removed: RemovedCounts): Promise<void> {
  await q.run(
    `UPDATE browsers SET event_count = event_count - ?, error_count = error_count - ?, failed_request_count = failed_request_count - ?,
           first_event_ts = (SELECT MIN(ts) FROM archive_events WHERE session_key = ?) WHERE session_key = ?`,
    [removed.events, removed.errors, removed.failedRequests, sessionKey, sessionKey],
  );
}

/**
 * Removes an ended session's row (a live one stays) and its follow lease; its id may then be
 * registered again. Run it in a transaction.
 */
export async function deleteEnded(q: Queryable, sessionKey: number): Promise<void> {
  await q.run('DELETE FROM archive_follow WHERE session_key = ?', [sessionKey]);
  await q.run('DELETE FROM browsers WHERE session_key = ? AND deleted_at IS NOT NULL', [sessionKey]);
}
