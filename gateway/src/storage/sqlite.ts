// SQLite (src/sqlite.ts): the embedded default, one file under --data-dir. The driver is
// synchronous, so the only way two requests can interleave is across the awaits of a
// transaction; every operation therefore runs through one queue, and a transaction holds it
// from BEGIN to COMMIT. The directory and the files are the owner's alone (private-files.ts).

import { join } from 'node:path';
import {
  openSqlite,
  sqliteErrorCode,
  SQLITE_CONSTRAINT_PRIMARYKEY,
  SQLITE_CONSTRAINT_UNIQUE,
  type Sqlite,
  type SqliteStatement,
} from 'browser-telemetry-agent/program';
import type { Database, Queryable, Row, SqlValue } from './database.ts';
import { privateDirectory, privateFile, privateIfPresent, type ModeChange } from './private-files.ts';

export const SQLITE_FILE_NAME = 'gateway.sqlite3';
/** The files SQLite keeps beside the database in WAL mode. */
const WAL_COMPANIONS = ['-wal', '-shm'] as const;

export class SqliteDatabase implements Database {
  readonly dialect = 'sqlite' as const;
  readonly lockSuffix = '';
  private readonly db: Sqlite;
  private readonly statements = new Map<string, { statement: SqliteStatement; reader: boolean }>();
  private tail: Promise<unknown> = Promise.resolve();
  private readonly direct: Queryable = {
    all: async <T extends Row>(sql: string, params: readonly SqlValue[] = []) => this.allNow<T>(sql, params),
    run: async (sql: string, params: readonly SqlValue[] = []) => this.runNow(sql, params),
  };

  private constructor(
    path: string,
    /** Permissions the open took away from an existing store (empty for a private one). */
    readonly permissionChanges: readonly ModeChange[],
  ) {
    this.db = openSqlite(path);
    // WAL lets the create-key command write while a gateway serves; busy_timeout makes the two
    // wait for each other instead of failing with SQLITE_BUSY.
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('foreign_keys = ON');
  }

  /**
   * Opens `<dataDir>/gateway.sqlite3`, creating the directory (0700) and the file (0600) when
   * missing and taking group and other permissions off existing ones.
   */
  static open(dataDir: string): SqliteDatabase {
    const path = join(dataDir, SQLITE_FILE_NAME);
    const changes: ModeChange[] = [];
    privateDirectory(dataDir, changes);
    privateFile(path, changes);
    // SQLite gives a new -wal and -shm the database file's mode (its unix VFS copies it), so
    // only companions left by an older gateway can be wider.
    for (const suffix of WAL_COMPANIONS) privateIfPresent(path + suffix, changes);
    return new SqliteDatabase(path, changes);
  }

  all<T extends Row = Row>(sql: string, params: readonly SqlValue[] = []): Promise<T[]> {
    return this.exclusive(() => this.allNow<T>(sql, params));
  }

  run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    return this.exclusive(() => this.runNow(sql, params));
  }

  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      // IMMEDIATE takes the write lock at once, so another process cannot slip in between.
      this.db.exec('BEGIN IMMEDIATE');
      try {
        const result = await work(this.direct);
        this.db.exec('COMMIT');
        return result;
      } catch (err) {
        if (this.db.isTransaction) this.db.exec('ROLLBACK');
        throw err;
      }
    });
  }

  isUniqueViolation(error: unknown): boolean {
    const code = sqliteErrorCode(error);
    return code === SQLITE_CONSTRAINT_UNIQUE || code === SQLITE_CONSTRAINT_PRIMARYKEY;
  }

  async close(): Promise<void> {
    await this.exclusive(() => this.db.close());
  }

  private exclusive<T>(operation: () => T | Promise<T>): Promise<T> {
    const result = this.tail.then(operation);
    this.tail = result.catch(() => undefined);
    return result;
  }

  private statement(sql: string): { statement: SqliteStatement; reader: boolean } {
    let prepared = this.statements.get(sql);
    if (!prepared) {
      const statement = this.db.prepare(sql);
      // A statement that returns columns (a SELECT, or a RETURNING clause) is read, not run.
      prepared = { statement, reader: statement.columns().length > 0 };
      this.statements.set(sql, prepared);
    }
    return prepared;
  }

  private allNow<T extends Row>(sql: string, params: readonly SqlValue[]): T[] {
    return this.statement(sql).statement.all(...params) as T[];
  }

  private runNow(sql: string, params: readonly SqlValue[]): number {
    const { statement, reader } = this.statement(sql);
    if (reader) {
      statement.all(...params);
      return 0;
    }
    return Number(statement.run(...params).changes);
  }
}
