// The batch rules JSON schema cannot express (docs/computer-batch.md): key names, modifier names, a scroll that
// moves, and the total waiting one batch may ask for. Run on the raw body next to the schema
// check, so every problem of a batch is reported at once; anything of the wrong shape is left to
// the schema's own report.

import { assertNever } from '../assert-never.ts';
import { ACTION_KINDS, BATCH_LIMITS, DEFAULTS, type Action, type ActionKind } from './batch-schema.ts';
import { holdKey, parseCombo } from './keysyms.ts';
import { AUTO_MAX_MS, autoMotionMs, pathLength } from './motion.ts';

export interface BatchProblem {
  /** JSON path, e.g. `actions[2].press_key.keys[0]`. */
  field: string;
  message: string;
}

export function checkBatchRules(body: unknown): BatchProblem[] {
  const problems: BatchProblem[] = [];
  const actions = (body as { actions?: unknown } | null)?.actions;
  if (!Array.isArray(actions)) return problems;
  let totalWait = 0;
  actions.forEach((action: unknown, index) => {
    const kind = kindOf(action);
    if (!kind) return;
    const payload = (action as Record<string, unknown>)[kind];
    if (!isObject(payload)) return;
    const at = `actions[${index}].${kind}`;
    checkHoldKeys(payload.hold_keys, `${at}.hold_keys`, problems);
    if (kind === 'press_key' && Array.isArray(payload.keys)) {
      payload.keys.forEach((combo: unknown, i) => {
        if (typeof combo === 'string' && combo !== '' && !parseCombo(combo)) {
          problems.push({ field: `${at}.keys[${i}]`, message: `unknown key "${combo}": use X keysym names (Return, BackSpace, a, F5) or combos (ctrl+a)` });
        }
      });
    }
    if (kind === 'scroll' && isZeroOrAbsent(payload.delta_x) && isZeroOrAbsent(payload.delta_y)) {
      problems.push({ field: at, message: 'delta_x or delta_y must be non-zero' });
    }
    totalWait += requestedWaitMs({ type: kind, [kind]: payload } as unknown as Action);
  });
  if (totalWait > BATCH_LIMITS.maxTotalWaitMs) {
    problems.push({
      field: 'actions',
      message: `the batch asks for ${Math.round(totalWait)} ms of waiting (sleep, delays, hold and motion durations); at most ${BATCH_LIMITS.maxTotalWaitMs} ms`,
    });
  }
  return problems;
}

/**
 * The waiting an action asks for, in ms: what counts toward the batch's 60 s budget. Values of
 * the wrong type count as 0 (the schema reports them). A smooth move without a duration counts
 * at its longest automatic duration, since its start point is only known when it runs.
 */
export function requestedWaitMs(action: Action): number {
  const n = (value: unknown, fallback = 0) => (typeof value === 'number' && Number.isFinite(value) ? value : fallback);
  switch (action.type) {
    case 'sleep':
      return n(action.sleep.duration_ms);
    case 'type_text': {
      const chars = typeof action.type_text.text === 'string' ? Array.from(action.type_text.text).length : 0;
      return n(action.type_text.delay, DEFAULTS.typeDelayMs) * Math.max(0, chars - 1);
    }
    case 'press_key':
      return n(action.press_key.duration, DEFAULTS.keyHoldMs) * (Array.isArray(action.press_key.keys) ? action.press_key.keys.length : 0);
    case 'move_mouse':
      return action.move_mouse.smooth === true ? n(action.move_mouse.duration_ms, AUTO_MAX_MS) : 0;
    case 'drag_mouse': {
      const drag = action.drag_mouse;
      const path = Array.isArray(drag.path) ? drag.path.filter(isPoint) : [];
      const segments = Math.max(0, path.length - 1);
      const moving =
        drag.smooth === true
          ? n(drag.duration_ms, autoMotionMs(pathLength(path.map(([x, y]) => ({ x, y })))))
          : segments * n(drag.steps_per_segment, DEFAULTS.stepsPerSegment) * n(drag.step_delay_ms, DEFAULTS.stepDelayMs);
      return n(drag.delay, DEFAULTS.dragDelayMs) + moving;
    }
    case 'click_mouse':
    case 'scroll':
    case 'set_cursor':
      return 0;
    default:
      return assertNever(action);
  }
}

function checkHoldKeys(value: unknown, at: string, problems: BatchProblem[]): void {
  if (!Array.isArray(value)) return;
  value.forEach((name: unknown, i) => {
    if (typeof name === 'string' && name !== '' && !holdKey(name)) {
      problems.push({ field: `${at}[${i}]`, message: `"${name}" is not a modifier: use shift, ctrl, control, alt, meta or super` });
    }
  });
}

function kindOf(action: unknown): ActionKind | undefined {
  if (!isObject(action)) return undefined;
  const type = action.type;
  return typeof type === 'string' && (ACTION_KINDS as readonly string[]).includes(type) ? (type as ActionKind) : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isZeroOrAbsent(value: unknown): boolean {
  return value === undefined || value === 0;
}

function isPoint(value: unknown): value is [number, number] {
  return Array.isArray(value) && value.length === 2 && value.every((v) => typeof v === 'number' && Number.isFinite(v));
}
