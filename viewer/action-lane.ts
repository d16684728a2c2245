// The timeline's Actions lane (docs/viewer.md "Actions"): what drove the browser (control events:
// cdp_command, api_call, computer_action) as marks; the selected action's effects (events whose
// data.caused_by is its action_id) drawn under it.

import type { Envelope, TelemetryEvent } from '../injected/schema.ts';

export const ACTION_TYPES: ReadonlySet<string> = new Set(['cdp_command', 'api_call', 'computer_action']);

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
  if (!ACTION_TYPES.has(event.type)) return undefined;
  const data = (event.data ?? {}) as {
    action_id?: string;
    target_id?: string;
    method?: string;
    event_type?: string;
    key?: string;
    outcome?: string;
    operation_id?: string;
    status?: number;
    action?: string;
  };
  if (typeof data.action_id !== 'string') return undefined;
  const what =
    event.type === 'cdp_command'
      ? [data.method, data.event_type, data.key].filter((part) => part !== undefined).join(' ')
      : event.type === 'api_call'
        ? `API ${data.operation_id ?? ''} → ${data.status ?? ''}`
        : `computer ${data.action ?? ''}`;
  const outcome = data.outcome === undefined || data.outcome === 'ok' ? '' : ` (${data.outcome})`;
  return { seq, ts: event.ts, targetId: data.target_id, actionId: data.action_id, label: `${what}${outcome}` };
}

/** The held events an action caused (data.caused_by equal to its action_id), in seq order. */
export function effectsOf(envelopes: readonly Envelope[], actionId: string): Envelope[] {
  return envelopes.filter((e) => (e.event.data as { caused_by?: unknown } | undefined)?.caused_by === actionId);
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
