// PostgreSQL through pg: for several gateway instances sharing one state. Transactions run
// concurrently here; the store locks the rows it decides on (`lockSuffix`), and unique indexes
// settle races between inserts.

import pg from 'pg';
import type { Database, Queryable, Row, SqlValue } from './database.ts';

/** int8 (COUNT, BIGINT columns) arrives as a string by default; every value here fits a double. */
const INT8_OID = 20;
/** json arrives parsed by default; the archive wants the text it stored (the agent's bytes). */
const JSON_OID = 114;
const asText = (value: string) => value;
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    // eslint-disable-next-line @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-enum-assignment -- pg's own parser for the oid pg gives, typed as pg types it
    oid === INT8_OID ? (value: string) => Number(value) : oid === JSON_OID ? asText : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** `?` placeholders → `$1, $2, ...` (the store's SQL never has a literal question mark). */
function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

function queryable(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    async all<T extends Row>(sql: string, params: readonly SqlValue[] = []) {
      return (await client.query(numbered(sql), params as SqlValue[])).rows as T[];
    },
    async run(sql: string, params: readonly SqlValue[] = []) {
      return (await client.query(numbered(sql), params as SqlValue[])).rowCount ?? 0;
    },
  };
}

export class PostgresDatabase implements Database {
  readonly dialect = 'postgres' as const;
  readonly lockSuffix = ' FOR UPDATE';
  private readonly pool: pg.Pool;
  private readonly direct: Queryable;

  constructor(connectionString: string, onIdleError: (err: Error) => void = () => undefined) {
    this.pool = new pg.Pool({ connectionString, types, max: 10, connectionTimeoutMillis: 10_000 });
    // A pooled idle connection that dies (server restart) must not crash the process.
    this.pool.on('error', onIdleError);
    this.direct = queryable(this.pool);
  }

  all<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return this.direct.all<T>(sql, params);
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.direct.run(sql, params);
  }

  async transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await work(queryable(client));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackError) {
        broken = rollbackError as Error;
      }
      throw err;
    } finally {
      // A client whose rollback failed is in an unknown state: drop it instead of reusing it.
      client.release(broken);
    }
  }

  isUniqueViolation(error: unknown): boolean {
    return (error as { code?: unknown } | null)?.code === '23505';
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
