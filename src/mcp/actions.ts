// The actions the tools' findings name (docs/events.md "caused_by"): looked up by action id, each
// described in a few words, so an answer says what the automation did to cause a finding.

import type { Envelope } from '../../injected/schema.ts';
import { isoTime } from './compact.ts';
import { ACTION_TYPES, describeAction } from './digest.ts';
import { filterOf } from './event-query.ts';
import { scanEvents } from './scan.ts';
import type { SessionSource } from './source.ts';

/** The actions with these ids, each in a few words with its time, outcome, tab and step (its id and name). */
export async function describeActions(session: SessionSource, ids: ReadonlySet<string>): Promise<Map<string, Record<string, unknown>>> {
  const described = new Map<string, Record<string, unknown>>();
  if (ids.size === 0) return described;
  const lists = { type: ACTION_TYPES as readonly string[], caused_by: [...ids] };
  const batches = scanEvents(session, { filter: filterOf(lists), filterQuery: lists, order: 'asc', chunk: 200 });
  for await (const batch of batches) {
    for (const json of batch.items) {
      const { seq, event } = JSON.parse(json) as Envelope;
      if (event.type !== 'cdp_command' && event.type !== 'api_call' && event.type !== 'computer_action') continue;
      const data = event.data;
      if (data === undefined || !ids.has(data.action_id)) continue;
      described.set(data.action_id, {
        seq,
        ts: isoTime(event.ts),
        action: describeAction(event),
        outcome: data.outcome,
        ...(data.error !== undefined && { error: data.error }),
        ...(data.target_id !== undefined && { target_id: data.target_id }),
        ...(data.step_id !== undefined && { step_id: data.step_id }),
      });
    }
    if (described.size === ids.size) break;
  }
  const names = await stepNames(session, new Set([...described.values()].flatMap((action) => (typeof action.step_id === 'string' ? [action.step_id] : []))));
  for (const action of described.values()) {
    const name = typeof action.step_id === 'string' ? names.get(action.step_id) : undefined;
    if (name !== undefined) action.step = name;
  }
  return described;
}

/** The names of these steps (docs/events.md "Steps"). */
async function stepNames(session: SessionSource, ids: ReadonlySet<string>): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  if (ids.size === 0) return names;
  const lists = { type: ['step'] as readonly string[], step_id: [...ids] };
  for await (const batch of scanEvents(session, { filter: filterOf(lists), filterQuery: lists, order: 'asc', chunk: 200 })) {
    for (const json of batch.items) {
      const { event } = JSON.parse(json) as Envelope;
      if (event.type !== 'step' || event.data === undefined) continue;
      if (ids.has(event.data.step_id)) names.set(event.data.step_id, event.data.name);
    }
    if (names.size === ids.size) break;
  }
  return names;
}
