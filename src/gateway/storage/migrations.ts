// One schema for both backends, applied by numbered migrations. The SQL below is the common
// subset of SQLite and PostgreSQL (TEXT, BIGINT, partial indexes, CHECK), so each migration is
// written once. Applied versions are recorded in schema_migrations; a start applies the missing
// ones in one transaction, and several gateways starting at once on PostgreSQL take turns.

import type { Database } from './database.ts';

export interface Migration {
  version: number;
  name: string;
  statements: readonly string[];
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
      for (const statement of migration.statements) await tx.run(statement);
      await tx.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [migration.version, migration.name, Date.now()]);
      applied.push(migration.version);
    }
    return { applied, version: Math.max(newest, ...applied) };
  });
}
