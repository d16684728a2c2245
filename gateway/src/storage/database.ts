// The one narrow interface the gateway's store talks to, with an adapter per backend (sqlite.ts,
// postgres.ts). SQL is written once, with `?` placeholders; the adapters translate what the
// dialects spell differently (placeholders, row locks, error codes).

/** Bytes bind as a BLOB (SQLite) or bytea (PostgreSQL): the archived replays' chunks. */
export type SqlScalar = string | number | null | Uint8Array;
/** Arrays bind only on PostgreSQL (as its arrays, for `unnest`): the archive's batched inserts. */
export type SqlValue = SqlScalar | readonly SqlScalar[];
export type Row = Record<string, unknown>;

export interface Queryable {
  /** Every row of a query. */
  all<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  /** A statement without rows; resolves to the number of rows it changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
}

export type Dialect = 'sqlite' | 'postgres';

export interface Database extends Queryable {
  readonly dialect: Dialect;
  /**
   * Runs `work` in one transaction: committed when it resolves, rolled back when it throws.
   * Inside, use only `tx`. SQLite serialises every transaction (one writer); PostgreSQL runs
   * them concurrently, so shared rows are locked with `lockSuffix`.
   */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Appended to a SELECT to lock its rows until the transaction ends (`FOR UPDATE` or nothing). */
  readonly lockSuffix: string;
  /** Whether `error` is a violation of a UNIQUE constraint or index. */
  isUniqueViolation(error: unknown): boolean;
  close(): Promise<void>;
}
