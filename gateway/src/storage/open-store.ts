// Opens the configured backend, brings its schema up to date and wraps it in the store.

import type { Database } from './database.ts';
import { migrate, type MigrationResult } from './migrations.ts';
import { PostgresDatabase } from './postgres.ts';
import type { ModeChange } from './private-files.ts';
import { SqliteDatabase } from './sqlite.ts';
import { GatewayStore } from './store.ts';

export type StorageConfig = { kind: 'sqlite'; dataDir: string } | { kind: 'postgres'; databaseUrl: string };

export interface OpenedStore {
  store: GatewayStore;
  migration: MigrationResult;
  /** SQLite: permissions taken away from an existing store's directory and files, for the log. */
  permissionChanges: readonly ModeChange[];
}

export async function openStore(storage: StorageConfig, onIdleError?: (err: Error) => void): Promise<OpenedStore> {
  const db: Database = storage.kind === 'sqlite' ? SqliteDatabase.open(storage.dataDir) : new PostgresDatabase(storage.databaseUrl, onIdleError);
  try {
    const migration = await migrate(db);
    return { store: new GatewayStore(db), migration, permissionChanges: db instanceof SqliteDatabase ? db.permissionChanges : [] };
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
}

/** Where the data lives, for logs and errors: never the database password. */
export function describeStorage(storage: StorageConfig): string {
  if (storage.kind === 'sqlite') return `SQLite in ${storage.dataDir}`;
  try {
    const url = new URL(storage.databaseUrl);
    return `PostgreSQL at ${url.hostname}${url.port ? `:${url.port}` : ''}${url.pathname}`;
  } catch {
    return 'PostgreSQL';
  }
}
