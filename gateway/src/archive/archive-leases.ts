// The follow lease (docs/gateway.md "The archive"): which gateway instance follows which live
// session, taken, renewed, released and checked in archive_follow, so of several instances
// exactly one follows each session.

import type { Database } from '../storage/database.ts';

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

const nullableNumber = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

export class ArchiveLeases {
  constructor(
    private readonly db: Database,
    private readonly now: () => number = Date.now,
  ) {}

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
}
