// Offset paging of list endpoints (docs/gateway.md): `limit` 1..100 (default 20) and `offset` 0..2^53-1
// in the query; `X-Has-More` and `X-Next-Offset` (absolute start of the next page, 0 when there
// is none, which the official SDK's pager treats as the end) in the response.

import type { FastifyReply } from 'fastify';
import type { Page, PageRequest } from '../storage/store.ts';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
/**
 * The largest integer a JSON number (and X-Next-Offset) holds exactly. Without a bound the
 * query's digits become an inexact double that the stores refuse as a 500 (SQLite:
 * SQLITE_MISMATCH, PostgreSQL: bigint out of range); with it they are a 400 like any bad value.
 */
export const MAX_OFFSET = Number.MAX_SAFE_INTEGER;

export const pagingQueryProperties = {
  limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
  offset: { type: 'integer', minimum: 0, maximum: MAX_OFFSET, default: 0 },
} as const;

/** The list filters every listing shares: a case-insensitive substring and an exact name. */
export const nameFilterProperties = {
  query: { type: 'string', maxLength: 255 },
  name: { type: 'string', maxLength: 255 },
} as const;

/** A listing's query as validated by `pagingQueryProperties` and `nameFilterProperties`. */
export interface NameFilterPageQuery {
  limit: number;
  offset: number;
  query?: string;
  name?: string;
}

/** `{id}` of a single resource. */
export const idParams = { type: 'object', properties: { id: { type: 'string', minLength: 1 } }, required: ['id'] } as const;

export function sendPage<T, V>(reply: FastifyReply, request: PageRequest, page: Page<T>, view: (item: T) => V): V[] {
  reply.header('X-Has-More', page.hasMore ? 'true' : 'false');
  reply.header('X-Next-Offset', String(page.hasMore ? request.offset + page.items.length : 0));
  return page.items.map(view);
}
