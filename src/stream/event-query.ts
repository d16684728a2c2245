// What an event is filtered by (docs/events.md "Filters"): the small per-event metadata kept
// beside each envelope, the parsed filter, and its SQL form over the store's columns. event-filter.ts
// parses and matches filters; the durable store (the layer above) and the gateway's archive turn
// them into SQL with filterSql.

import type { EventType } from '../../injected/schema.ts';

/** What the log keeps of every event besides its frame, for filters and the store's columns. */
export interface EventMeta {
  ts: number;
  type: EventType;
  targetId: string | undefined;
  navSeq: number | undefined;
  /** The action the event is or was caused by (data.action_id, else data.caused_by). */
  causedBy?: string;
  /** The step the event is, or belongs to (data.step_id, docs/events.md "Steps"). */
  stepId?: string;
}

/** A parsed filter: each set present narrows; types is a union of the named types and categories. */
export interface EventFilter {
  /** Event types any of which matches (categories are expanded into their types). */
  types?: ReadonlySet<EventType>;
  targetIds?: ReadonlySet<string>;
  navSeqs?: ReadonlySet<number>;
  /** Action ids: the action's own event and the events it caused (docs/events.md "caused_by"). */
  causedBy?: ReadonlySet<string>;
  /** Step ids: the step's own event, its caller's actions and what they caused (docs/events.md "Steps"). */
  stepIds?: ReadonlySet<string>;
}

/**
 * Where the filters that have no column look: the column holding each event's JSON text, and
 * whether that text is the whole envelope (`{"seq":…,"event":{…}}`, the agent's store) or the
 * event alone (the gateway's archive).
 */
export interface BodyColumn {
  column: string;
  envelope: boolean;
}

const STORE_BODY: BodyColumn = { column: 'envelope', envelope: true };

/**
 * The filter, and a time window in Unix µs (since inclusive, until exclusive), as SQL conditions
 * over the columns `ts`, `type`, `target_id` and `nav_seq` and the event's JSON text (`body`), with
 * `?` placeholders, and their values in order: the agent's store and the gateway's archive both use it.
 */
export function filterSql(
  filter: EventFilter | undefined,
  sinceTs?: number,
  untilTs?: number,
  body: BodyColumn = STORE_BODY,
): { clauses: string[]; params: Array<string | number> } {
  const bodyColumn = body.column;
  const clauses: string[] = [];
  const params: Array<string | number> = [];
  if (sinceTs !== undefined) {
    clauses.push('ts >= ?');
    params.push(sinceTs);
  }
  if (untilTs !== undefined) {
    clauses.push('ts < ?');
    params.push(untilTs);
  }
  if (!filter) return { clauses, params };
  const oneOf = (column: string, values: ReadonlySet<string | number>) => {
    if (values.size === 0) {
      clauses.push('1 = 0');
      return;
    }
    clauses.push(`${column} IN (${[...values].map(() => '?').join(', ')})`);
    params.push(...values);
  };
  if (filter.types !== undefined) oneOf('type', filter.types);
  if (filter.targetIds !== undefined) oneOf('target_id', filter.targetIds);
  if (filter.navSeqs !== undefined) oneOf('nav_seq', filter.navSeqs);
  if (filter.causedBy !== undefined) {
    // No column: matched in the stored JSON text of the event (`bodyColumn`).
    const ors: string[] = [];
    for (const id of filter.causedBy) {
      ors.push(`${bodyColumn} LIKE ?`, `${bodyColumn} LIKE ?`);
      params.push(`%"action_id":"${id}"%`, `%"caused_by":"${id}"%`);
    }
    clauses.push(`(${ors.join(' OR ')})`);
  }
  if (filter.stepIds !== undefined) {
    // No column either. `step_id` is the last field of `data` wherever it is set (the step, the
    // recorder's actions, the cause linker's effects), and `data` is followed only by `truncated`:
    // matched at the end of the text, so a `step_id` key inside a step's own `data` object (or a
    // header of that name) never matches.
    const close = body.envelope ? '}}}' : '}}';
    const truncatedClose = body.envelope ? '},"truncated":true}}' : '},"truncated":true}';
    const ors: string[] = [];
    for (const id of filter.stepIds) {
      ors.push(`${bodyColumn} LIKE ?`, `${bodyColumn} LIKE ?`);
      params.push(`%"step_id":"${id}"${close}`, `%"step_id":"${id}"${truncatedClose}`);
    }
    clauses.push(`(${ors.join(' OR ')})`);
  }
  return { clauses, params };
}
