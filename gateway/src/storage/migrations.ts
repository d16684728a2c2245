// One schema for both backends, applied by numbered migrations. The SQL below is the common
// subset of SQLite and PostgreSQL (TEXT, BIGINT, partial indexes, CHECK), so each migration is
// written once; the rare statement the two dialects must spell differently (the archive's table,
// clustered on SQLite, with a JSON column on PostgreSQL) is given per dialect. Applied versions
// are recorded in schema_migrations; a start applies the missing ones in one transaction, and
// several gateways starting at once on PostgreSQL take turns.

import type { Database, Dialect } from './database.ts';

/** A statement in the common SQL, or spelled once per dialect. */
export type MigrationStatement = string | Readonly<Record<Dialect, string>>;

export interface Migration {
  version: number;
  name: string;
  statements: readonly MigrationStatement[];
}

/** Append only: a released migration is never edited, a change is a new version. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'projects, api keys and browsers',
    statements: [
      // Times are Unix milliseconds; name_folded is the lower-cased name that `query` searches,
      // folded in JavaScript so both backends match the same way.
      `CREATE TABLE projects (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        name_folded TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('active', 'archived')),
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        deleted_at BIGINT
      )`,
      // Names are unique among live projects only: a deleted project's name can be reused.
      `CREATE UNIQUE INDEX projects_live_name ON projects (name) WHERE deleted_at IS NULL`,
      `CREATE INDEX projects_live_order ON projects (created_at, id) WHERE deleted_at IS NULL`,
      `CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        name_folded TEXT NOT NULL,
        key_digest TEXT NOT NULL UNIQUE,
        masked_key TEXT NOT NULL,
        project_id TEXT REFERENCES projects (id),
        created_by_id TEXT NOT NULL,
        created_by_email TEXT NOT NULL,
        created_by_name TEXT,
        created_at BIGINT NOT NULL,
        expires_at BIGINT,
        deleted_at BIGINT
      )`,
      `CREATE INDEX api_keys_project ON api_keys (project_id) WHERE deleted_at IS NULL`,
      `CREATE TABLE browsers (
        session_id TEXT PRIMARY KEY,
        project_id TEXT REFERENCES projects (id),
        agent_url TEXT NOT NULL,
        agent_token TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        deleted_at BIGINT
      )`,
      `CREATE INDEX browsers_project ON browsers (project_id) WHERE deleted_at IS NULL`,
    ],
  },
  {
    version: 2,
    name: 'telemetry archive',
    statements: [
      // docs/gateway.md "The archive". A browsers row is the session: live while deleted_at is
      // NULL, ended after (ended_reason says how). session_key is a small number standing for
      // the session id in every archived event (8 bytes instead of up to 128 characters, in the
      // table and in each of its indexes); it comes from `counters`, which never goes back, so a
      // key is never reused.
      `ALTER TABLE browsers ADD COLUMN session_key BIGINT`,
      `ALTER TABLE browsers ADD COLUMN ended_reason TEXT`,
      // The agent's X-Log-Id, as the follower last saw it.
      `ALTER TABLE browsers ADD COLUMN log_id TEXT`,
      // Newest seq archived (everything the agent had up to it is archived), and the counts
      // GET /browsers shows, kept with every batch.
      `ALTER TABLE browsers ADD COLUMN archived_seq BIGINT NOT NULL DEFAULT 0`,
      `ALTER TABLE browsers ADD COLUMN event_count BIGINT NOT NULL DEFAULT 0`,
      `ALTER TABLE browsers ADD COLUMN error_count BIGINT NOT NULL DEFAULT 0`,
      `ALTER TABLE browsers ADD COLUMN failed_request_count BIGINT NOT NULL DEFAULT 0`,
      `ALTER TABLE browsers ADD COLUMN first_event_ts BIGINT`,
      `ALTER TABLE browsers ADD COLUMN last_event_ts BIGINT`,
      `UPDATE browsers SET session_key = (SELECT COUNT(*) FROM browsers b2
         WHERE b2.created_at < browsers.created_at OR (b2.created_at = browsers.created_at AND b2.session_id <= browsers.session_id))`,
      `CREATE UNIQUE INDEX browsers_session_key ON browsers (session_key)`,
      `CREATE INDEX browsers_order ON browsers (created_at, session_id)`,
      `CREATE INDEX browsers_live ON browsers (created_at) WHERE deleted_at IS NULL`,
      `CREATE TABLE counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL)`,
      // The follow lease of a session: the instance following it, until when (Unix ms), and when
      // a follower last heard from its agent (any answer: the silence that ends a session). A
      // table of its own: renewing the leases every few seconds must not wait on (or deadlock
      // with) the writers, which update the browsers rows' counts with every batch.
      `CREATE TABLE archive_follow (
        session_key BIGINT PRIMARY KEY,
        lease_holder TEXT,
        lease_expires_at BIGINT,
        last_heard_at BIGINT
      )`,
      `CREATE INDEX archive_follow_holder ON archive_follow (lease_holder)`,
      `INSERT INTO counters (name, value) SELECT 'session_key', COALESCE(MAX(session_key), 0) FROM browsers`,
      // One row per event. The envelope is `{"seq":<seq>,"event":<event>}` on the wire; only the
      // event's JSON is kept, byte for byte, and the envelope is rebuilt around it when read.
      // kind: 0 other, 1 error (console_error), 2 failed request (a failed load that was not
      // canceled, or a response of status 400 or more).
      {
        // Clustered by (session, seq): a session's page is one range of one B-tree.
        sqlite: `CREATE TABLE archive_events (
          session_key INTEGER NOT NULL,
          seq INTEGER NOT NULL,
          ts INTEGER NOT NULL,
          type TEXT NOT NULL,
          target_id TEXT,
          nav_seq INTEGER,
          kind INTEGER NOT NULL,
          event TEXT NOT NULL,
          PRIMARY KEY (session_key, seq)
        ) WITHOUT ROWID`,
        // json, not jsonb: json keeps the text as sent, so a read returns the agent's bytes.
        postgres: `CREATE TABLE archive_events (
          session_key BIGINT NOT NULL,
          seq BIGINT NOT NULL,
          ts BIGINT NOT NULL,
          type TEXT NOT NULL,
          target_id TEXT,
          nav_seq BIGINT,
          kind SMALLINT NOT NULL,
          event JSON NOT NULL,
          PRIMARY KEY (session_key, seq)
        )`,
      },
      `CREATE INDEX archive_events_type ON archive_events (session_key, type, seq)`,
      `CREATE INDEX archive_events_target ON archive_events (session_key, target_id, seq)`,
      `CREATE INDEX archive_events_ts ON archive_events (session_key, ts)`,
    ],
  },
  {
    version: 3,
    name: 'viewer tickets',
    statements: [
      // docs/viewer.md "Through the gateway": the ids of the viewer tickets already redeemed, until
      // they expire (Unix ms), so that a ticket opens one viewer across every instance.
      `CREATE TABLE viewer_tickets (
        jti TEXT PRIMARY KEY,
        expires_at BIGINT NOT NULL
      )`,
      `CREATE INDEX viewer_tickets_expiry ON viewer_tickets (expires_at)`,
    ],
  },
  {
    version: 4,
    name: 'replay archive',
    statements: [
      // docs/gateway.md "Replays": a session's finished replays, kept with its events. One row per
      // replay: the agent's replay object as it sent it (`object`, served again with the
      // gateway's own viewer link), its file's size, type and ETag, and how far it is archived;
      // `archived_at` is set once every byte is, and only then does a reader see it. The file is
      // kept in the database (archive_replay_chunks) so every instance serves it.
      `CREATE TABLE archive_replays (
        session_key BIGINT NOT NULL,
        replay_id TEXT NOT NULL,
        started_at BIGINT NOT NULL,
        finished_at BIGINT NOT NULL,
        object TEXT NOT NULL,
        mime_type TEXT NOT NULL,
        etag TEXT NOT NULL,
        size_bytes BIGINT NOT NULL,
        chunk_bytes INTEGER NOT NULL,
        stored_bytes BIGINT NOT NULL DEFAULT 0,
        archived_at BIGINT,
        PRIMARY KEY (session_key, replay_id)
      )`,
      `CREATE INDEX archive_replays_finished ON archive_replays (finished_at)`,
      // The file in chunks of `chunk_bytes` (the last one shorter): chunk n holds the bytes from
      // n × chunk_bytes. A plain table on SQLite (WITHOUT ROWID suits small rows, not 256 KiB
      // ones); bytea on PostgreSQL (TOASTed out of line).
      {
        sqlite: `CREATE TABLE archive_replay_chunks (
          session_key INTEGER NOT NULL,
          replay_id TEXT NOT NULL,
          chunk INTEGER NOT NULL,
          data BLOB NOT NULL,
          PRIMARY KEY (session_key, replay_id, chunk)
        )`,
        postgres: `CREATE TABLE archive_replay_chunks (
          session_key BIGINT NOT NULL,
          replay_id TEXT NOT NULL,
          chunk INTEGER NOT NULL,
          data BYTEA NOT NULL,
          PRIMARY KEY (session_key, replay_id, chunk)
        )`,
      },
    ],
  },
];

/** Any constant: the advisory lock that serialises migrations across gateway instances. */
const MIGRATION_LOCK = 0x6274_6777;

export interface MigrationResult {
  /** Versions applied by this call, oldest first. */
  applied: number[];
  /** The schema version after this call. */
  version: number;
}

export async function migrate(db: Database, migrations: readonly Migration[] = MIGRATIONS): Promise<MigrationResult> {
  const latest = migrations.at(-1)?.version ?? 0;
  return db.transaction(async (tx) => {
    if (db.dialect === 'postgres') await tx.all('SELECT pg_advisory_xact_lock(?)', [MIGRATION_LOCK]);
    await tx.run(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at BIGINT NOT NULL
    )`);
    const done = new Set((await tx.all<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => Number(r.version)));
    const newest = Math.max(0, ...done);
    if (newest > latest) {
      throw new Error(`the database schema is at version ${newest}, newer than this gateway knows (${latest}): run a newer gateway`);
    }
    const applied: number[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      for (const statement of migration.statements) await tx.run(typeof statement === 'string' ? statement : statement[db.dialect]);
      await tx.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [migration.version, migration.name, Date.now()]);
      applied.push(migration.version);
    }
    return { applied, version: Math.max(newest, ...applied) };
  });
}
