// Steps' pure parts (docs/events.md "Steps"): the input's checks and limits, the step event's shape,
// a caller's current step, the rate limit per caller, and how actions and their effects carry the
// step (the recorder and the cause linker).

import { describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { CauseLinker } from '../../src/control/cause-linker.ts';
import { eventOf } from '../../src/event-data.ts';
import { ControlRecorder } from '../../src/control/control-recorder.ts';
import { checkStepInput, STEP_LIMITS, StepError, Steps } from '../../src/control/steps.ts';
import { BrowserClock } from '../../src/telemetry/clock.ts';
import { defaultTelemetryConfig, mergeTelemetryConfig, type TelemetryConfig } from '../../src/telemetry/telemetry-config.ts';

function rig(config: TelemetryConfig = defaultTelemetryConfig()) {
  const events: TelemetryEvent[] = [];
  const linker = new CauseLinker();
  const sink = {
    append(event: TelemetryEvent) {
      linker.link(event);
      events.push(event);
      return events.length;
    },
  };
  const recorder = new ControlRecorder(sink, new BrowserClock(), () => config, linker);
  let nowMs = 0;
  const steps = new Steps(recorder, () => nowMs);
  return { events, recorder, linker, steps, advance: (ms: number) => (nowMs += ms) };
}

const API = { id: 'token:1', via: 'http' } as const;

function refusal(run: () => unknown): StepError {
  try {
    run();
  } catch (err) {
    if (err instanceof StepError) return err;
    throw err;
  }
  throw new Error('not refused');
}

describe('a step input', () => {
  it('takes a name of 200 characters, emoji counted as one each', () => {
    expect(checkStepInput({ name: 'x'.repeat(200) }).name).toHaveLength(200);
    expect(checkStepInput({ name: '😀'.repeat(200) }).name).toHaveLength(400);
  });

  it('refuses a name of 201 characters with invalid_input naming name', () => {
    const error = refusal(() => checkStepInput({ name: 'x'.repeat(201) }));
    expect([error.status, error.code, error.field]).toEqual([400, 'invalid_input', 'name']);
    expect(error.message).toContain('at most 200 characters');
  });

  it('refuses a missing, non-string or blank name', () => {
    for (const input of [{}, { name: 3 }, { name: '  ' }]) expect(refusal(() => checkStepInput(input)).field).toBe('name');
  });

  it('takes data of exactly 16 KB of JSON and refuses one byte more with payload_too_large naming data', () => {
    const fill = (bytes: number) => ({ s: 'x'.repeat(bytes - '{"s":""}'.length) });
    expect(checkStepInput({ name: 'n', data: fill(STEP_LIMITS.maxDataBytes) }).data).toBeDefined();
    const error = refusal(() => checkStepInput({ name: 'n', data: fill(STEP_LIMITS.maxDataBytes + 1) }));
    expect([error.status, error.code, error.field]).toEqual([413, 'payload_too_large', 'data']);
  });

  it('counts data in UTF-8 bytes', () => {
    const error = refusal(() => checkStepInput({ name: 'n', data: { s: 'é'.repeat(8200) } }));
    expect(error.code).toBe('payload_too_large');
  });

  it('refuses data that is not an object, a bad parent_id, an unknown field and a body that is not an object', () => {
    expect(refusal(() => checkStepInput({ name: 'n', data: [1] })).field).toBe('data');
    expect(refusal(() => checkStepInput({ name: 'n', data: null })).field).toBe('data');
    expect(refusal(() => checkStepInput({ name: 'n', parent_id: 'a b' })).field).toBe('parent_id');
    expect(refusal(() => checkStepInput({ name: 'n', parent_id: 7 })).field).toBe('parent_id');
    expect(refusal(() => checkStepInput({ name: 'n', nmae: 'x' } as never)).field).toBe('nmae');
    expect(refusal(() => checkStepInput('log in' as never)).code).toBe('invalid_input');
  });
});

describe('Steps', () => {
  it('records a step event in control with its caller, and step_id as the last field', () => {
    const { steps, events } = rig();
    const { step_id: stepId, recorded } = steps.add({ name: 'log in', data: { user: 'ada' } }, { id: 'conn-1', via: 'cdp', connectionId: 'conn-1' });
    expect(recorded).toBe(true);
    expect(stepId).toMatch(/^step-[a-z0-9]+$/);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'step', source: { kind: 'kernel_api', event: 'Telemetry.addStep' } });
    expect(events[0]!.data).toEqual({ name: 'log in', data: { user: 'ada' }, via: 'cdp', caller: 'conn-1', connection_id: 'conn-1', step_id: stepId });
    expect(Object.keys(events[0]!.data!).at(-1)).toBe('step_id');
  });

  it("makes the step its caller's current one, and only its caller's", () => {
    const { steps } = rig();
    const first = steps.add({ name: 'one' }, API).step_id;
    expect(steps.currentOf('token:1')).toBe(first);
    expect(steps.currentOf('token:2')).toBeUndefined();
    const second = steps.add({ name: 'two' }, API).step_id;
    expect(steps.currentOf('token:1')).toBe(second);
    steps.forget('token:1');
    expect(steps.currentOf('token:1')).toBeUndefined();
  });

  it('takes a parent marked earlier, by any caller, and refuses an unknown one naming parent_id', () => {
    const { steps, events } = rig();
    const parent = steps.add({ name: 'checkout' }, API).step_id;
    steps.add({ name: 'pay', parent_id: parent }, { id: 'conn-9', via: 'cdp' });
    expect(events[1]!.data).toMatchObject({ parent_id: parent });
    const error = refusal(() => steps.add({ name: 'pay', parent_id: 'step-unknown' }, API));
    expect([error.code, error.field]).toEqual(['invalid_input', 'parent_id']);
  });

  it('limits each caller to its burst, then its rate, without touching other callers', () => {
    const { steps, events, advance } = rig();
    for (let i = 0; i < STEP_LIMITS.burst; i++) steps.add({ name: `s${i}` }, API);
    const error = refusal(() => steps.add({ name: 'one too many' }, API));
    expect([error.status, error.code]).toEqual([429, 'rate_limited']);
    expect(steps.add({ name: 'another caller' }, { id: 'token:2', via: 'http' }).recorded).toBe(true);
    advance(1000 / STEP_LIMITS.perSecond);
    expect(steps.add({ name: 'after a tenth of a second' }, API).recorded).toBe(true);
    expect(events).toHaveLength(STEP_LIMITS.burst + 2);
  });

  it('does not count a refused input against the rate', () => {
    const { steps } = rig();
    for (let i = 0; i < STEP_LIMITS.burst + 5; i++) refusal(() => steps.add({ name: '' }, API));
    expect(steps.add({ name: 'fine' }, API).recorded).toBe(true);
  });

  it('answers recorded: false and writes nothing with control off, and still moves the current step', () => {
    const { steps, events } = rig(mergeTelemetryConfig(defaultTelemetryConfig(), { browser: { control: { enabled: false } } }));
    const added = steps.add({ name: 'quiet' }, API);
    expect(added.recorded).toBe(false);
    expect(events).toHaveLength(0);
    expect(steps.currentOf('token:1')).toBe(added.step_id);
  });
});

describe('step_id on actions and effects', () => {
  it("puts the caller's step last on its action, and on what the action caused", () => {
    const { recorder, events } = rig();
    const start = recorder.begin('T', true, 'step-1')!;
    const effect: TelemetryEvent = {
      ts: 1,
      type: 'console_log',
      source: { kind: 'cdp' },
      data: { target_id: 'T', nav_seq: 0, level: 'log', text: 'x', args: [] },
    };
    recorder.linker.link(effect);
    recorder.cdpCommand(start, { method: 'Page.navigate', connection_id: 'conn-1', outcome: 'ok' });
    const action = events.at(-1)!;
    expect(action.data).toMatchObject({ action_id: start.actionId, step_id: 'step-1' });
    expect(Object.keys(action.data!).at(-1)).toBe('step_id');
    expect(effect.data).toMatchObject({ caused_by: start.actionId, step_id: 'step-1' });
    expect(Object.keys(effect.data!).at(-1)).toBe('step_id');
  });

  it('keeps the step on a response whose request began under it, after a later action of another step', () => {
    const { recorder } = rig();
    recorder.begin('T', true, 'step-1');
    const request: TelemetryEvent = eventOf({
      ts: 1,
      type: 'network_request',
      source: { kind: 'cdp' },
      data: { target_id: 'T', request_id: 'r1', method: 'GET', document_url: '', headers: {}, initiator_type: 'other' },
    });
    recorder.linker.link(request);
    recorder.begin('T', true, 'step-2');
    const response: TelemetryEvent = eventOf({
      ts: 2,
      type: 'network_response',
      source: { kind: 'cdp' },
      data: { target_id: 'T', request_id: 'r1', status: 200, status_text: 'OK', headers: {}, mime_type: 'text/plain' },
    });
    recorder.linker.link(response);
    expect(response.data).toMatchObject({ step_id: 'step-1' });
  });

  it('stamps no step on an action without one, nor on its effects', () => {
    const { recorder, events } = rig();
    const start = recorder.begin('T', true)!;
    const effect: TelemetryEvent = { ts: 1, type: 'console_log', source: { kind: 'cdp' }, data: { target_id: 'T', level: 'log', text: 'x', args: [] } };
    recorder.linker.link(effect);
    recorder.cdpCommand(start, { method: 'Page.navigate', connection_id: 'conn-1', outcome: 'ok' });
    expect(events.at(-1)!.data).not.toHaveProperty('step_id');
    expect(effect.data).not.toHaveProperty('step_id');
  });

  it("gives a batch's computer actions the step of its request until its api_call is recorded", () => {
    const { recorder, events } = rig();
    const call = recorder.beginRequest('req-1', 'T', 'step-7')!;
    expect(recorder.stepOfRequest('req-1')).toBe('step-7');
    recorder.apiCall(call, { operation_id: 'computerBatch', request_id: 'req-1', status: 204, outcome: 'ok' });
    expect(events.at(-1)!.data).toMatchObject({ operation_id: 'computerBatch', step_id: 'step-7' });
    expect(recorder.stepOfRequest('req-1')).toBeUndefined();
  });

  it('never stamps the step event itself as an effect', () => {
    const { recorder, steps, events } = rig();
    recorder.begin('T', true, 'step-0');
    steps.add({ name: 'next' }, API);
    expect(events.at(-1)!.data).not.toHaveProperty('caused_by');
  });
});
