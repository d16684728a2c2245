// get_events (docs/mcp.md "get_events"): a session's events, filtered, a page at a time under a
// byte budget. Each event is compacted (compact.ts); events are added while the answer stays
// within the budget, and the cursor continues at the first one left out, so paging with it reads
// every matching event exactly once. A text match is applied while reading, over at most
// SCAN_LIMIT events per call: a rare match in a long session answers with what it found so far
// and a cursor to search on.

import type { Envelope } from '../../injected/schema.ts';
import { contextOf } from '../event-data.ts';
import { compactEnvelope, Omissions, type CompactEvent, type CompactOptions, type IncludeGroup } from './compact.ts';
import { checkQuery, decodeCursor, encodeCursor, hasQueryArgs, TextMatch, type EventQuery, type QueryArgs } from './event-query.ts';
import { scanEvents, seqOf } from './scan.ts';
import { ToolError, type SessionSource, type TelemetrySource } from './source.ts';

export const EVENTS_DEFAULTS = { budgetBytes: 8192, limit: 100, maxString: 200 } as const;
export const EVENTS_BOUNDS = { budgetBytes: [1024, 65_536], limit: [1, 1000], maxString: [16, 8192] } as const;
/** Events a text query reads in one call, at most. */
export const SCAN_LIMIT = 20_000;
/** How far apart in time events may be admitted out of order (the store's own bound). */
const TS_SKEW_US = 10_000_000;
/** Bytes kept for the answer's fields after the events (has_more, cursor, omitted). */
const TAIL_RESERVE = 900;
/** A single event larger than the budget is sent alone with its strings cut to this. */
const LAST_RESORT_STRING = 64;

export interface EventsArgs extends QueryArgs {
  session_id?: string;
  cursor?: string;
  limit?: number;
  budget_bytes?: number;
  include?: readonly IncludeGroup[];
  max_string?: number;
}

export interface EventsAnswer {
  session_id: string;
  /** The target of every event here that has no target_id of its own (and has a target). */
  default_target_id?: string;
  events: CompactEvent[];
  has_more: boolean;
  next_cursor?: string;
  omitted?: Record<string, unknown>;
  /** What a text query searched in this call, when it stopped before filling the page. */
  searched?: string;
}

export async function getEvents(source: TelemetrySource, args: EventsArgs, nowMs = Date.now()): Promise<EventsAnswer> {
  let session: SessionSource;
  let query: EventQuery;
  let position: number | undefined;
  if (args.cursor !== undefined) {
    if (hasQueryArgs(args))
      throw new ToolError(
        'cursor: it carries the query of the call that returned it; pass cursor without filters, text, since, until or order (or start over without cursor)',
      );
    const decoded = decodeCursor(args.cursor);
    if (args.session_id !== undefined && args.session_id !== decoded.sessionId)
      throw new ToolError(`cursor: it belongs to session ${decoded.sessionId}, not ${args.session_id}`);
    session = await source.session(decoded.sessionId);
    query = decoded.query;
    position = decoded.position;
  } else {
    query = checkQuery(args, nowMs);
    session = await source.session(args.session_id);
  }
  const options: CompactOptions = { include: new Set(args.include ?? []), maxString: args.max_string ?? EVENTS_DEFAULTS.maxString };
  const budget = args.budget_bytes ?? EVENTS_DEFAULTS.budgetBytes;
  const limit = args.limit ?? EVENTS_DEFAULTS.limit;
  const page = await collect(session, query, position, { options, budget, limit });
  return finish(session.id, query, page, options, budget);
}

interface Collected {
  /** Each event's compact JSON and what compacting it left out. */
  items: Array<{ seq: number; json: string; omissions: Omissions }>;
  /** Where the next page starts; undefined when nothing more matched. */
  next: number | undefined;
  /** Set when a text query stopped at SCAN_LIMIT. */
  searched?: string;
}

async function collect(
  session: SessionSource,
  query: EventQuery,
  position: number | undefined,
  { options, budget, limit }: { options: CompactOptions; budget: number; limit: number },
): Promise<Collected> {
  const items: Collected['items'] = [];
  const match = query.text === undefined ? undefined : new TextMatch(query.text);
  // The window's start is the reader's for asc; a desc read applies it here (events are in seq
  // order, which is time order within TS_SKEW_US).
  const descSince = query.order === 'desc' ? query.sinceTs : undefined;
  let bytes = 0;
  let scanned = 0;
  const room = budget - TAIL_RESERVE;
  const batches = scanEvents(session, {
    filter: query.filter,
    filterQuery: query.lists,
    order: query.order,
    offset: position,
    sinceTs: query.order === 'asc' ? query.sinceTs : undefined,
    untilTs: query.untilTs,
    // A text query reads on past what it keeps: pages of 250 hold the event loop a few ms (bench section mcp).
    chunk: match ? 250 : Math.min(limit + 1, 100),
  });
  for await (const batch of batches) {
    for (const json of batch.items) {
      scanned++;
      let envelope: Envelope | undefined;
      if (match) {
        envelope = match.test(json);
        if (envelope === undefined) continue;
      } else {
        envelope = JSON.parse(json) as Envelope;
      }
      if (descSince !== undefined && envelope.event.ts < descSince) {
        if (envelope.event.ts < descSince - TS_SKEW_US) return { items, next: undefined };
        continue;
      }
      // The page's first target is its default: its events leave their target_id to the answer.
      const target = contextOf(envelope.event)?.target_id;
      if (options.defaultTarget === undefined && target !== undefined) options.defaultTarget = target;
      const omissions = new Omissions();
      let text = JSON.stringify(compactEnvelope(envelope, options, omissions));
      const size = Buffer.byteLength(text, 'utf8') + 1;
      if (items.length >= limit || (items.length > 0 && bytes + size > room)) return { items, next: envelope.seq };
      if (items.length === 0 && size > room) {
        // Progress before everything: the first event goes alone, cut as far as it takes.
        omissions.fields.clear();
        text = JSON.stringify(
          compactEnvelope(envelope, { include: new Set(), maxString: LAST_RESORT_STRING, defaultTarget: options.defaultTarget }, omissions),
        );
      }
      items.push({ seq: envelope.seq, json: text, omissions });
      bytes += size;
    }
    if (match && scanned >= SCAN_LIMIT && batch.hasMore) {
      const last = batch.items.length > 0 ? seqOf(batch.items[batch.items.length - 1]!) : batch.from;
      return {
        items,
        next: batch.nextOffset,
        searched: `${scanned} events read for the text match, up to seq ${last}; more may match: call again with next_cursor`,
      };
    }
    if (!batch.hasMore) return { items, next: undefined };
  }
  return { items, next: undefined };
}

function finish(sessionId: string, query: EventQuery, page: Collected, options: CompactOptions, budget: number): EventsAnswer {
  const { items } = page;
  let next = page.next;
  // The tail's real size is known only now: drop events from the end until the whole fits.
  for (;;) {
    const omissions = new Omissions();
    for (const item of items) omissions.merge(item.omissions);
    const answer: EventsAnswer = {
      session_id: sessionId,
      ...(options.defaultTarget !== undefined && { default_target_id: options.defaultTarget }),
      events: [],
      has_more: next !== undefined,
    };
    if (next !== undefined) answer.next_cursor = encodeCursor(sessionId, query, next);
    const omitted = omissions.describe(options);
    if (omitted !== undefined) answer.omitted = omitted;
    if (page.searched !== undefined && next === page.next) answer.searched = page.searched;
    const text = render(answer, items);
    if (Buffer.byteLength(text, 'utf8') <= budget || items.length <= 1) {
      answer.events = items.map((item) => JSON.parse(item.json) as CompactEvent);
      return answer;
    }
    next = items.pop()!.seq;
  }
}

/** The answer's JSON text with the events' own texts spliced in (what the tool sends). */
export function render(answer: EventsAnswer, items: ReadonlyArray<{ json: string }>): string {
  const text = JSON.stringify({ ...answer, events: [] });
  const at = text.indexOf('"events":[]') + '"events":['.length;
  return `${text.slice(0, at)}${items.map((item) => item.json).join(',')}${text.slice(at)}`;
}
