// Which events a reader wants: the filters of the stream and of the history read
// (docs/events.md "Filters"). One parsed form for both, matched against the small per-event
// metadata the log keeps (no JSON parsing), and translated to SQL by the durable store.

import { EVENT_CATEGORY, EVENT_TYPE_CATEGORY, type EventCategory, type EventContext, type EventType, type TelemetryEvent } from '../../injected/schema.ts';
import { contextOf } from '../event-data.ts';
import { OPT_IN_TYPES, type EventFilter, type EventMeta } from './event-query.ts';

export type { BodyColumn, EventFilter, EventMeta } from './event-query.ts';
export { filterSql, OPT_IN_CATEGORIES, OPT_IN_TYPES } from './event-query.ts';

/** EventMeta.causedBy of an event (`context`: its contextOf, when the caller has it already). */
export function causeOf(event: TelemetryEvent, context: EventContext | undefined = contextOf(event)): string | undefined {
  switch (event.type) {
    // The cause side: the action itself.
    case 'cdp_command':
    case 'api_call':
    case 'computer_action':
      return event.data?.action_id;
    default:
      return context?.caused_by;
  }
}

/**
 * Categories a client may name: ours, plus those of the official client that this agent never
 * produces (`system`, `captcha`): accepted, and they match nothing.
 */
export const FILTER_CATEGORIES = [
  'console',
  'network',
  'page',
  'interaction',
  'snapshot',
  'monitor',
  'screenshot',
  'control',
  'connection',
  'system',
  'captcha',
] as const;
export type FilterCategory = (typeof FILTER_CATEGORIES)[number];

export const EVENT_TYPES = Object.keys(EVENT_CATEGORY) as EventType[];

/** The raw query values (each may be repeated or a comma list). */
export interface FilterQuery {
  category?: string | string[];
  type?: string | string[];
  target_id?: string | string[];
  nav_seq?: string | string[];
  caused_by?: string | string[];
  step_id?: string | string[];
}

/** A filter value that is not valid: the http layer answers 400 naming `field`. */
export class InvalidFilterError extends Error {
  override name = 'InvalidFilterError';
  readonly code = 'invalid_input';
  readonly status = 400;

  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

function listOf(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(',')).map((v) => v.trim());
}

/**
 * Parse the filter parameters; undefined when none is given (every event matches). Category and
 * type combine as a union ("console events, and network_loading_failed"); target_id and nav_seq
 * narrow that.
 */
export function parseFilter(query: FilterQuery): EventFilter | undefined {
  const categories = listOf(query.category);
  const typeNames = listOf(query.type);
  const targetIds = listOf(query.target_id);
  const navSeqTexts = listOf(query.nav_seq);
  const causes = listOf(query.caused_by);
  const steps = listOf(query.step_id);
  if (categories.length + typeNames.length + targetIds.length + navSeqTexts.length + causes.length + steps.length === 0) return undefined;

  const filter: { types?: Set<EventType>; targetIds?: Set<string>; navSeqs?: Set<number>; causedBy?: Set<string>; stepIds?: Set<string> } = {};
  if (causes.length > 0) {
    // Action ids are [a-z0-9-]: nothing in them is special to SQL LIKE (filterSql).
    if (causes.some((id) => !/^[A-Za-z0-9-]{1,64}$/.test(id)))
      throw new InvalidFilterError('caused_by', 'caused_by: expected action ids (1 to 64 of A-Z, a-z, 0-9, -)');
    filter.causedBy = new Set(causes);
  }
  if (steps.length > 0) {
    // Step ids are [a-z0-9-] too: nothing special to SQL LIKE or JSON (filterSql).
    if (steps.some((id) => !/^[A-Za-z0-9-]{1,64}$/.test(id)))
      throw new InvalidFilterError('step_id', 'step_id: expected step ids (1 to 64 of A-Z, a-z, 0-9, -)');
    filter.stepIds = new Set(steps);
  }
  if (categories.length > 0 || typeNames.length > 0) {
    const types = new Set<EventType>();
    for (const category of categories) {
      if (!(FILTER_CATEGORIES as readonly string[]).includes(category)) {
        throw new InvalidFilterError('category', `category: unknown category ${JSON.stringify(category)} (expected ${FILTER_CATEGORIES.join(', ')})`);
      }
      for (const type of EVENT_TYPES) if (EVENT_TYPE_CATEGORY[type] === (category as EventCategory)) types.add(type);
    }
    for (const name of typeNames) {
      if (!(EVENT_TYPES as string[]).includes(name)) throw new InvalidFilterError('type', `type: unknown event type ${JSON.stringify(name)}`);
      types.add(name as EventType);
    }
    filter.types = types;
  }
  if (targetIds.length > 0) {
    if (targetIds.some((id) => id === '' || id.length > 256)) throw new InvalidFilterError('target_id', 'target_id: expected 1 to 256 characters');
    filter.targetIds = new Set(targetIds);
  }
  if (navSeqTexts.length > 0) {
    const navSeqs = new Set<number>();
    for (const text of navSeqTexts) {
      if (!/^\d{1,15}$/.test(text)) throw new InvalidFilterError('nav_seq', `nav_seq: expected a non-negative integer, got ${JSON.stringify(text)}`);
      navSeqs.add(Number(text));
    }
    filter.navSeqs = navSeqs;
  }
  return filter;
}

/** Whether a reader with `filter` (undefined: none, the default) gets the event. */
export function matches(filter: EventFilter | undefined, meta: EventMeta): boolean {
  if (filter?.types === undefined) return !OPT_IN_TYPES.has(meta.type) && (filter === undefined || matchesRest(filter, meta));
  if (!filter.types.has(meta.type)) return false;
  return matchesRest(filter, meta);
}

function matchesRest(filter: EventFilter, meta: EventMeta): boolean {
  if (filter.targetIds !== undefined && (meta.targetId === undefined || !filter.targetIds.has(meta.targetId))) return false;
  if (filter.navSeqs !== undefined && (meta.navSeq === undefined || !filter.navSeqs.has(meta.navSeq))) return false;
  if (filter.causedBy !== undefined && (meta.causedBy === undefined || !filter.causedBy.has(meta.causedBy))) return false;
  if (filter.stepIds !== undefined && (meta.stepId === undefined || !filter.stepIds.has(meta.stepId))) return false;
  return true;
}
