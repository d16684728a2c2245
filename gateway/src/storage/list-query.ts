// The list reads (GET /projects, /api-keys, /browsers), written once: a WHERE clause built from
// the optional filters of a list, and one page of its rows, read with one row more than asked
// to know whether more follow.

import type { Queryable, Row, SqlValue } from './database.ts';

/** One page of a list, and whether more follow. */
export interface Page<T> {
  items: T[];
  hasMore: boolean;
}

export interface PageRequest {
  limit: number;
  offset: number;
}

/** The conditions of a WHERE clause (joined by AND) and the values of their `?`, in order. */
export class Conditions {
  private readonly conditions: string[];
  readonly params: SqlValue[] = [];

  /** `always`: the conditions every row of the list meets. */
  constructor(...always: string[]) {
    this.conditions = always;
  }

  /** Adds `condition`, which has no `?`, when `on` holds. */
  when(on: boolean, condition: string): this {
    if (on) this.conditions.push(condition);
    return this;
  }

  /** Adds `condition`, whose one `?` is `value`, when a value is given (a filter left out is undefined). */
  bind(condition: string, value: SqlValue | undefined): this {
    if (value !== undefined) {
      this.conditions.push(condition);
      this.params.push(value);
    }
    return this;
  }

  /** ` WHERE …`, or nothing when there is no condition. */
  get clause(): string {
    return this.conditions.length > 0 ? ` WHERE ${this.conditions.join(' AND ')}` : '';
  }
}

/**
 * `page.limit` rows of `sql` (a SELECT ending in its ORDER BY, whose `?` are `params`) after
 * `page.offset`, each converted.
 */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- R is the row type db.all reads, inferred from convert
export async function readPage<R extends Row, T>(
  db: Queryable,
  sql: string,
  params: readonly SqlValue[],
  page: PageRequest,
  convert: (row: R) => T,
): Promise<Page<T>> {
  const rows = await db.all<R>(`${sql} LIMIT ? OFFSET ?`, [...params, page.limit + 1, page.offset]);
  return { items: rows.slice(0, page.limit).map(convert), hasMore: rows.length > page.limit };
}
