// The timeline's Actions lane (docs/viewer.md "Actions"): what drove the browser (control events:
// cdp_command, api_call, computer_action) as marks; the selected action's effects (events whose
// data.caused_by is its action_id) drawn under it.

import type { ControlData, Envelope, TelemetryEvent } from '../injected/schema.ts';
import { contextOf } from '../src/event-data.ts';

export interface ActionRow {
  seq: number;
  /** Unix µs. */
  ts: number;
  targetId: string | undefined;
  actionId: string;
  label: string;
}

/** The lane's row of a control event, or undefined for any other event. */
export function actionOf(seq: number, event: TelemetryEvent): ActionRow | undefined {
  if (event.data === undefined) return undefined;
  switch (event.type) {
    case 'cdp_command': {
      const { method, event_type, key } = event.data;
      return rowOf(seq, event.ts, event.data, [method, event_type, key].filter((part) => part !== undefined).join(' '));
    }
    case 'api_call':
      return rowOf(seq, event.ts, event.data, `API ${event.data.operation_id ?? ''} → ${event.data.status ?? ''}`);
    case 'computer_action':
      return rowOf(seq, event.ts, event.data, `computer ${event.data.action ?? ''}`);
    default:
      return undefined;
  }
}

function rowOf(seq: number, ts: number, data: ControlData, what: string): ActionRow | undefined {
  // Read off the wire: a client's event may lack what the types promise.
  if (typeof data.action_id !== 'string') return undefined;
  const outcome = data.outcome === undefined || data.outcome === 'ok' ? '' : ` (${data.outcome})`;
  return { seq, ts, targetId: data.target_id, actionId: data.action_id, label: `${what}${outcome}` };
}

/** The held events an action caused (data.caused_by equal to its action_id), in seq order. */
export function effectsOf(envelopes: readonly Envelope[], actionId: string): Envelope[] {
  return envelopes.filter((e) => contextOf(e.event)?.caused_by === actionId);
}

export interface ActionColors {
  action: string;
  selected: string;
}

export function drawActionLane(
  ctx: CanvasRenderingContext2D,
  actions: readonly ActionRow[],
  effects: readonly Envelope[],
  selected: string | undefined,
  x: (ts: number) => number,
  lane: { top: number; height: number; start: number; end: number },
  colors: ActionColors,
): void {
  const { top, height } = lane;
  for (const action of actions) {
    if (action.ts < lane.start || action.ts > lane.end) continue;
    const isSelected = action.actionId === selected;
    ctx.fillStyle = isSelected ? colors.selected : colors.action;
    ctx.fillRect(x(action.ts) - (isSelected ? 2 : 1), top + 3, isSelected ? 5 : 3, height / 2 - 3);
  }
  // The selected action's effects: small ticks in the lane's lower half.
  ctx.fillStyle = colors.selected;
  for (const effect of effects) {
    const ts = effect.event.ts;
    if (ts < lane.start || ts > lane.end) continue;
    ctx.fillRect(x(ts) - 1, top + height / 2 + 1, 2, height / 2 - 4);
  }
}
