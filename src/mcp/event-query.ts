// The query of get_events (and of what the other tools read): filters, a text match, a time
// window and an order, checked into the stream's own filter (docs/events.md "Filters"); and the
// cursor that carries a query and its position from one page to the next (docs/mcp.md
// "get_events").

import type { Envelope } from '../../injected/schema.ts';
import { InvalidFilterError, parseFilter, type EventFilter, type FilterQuery } from '../stream/event-filter.ts';
import { parseTimeBound } from '../stream/history.ts';
import { ToolError } from './source.ts';

/** The filter lists a caller may give (the HTTP query's names). */
export const FILTER_LISTS = ['category', 'type', 'target_id', 'nav_seq', 'caused_by', 'step_id'] as const;
export type FilterList = (typeof FILTER_LISTS)[number];

export interface QueryArgs {
  category?: readonly string[];
  type?: readonly string[];
  target_id?: readonly string[];
  nav_seq?: readonly number[];
  caused_by?: readonly string[];
  step_id?: readonly string[];
  text?: string;
  since?: string;
  until?: string;
  order?: 'asc' | 'desc';
}

/** A query, checked: what a cursor carries. */
export interface EventQuery {
  lists: Partial<Record<FilterList, string[]>>;
  filter: EventFilter | undefined;
  /** Lower-cased. */
  text: string | undefined;
  /** Unix µs; since inclusive, until exclusive. */
  sinceTs: number | undefined;
  untilTs: number | undefined;
  order: 'asc' | 'desc';
}

/** The query of a tool's arguments; ToolError naming the argument when one is wrong. */
export function checkQuery(args: QueryArgs, nowMs: number): EventQuery {
  const lists: Partial<Record<FilterList, string[]>> = {};
  for (const name of FILTER_LISTS) {
    const values = args[name];
    if (values !== undefined && values.length > 0) lists[name] = values.map(String);
  }
  const text = args.text?.trim().toLowerCase();
  if (args.text !== undefined && text === '') throw new ToolError('text: must not be empty');
  return {
    lists,
    filter: filterOf(lists),
    text: text === '' ? undefined : text,
    sinceTs: timeOf('since', args.since, nowMs),
    untilTs: timeOf('until', args.until, nowMs),
    order: args.order ?? 'asc',
  };
}

/** The stream's filter of the lists (the same checks and messages as the HTTP API). */
export function filterOf(lists: Partial<Record<FilterList, readonly string[]>>): EventFilter | undefined {
  try {
    return parseFilter(lists as FilterQuery);
  } catch (err) {
    if (err instanceof InvalidFilterError) throw new ToolError(err.message);
    throw err;
  }
}

function timeOf(name: 'since' | 'until', text: string | undefined, nowMs: number): number | undefined {
  if (text === undefined) return undefined;
  const value = parseTimeBound(text.trim(), nowMs);
  if (value === undefined) throw new ToolError(`${name}: expected an RFC 3339 time (2026-01-31T12:00:00Z) or a duration like 90s, 5m, 2h (that long ago)`);
  return value;
}

/** Whether any of the query's arguments (not the cursor, session or output options) was given. */
export function hasQueryArgs(args: QueryArgs): boolean {
  return (
    FILTER_LISTS.some((name) => args[name] !== undefined) ||
    args.text !== undefined ||
    args.since !== undefined ||
    args.until !== undefined ||
    args.order !== undefined
  );
}

// ---- text match --------------------------------------------------------------------------------

/**
 * Whether an event matches a text query: a case-insensitive substring of one of its data's string
 * values (images aside). The JSON text is tested first when that is exact enough to rule an event
 * out, so most events are never parsed.
 */
export class TextMatch {
  private readonly verbatim: boolean;

  constructor(private readonly needle: string) {
    // A needle JSON.stringify writes as it is (no quote, backslash, control character or lone
    // surrogate) appears verbatim in the JSON text of every event that holds it.
    this.verbatim = JSON.stringify(needle) === `"${needle}"`;
  }

  /** The envelope, parsed, when it matches; undefined otherwise. */
  test(envelopeJson: string): Envelope | undefined {
    if (this.verbatim && !envelopeJson.toLowerCase().includes(this.needle)) return undefined;
    const envelope = JSON.parse(envelopeJson) as Envelope;
    return this.inValue(envelope.event.data, 0) ? envelope : undefined;
  }

  private inValue(value: unknown, depth: number): boolean {
    if (typeof value === 'string') return value.toLowerCase().includes(this.needle);
    if (depth > 8 || typeof value !== 'object' || value === null) return false;
    if (Array.isArray(value)) return value.some((item) => this.inValue(item, depth + 1));
    for (const [key, item] of Object.entries(value)) if (key !== 'png' && this.inValue(item, depth + 1)) return true;
    return false;
  }
}

// ---- cursor ------------------------------------------------------------------------------------

interface CursorState {
  v: 1;
  /** The session. */
  s: string;
  /** The offset to continue from. */
  p: number;
  /** The query: lists, text, since, until, order. */
  l: Partial<Record<FilterList, string[]>>;
  t?: string;
  a?: number;
  b?: number;
  o: 'asc' | 'desc';
}

/** The cursor of the page after this one: opaque to the caller, the query and position inside. */
export function encodeCursor(sessionId: string, query: EventQuery, position: number): string {
  const state: CursorState = { v: 1, s: sessionId, p: position, l: query.lists, o: query.order };
  if (query.text !== undefined) state.t = query.text;
  if (query.sinceTs !== undefined) state.a = query.sinceTs;
  if (query.untilTs !== undefined) state.b = query.untilTs;
  return Buffer.from(JSON.stringify(state), 'utf8').toString('base64url');
}

const CURSOR_ERROR = 'cursor: not a cursor of get_events (pass next_cursor exactly as a previous answer gave it)';

/** The session, query and position a cursor carries; ToolError when it is not one. */
export function decodeCursor(cursor: string): { sessionId: string; query: EventQuery; position: number } {
  let state: Partial<CursorState>;
  try {
    state = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Partial<CursorState>;
  } catch {
    throw new ToolError(CURSOR_ERROR);
  }
  if (
    typeof state !== 'object' ||
    state === null ||
    state.v !== 1 ||
    typeof state.s !== 'string' ||
    !Number.isSafeInteger(state.p) ||
    (state.o !== 'asc' && state.o !== 'desc') ||
    typeof state.l !== 'object' ||
    state.l === null ||
    (state.t !== undefined && typeof state.t !== 'string') ||
    (state.a !== undefined && !Number.isSafeInteger(state.a)) ||
    (state.b !== undefined && !Number.isSafeInteger(state.b))
  )
    throw new ToolError(CURSOR_ERROR);
  const lists: Partial<Record<FilterList, string[]>> = {};
  for (const [name, values] of Object.entries(state.l as Record<string, unknown>)) {
    if (!(FILTER_LISTS as readonly string[]).includes(name) || !Array.isArray(values) || values.some((v) => typeof v !== 'string'))
      throw new ToolError(CURSOR_ERROR);
    lists[name as FilterList] = values as string[];
  }
  return {
    sessionId: state.s,
    position: state.p as number,
    query: { lists, filter: filterOf(lists), text: state.t, sinceTs: state.a, untilTs: state.b, order: state.o },
  };
}
