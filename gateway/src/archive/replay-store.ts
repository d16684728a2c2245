// The archived replays' SQL (docs/gateway.md "Replays"): a row per finished replay of a session
// (`archive_replays`: the agent's replay object, the file's size, type and ETag, how far it is
// archived) and the file itself in chunks (`archive_replay_chunks`), written once for both
// backends. Chunks are written in order, each with the row's `stored_bytes` in one transaction,
// so an interrupted archive resumes where it stopped; a row is visible to readers only once
// `archived_at` is set, after its last byte. Removal hides the row first, then deletes the chunks
// a few at a time (no statement grows with the file), the row last.

import type { Database } from '../storage/database.ts';

/** A replay's row. Times are Unix ms. */
export interface ReplayRow {
  sessionKey: number;
  replayId: string;
  startedAt: number;
  finishedAt: number;
  /** The agent's replay object as it sent it, without its viewer link (JSON text). */
  object: string;
  mimeType: string;
  etag: string;
  sizeBytes: number;
  chunkBytes: number;
  /** Bytes archived so far, from the start of the file. */
  storedBytes: number;
  /** Set once every byte is archived; until then readers do not see the replay. */
  archivedAt: number | null;
}

/** What a new row starts with. */
export type NewReplayRow = Omit<ReplayRow, 'storedBytes' | 'archivedAt'>;

/** Chunks deleted per statement (16 MiB of file at the default chunk size). */
const CHUNKS_PER_DELETE = 64;

const COLUMNS = 'session_key, replay_id, started_at, finished_at, object, mime_type, etag, size_bytes, chunk_bytes, stored_bytes, archived_at';

interface Row {
  session_key: number;
  replay_id: string;
  started_at: number;
  finished_at: number;
  object: string;
  mime_type: string;
  etag: string;
  size_bytes: number;
  chunk_bytes: number;
  stored_bytes: number;
  archived_at: number | null;
  [key: string]: unknown;
}

function toReplay(row: Row): ReplayRow {
  return {
    sessionKey: Number(row.session_key),
    replayId: row.replay_id,
    startedAt: Number(row.started_at),
    finishedAt: Number(row.finished_at),
    object: row.object,
    mimeType: row.mime_type,
    etag: row.etag,
    sizeBytes: Number(row.size_bytes),
    chunkBytes: Number(row.chunk_bytes),
    storedBytes: Number(row.stored_bytes),
    archivedAt: row.archived_at === null || row.archived_at === undefined ? null : Number(row.archived_at),
  };
}

export class ReplayStore {
  constructor(private readonly db: Database) {}

  /** A replay's row, archived or not; undefined when there is none. */
  async row(sessionKey: number, replayId: string): Promise<ReplayRow | undefined> {
    const rows = await this.db.all<Row>(`SELECT ${COLUMNS} FROM archive_replays WHERE session_key = ? AND replay_id = ?`, [sessionKey, replayId]);
    return rows[0] ? toReplay(rows[0]) : undefined;
  }

  /** The session's archived replays (every byte stored), oldest first. */
  async archived(sessionKey: number): Promise<ReplayRow[]> {
    const rows = await this.db.all<Row>(
      `SELECT ${COLUMNS} FROM archive_replays WHERE session_key = ? AND archived_at IS NOT NULL ORDER BY started_at, replay_id`,
      [sessionKey],
    );
    return rows.map(toReplay);
  }

  /** The row of a replay about to be archived: created unless another writer did (then theirs). */
  async begin(row: NewReplayRow): Promise<ReplayRow> {
    await this.db.run(
      `INSERT INTO archive_replays (session_key, replay_id, started_at, finished_at, object, mime_type, etag, size_bytes, chunk_bytes, stored_bytes)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0) ON CONFLICT DO NOTHING`,
      [row.sessionKey, row.replayId, row.startedAt, row.finishedAt, row.object, row.mimeType, row.etag, row.sizeBytes, row.chunkBytes],
    );
    return (await this.row(row.sessionKey, row.replayId))!;
  }

  /**
   * Chunk `chunk` of the file and the bytes stored through it, in one transaction. A chunk
   * already there (another writer's: the same bytes) is left as it is.
   */
  async writeChunk(sessionKey: number, replayId: string, chunk: number, data: Uint8Array, storedBytes: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.run('INSERT INTO archive_replay_chunks (session_key, replay_id, chunk, data) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING', [
        sessionKey,
        replayId,
        chunk,
        data,
      ]);
      await tx.run(
        'UPDATE archive_replays SET stored_bytes = CASE WHEN stored_bytes > ? THEN stored_bytes ELSE ? END WHERE session_key = ? AND replay_id = ?',
        [storedBytes, storedBytes, sessionKey, replayId],
      );
    });
  }

  /** Marks a replay archived once every byte is stored; false when some are missing. */
  async complete(sessionKey: number, replayId: string, at: number): Promise<boolean> {
    await this.db.run(
      'UPDATE archive_replays SET archived_at = ? WHERE session_key = ? AND replay_id = ? AND archived_at IS NULL AND stored_bytes = size_bytes',
      [at, sessionKey, replayId],
    );
    return (await this.row(sessionKey, replayId))?.archivedAt !== null;
  }

  /** One chunk's bytes; undefined when it is not (or no longer) there. */
  async chunk(sessionKey: number, replayId: string, chunk: number): Promise<Uint8Array | undefined> {
    const rows = await this.db.all<{ data: Uint8Array }>('SELECT data FROM archive_replay_chunks WHERE session_key = ? AND replay_id = ? AND chunk = ?', [
      sessionKey,
      replayId,
      chunk,
    ]);
    return rows[0]?.data;
  }

  /** Replays retention removes: finished before `cutoffMs`, or of a session whose row is gone. */
  async expired(cutoffMs: number, limit: number): Promise<Array<{ sessionKey: number; replayId: string }>> {
    const rows = await this.db.all<{ session_key: number; replay_id: string }>(
      `SELECT r.session_key, r.replay_id FROM archive_replays r
         WHERE r.finished_at < ? OR NOT EXISTS (SELECT 1 FROM browsers b WHERE b.session_key = r.session_key)
         LIMIT ?`,
      [cutoffMs, limit],
    );
    return rows.map((row) => ({ sessionKey: Number(row.session_key), replayId: row.replay_id }));
  }

  /** Every replay of a session, archived or not (a purged session's, before its row goes). */
  async ofSession(sessionKey: number): Promise<string[]> {
    const rows = await this.db.all<{ replay_id: string }>('SELECT replay_id FROM archive_replays WHERE session_key = ?', [sessionKey]);
    return rows.map((row) => row.replay_id);
  }

  /**
   * Removes a replay: hidden from readers first, then its chunks a few at a time, the row last
   * (an interrupted removal is found again by the next pass). Returns the chunks deleted.
   */
  async remove(sessionKey: number, replayId: string): Promise<number> {
    await this.db.run('UPDATE archive_replays SET archived_at = NULL WHERE session_key = ? AND replay_id = ?', [sessionKey, replayId]);
    let deleted = 0;
    for (;;) {
      const [bounds] = await this.db.all<{ lo: number | null }>('SELECT MIN(chunk) AS lo FROM archive_replay_chunks WHERE session_key = ? AND replay_id = ?', [
        sessionKey,
        replayId,
      ]);
      if (bounds?.lo === null || bounds?.lo === undefined) break;
      deleted += await this.db.run('DELETE FROM archive_replay_chunks WHERE session_key = ? AND replay_id = ? AND chunk < ?', [
        sessionKey,
        replayId,
        Number(bounds.lo) + CHUNKS_PER_DELETE,
      ]);
    }
    await this.db.run('DELETE FROM archive_replays WHERE session_key = ? AND replay_id = ?', [sessionKey, replayId]);
    return deleted;
  }
}
