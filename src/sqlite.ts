// SQLite for the agent's durable store and the gateway's storage (docs/decisions.md
// "Dependencies"): @photostructure/sqlite, the API of Node's own node:sqlite for Node 20, whose
// npm package carries its compiled binaries (nothing is downloaded or compiled at install), with
// its better-sqlite3-style helpers (`pragma`, `transaction`, `pluck`) switched on.

import { DatabaseSync, enhance, type DatabaseSyncInstance, type EnhancedDatabaseSync } from '@photostructure/sqlite';

export type Sqlite = EnhancedDatabaseSync<DatabaseSyncInstance>;
export type SqliteStatement = ReturnType<Sqlite['prepare']>;
/** What a statement binds: SQLite's storage classes. */
export type SqlParam = null | number | bigint | string | Uint8Array;

/** SQLite's extended result codes the callers tell apart. */
export const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;
export const SQLITE_CONSTRAINT_UNIQUE = 2067;

/** Opens (and, unless read-only, creates) the database at `path`. */
export function openSqlite(path: string, options: { readOnly?: boolean } = {}): Sqlite {
  return enhance(new DatabaseSync(path, { readOnly: options.readOnly === true }));
}

/** The extended result code of an error SQLite raised; undefined for any other error. */
export function sqliteErrorCode(error: unknown): number | undefined {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  return typeof code === 'number' ? code : undefined;
}
