// The Steps lane's pure parts (docs/viewer.md "What it shows"): a step event's row, the spans (a step
// lasts until its caller's next step that is not nested in it), and the step under a time.

import { describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { stepAt, stepOf, stepSpans, type StepRow } from '../../viewer/step-lane.ts';

const event = (type: string, data: Record<string, unknown>, ts = 1): TelemetryEvent =>
  ({ ts, type, category: 'control', source: { kind: 'kernel_api' }, data }) as unknown as TelemetryEvent;

const row = (seq: number, ts: number, stepId: string, caller: string, parentId?: string): StepRow =>
  stepOf(seq, event('step', { name: stepId, caller, via: 'cdp', ...(parentId ? { parent_id: parentId } : {}), step_id: stepId }, ts))!;

describe('the Steps lane', () => {
  it('has a row for a step event and none for anything else', () => {
    expect(stepOf(3, event('step', { name: 'log in', caller: 'token:1', via: 'http', step_id: 's1' }, 9))).toEqual({
      seq: 3,
      ts: 9,
      targetId: undefined,
      stepId: 's1',
      name: 'log in',
      parentId: undefined,
      caller: 'token:1',
      via: 'http',
    });
    expect(stepOf(1, event('cdp_command', { step_id: 's1' }))).toBeUndefined();
  });

  it("ends each caller's step at its next step that is not nested in it, nests children, and leaves the last open", () => {
    const spans = stepSpans([row(1, 10, 'a', 'c1'), row(2, 20, 'a1', 'c1', 'a'), row(3, 25, 'x', 'c2'), row(4, 30, 'b', 'c1')]);
    expect(spans.map((s) => [s.stepId, s.endTs, s.depth])).toEqual([
      ['a', 30, 0],
      ['a1', 30, 1],
      ['x', undefined, 0],
      ['b', undefined, 0],
    ]);
  });

  it('finds the innermost step under a time', () => {
    const spans = stepSpans([row(1, 10, 'a', 'c1'), row(2, 20, 'a1', 'c1', 'a'), row(3, 30, 'b', 'c1')]);
    expect(stepAt(spans, 15, 100)?.stepId).toBe('a');
    expect(stepAt(spans, 22, 100)?.stepId).toBe('a1');
    expect(stepAt(spans, 90, 100)?.stepId).toBe('b');
    expect(stepAt(spans, 5, 100)).toBeUndefined();
  });
});
