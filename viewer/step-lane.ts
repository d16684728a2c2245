// The timeline's Steps lane (docs/viewer.md "What it shows"): the automation's own story (`step`
// events, docs/events.md "Steps") as named spans. A step lasts until its caller's next step that is
// not nested in it (as in the Playwright trace); a nested step is drawn lower and thinner, under
// its parent.

import type { TelemetryEvent } from '../injected/schema.ts';

export interface StepRow {
  seq: number;
  /** Unix µs. */
  ts: number;
  /** Steps belong to no target. */
  targetId: undefined;
  stepId: string;
  name: string;
  parentId: string | undefined;
  caller: string;
  via: string;
}

/** A step with where it ends (undefined: still going) and how deep it is nested. */
export interface StepSpan extends StepRow {
  endTs: number | undefined;
  depth: number;
}

/** The lane's row of a `step` event, or undefined for any other event. */
export function stepOf(seq: number, event: TelemetryEvent): StepRow | undefined {
  if (event.type !== 'step') return undefined;
  const data = (event.data ?? {}) as { step_id?: unknown; name?: unknown; parent_id?: unknown; caller?: unknown; via?: unknown };
  if (typeof data.step_id !== 'string') return undefined;
  return {
    seq,
    ts: event.ts,
    targetId: undefined,
    stepId: data.step_id,
    name: typeof data.name === 'string' ? data.name : '',
    parentId: typeof data.parent_id === 'string' ? data.parent_id : undefined,
    caller: typeof data.caller === 'string' ? data.caller : '',
    via: typeof data.via === 'string' ? data.via : '',
  };
}

/** The steps (in seq order) as spans: each caller's step ends where its next step that is not nested in it begins. */
export function stepSpans(steps: readonly StepRow[]): StepSpan[] {
  const spans: StepSpan[] = [];
  const open = new Map<string, StepSpan[]>();
  for (const step of steps) {
    let stack = open.get(step.caller);
    if (stack === undefined) {
      stack = [];
      open.set(step.caller, stack);
    }
    const keep = step.parentId === undefined ? 0 : stack.findIndex((s) => s.stepId === step.parentId) + 1;
    for (const ended of stack.splice(keep)) ended.endTs = step.ts;
    const span: StepSpan = { ...step, endTs: undefined, depth: stack.length };
    stack.push(span);
    spans.push(span);
  }
  return spans;
}

/** The innermost span under `ts` (open spans run to `nowTs`, the live edge). */
export function stepAt(spans: readonly StepSpan[], ts: number, nowTs: number): StepSpan | undefined {
  let found: StepSpan | undefined;
  for (const span of spans) if (span.ts <= ts && ts <= (span.endTs ?? nowTs) && (found === undefined || span.depth >= found.depth)) found = span;
  return found;
}

export interface StepColors {
  step: string;
  text: string;
}

export function drawStepLane(
  ctx: CanvasRenderingContext2D,
  spans: readonly StepSpan[],
  x: (ts: number) => number,
  lane: { top: number; height: number; start: number; end: number; now: number },
  colors: StepColors,
): void {
  const { top, height } = lane;
  for (const span of spans) {
    const end = span.endTs ?? lane.now;
    if (end < lane.start || span.ts > lane.end) continue;
    const depth = Math.min(span.depth, 2);
    const x0 = x(span.ts);
    const x1 = Math.max(x0 + 2, x(end));
    const barTop = top + 3 + depth * 5;
    const barHeight = Math.max(3, height - 6 - depth * 5);
    ctx.globalAlpha = 0.25;
    ctx.fillStyle = colors.step;
    ctx.fillRect(x0, barTop, x1 - x0, barHeight);
    ctx.globalAlpha = 1;
    // Where it begins: a solid edge, and its name while there is room for it.
    ctx.fillRect(x0, barTop, 2, barHeight);
    if (x1 - x0 > 24) {
      ctx.fillStyle = colors.text;
      ctx.textAlign = 'left';
      ctx.fillText(span.name, x0 + 5, barTop + barHeight / 2, x1 - x0 - 8);
    }
  }
}
