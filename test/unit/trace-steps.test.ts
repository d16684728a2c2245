// Steps in the Playwright trace (docs/export.md "Mapping"): a step is a group action as the test
// runner writes `test.step` (class Test), its caller's actions nested under it, its child steps
// under it by parent_id; it ends at its caller's next step that is not nested in it.

import { describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { TraceBuilder } from '../../src/export/trace.ts';

const T0 = 1_800_000_000_000_000;
const TAB = { target_id: 'TAB1', target_type: 'page', frame_id: 'TAB1' };

function event(type: string, dtMs: number, data: Record<string, unknown>): TelemetryEvent {
  return { ts: T0 + dtMs * 1000, type, source: { kind: 'kernel_api' }, data } as unknown as TelemetryEvent;
}

function run(events: TelemetryEvent[]): Array<Record<string, any>> {
  const builder = new TraceBuilder();
  let out = '';
  for (const e of events) out += builder.add(e);
  out += builder.end(T0 + 60_000_000);
  return out
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, any>);
}

const step = (dtMs: number, stepId: string, name: string, extra: Record<string, unknown> = {}) =>
  event('step', dtMs, { name, via: 'cdp', caller: 'conn-1', ...extra, step_id: stepId });
const command = (dtMs: number, actionId: string, stepId: string | undefined) =>
  event('cdp_command', dtMs, { action_id: actionId, method: 'Page.navigate', duration_ms: 5, outcome: 'ok', ...TAB, ...(stepId ? { step_id: stepId } : {}) });

describe('steps in the trace', () => {
  const lines = run([
    step(0, 's1', 'log in', { data: { user: 'ada' } }),
    command(10, 'a1', 's1'),
    step(20, 's1a', 'fill the form', { parent_id: 's1' }),
    command(30, 'a2', 's1a'),
    step(40, 's2', 'check out'),
    command(50, 'a3', 's2'),
    step(55, 'x1', 'elsewhere', { caller: 'token:1', via: 'http' }),
    command(60, 'a4', undefined),
  ]);
  const before = (title: string) => lines.find((l) => l.type === 'before' && l.title === title)!;
  const after = (callId: string) => lines.find((l) => l.type === 'after' && l.callId === callId)!;
  const commandOf = (time: number) => lines.find((l) => l.type === 'before' && l.class === 'CDP' && l.startTime === (T0 + time * 1000) / 1000)!;

  it('writes a step as a test.step group titled with its name, its data as parameters', () => {
    expect(before('log in')).toMatchObject({ class: 'Test', method: 'test.step', params: { user: 'ada' } });
    expect(before('log in').parentId).toBeUndefined();
  });

  it("nests the caller's actions under the step they carry, and leaves an action without a step at the top", () => {
    expect(commandOf(10).parentId).toBe(before('log in').callId);
    expect(commandOf(30).parentId).toBe(before('fill the form').callId);
    expect(commandOf(50).parentId).toBe(before('check out').callId);
    expect(commandOf(60).parentId).toBeUndefined();
  });

  it('nests a child step under its parent by parent_id', () => {
    expect(before('fill the form').parentId).toBe(before('log in').callId);
  });

  it("ends a step and its children at its caller's next step that is not nested in it", () => {
    const at = (ms: number) => (T0 + ms * 1000) / 1000;
    expect(after(before('fill the form').callId).endTime).toBe(at(40));
    expect(after(before('log in').callId).endTime).toBe(at(40));
  });

  it("ends a step of another caller only at the trace's end, and the last step too", () => {
    const end = (T0 + 60_000_000) / 1000;
    expect(after(before('check out').callId).endTime).toBe(end);
    expect(after(before('elsewhere').callId).endTime).toBe(end);
  });
});
