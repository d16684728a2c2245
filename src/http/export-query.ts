// What the agent's and the gateway's reads share of their queries (docs/events.md "History",
// docs/export.md): `since`/`until` in Unix µs, and the window of an export (HAR, Playwright
// trace): its target and navigation filter and its time bounds, all checked before a byte goes
// out, so a bad query gets the JSON error body.

import { parseFilter, type EventFilter } from '../stream/event-filter.ts';
import { parseTimeBound } from '../stream/history.ts';
import { invalidInput } from './errors.ts';

/** `since`/`until` of the history and export reads in Unix µs; 400 naming the parameter when malformed. */
export function timeBound(name: 'since' | 'until', text: string | undefined, nowMs: number): number | undefined {
  if (text === undefined) return undefined;
  const value = parseTimeBound(text, nowMs);
  if (value === undefined)
    throw invalidInput(`${name}: expected an RFC 3339 time or a duration like 5m`, [
      { code: 'invalid_input', message: 'expected an RFC 3339 time or a duration like 5m', field: name },
    ]);
  return value;
}

/** `since` and `until` of the exports' query schemas. */
const EXPORT_TIME_BOUNDS = {
  since: { type: 'string', description: 'RFC 3339 time or a duration like 5m (that long ago); default: the oldest retained event' },
  until: { type: 'string', description: 'RFC 3339 time or a duration like 5m (that long ago); exclusive' },
} as const;

/**
 * The query schema of an export (GET /browsers/{id}/har and /trace, one `ExportQuery`): the same
 * parameters, each export saying what its target and navigation filters select.
 */
export function exportQuerySchema(selects: { targetId: string; navSeq: string }) {
  return {
    type: 'object',
    properties: {
      target_id: { type: 'array', items: { type: 'string' }, description: selects.targetId },
      nav_seq: { type: 'array', items: { type: 'string' }, description: selects.navSeq },
      ...EXPORT_TIME_BOUNDS,
    },
  } as const;
}

/** The query of GET /browsers/{id}/har and /trace. */
export interface ExportQuery {
  target_id?: string[];
  nav_seq?: string[];
  since?: string;
  until?: string;
}

/** What an export covers: its filter (targets, navigations) and time bounds (Unix µs, until exclusive). */
export interface ExportWindow {
  filter: EventFilter | undefined;
  sinceTs: number | undefined;
  untilTs: number | undefined;
}

/** The export's window from its query; 400 naming the field, as the history read does. */
export function exportWindow(query: ExportQuery, nowMs = Date.now()): ExportWindow {
  const filter = parseFilter({ target_id: query.target_id, nav_seq: query.nav_seq });
  return { filter, sinceTs: timeBound('since', query.since, nowMs), untilTs: timeBound('until', query.until, nowMs) };
}
