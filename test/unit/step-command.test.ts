// Telemetry.addStep's pure parts (docs/events.md "Steps"): which client messages are the proxy's own,
// and the answers it writes (a result, or a CDP error naming the problem), with the client's id and
// flattened session kept.

import { describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { answerStepCommand, MAX_STEP_MESSAGE_BYTES, stepCommandOf } from '../../src/cdp-proxy/step-command.ts';
import { CauseLinker } from '../../src/control/cause-linker.ts';
import { ControlRecorder } from '../../src/control/control-recorder.ts';
import { Steps } from '../../src/control/steps.ts';
import { BrowserClock } from '../../src/telemetry/clock.ts';
import { defaultTelemetryConfig } from '../../src/telemetry/telemetry-config.ts';

const message = (value: unknown) => Buffer.from(JSON.stringify(value));
const CALLER = { id: 'conn-1', via: 'cdp', connectionId: 'conn-1' } as const;

function steps(): { steps: Steps; events: TelemetryEvent[] } {
  const events: TelemetryEvent[] = [];
  const config = defaultTelemetryConfig();
  const recorder = new ControlRecorder({ append: (e) => events.push(e) }, new BrowserClock(), () => config, new CauseLinker());
  return { steps: new Steps(recorder), events };
}

describe('Telemetry.addStep', () => {
  it('is recognised with its id, params and flattened session', () => {
    expect(stepCommandOf(message({ id: 4, method: 'Telemetry.addStep', params: { name: 'a' }, sessionId: 'S1' }))).toEqual({
      id: 4,
      params: { name: 'a' },
      sessionId: 'S1',
    });
  });

  it('leaves every other message alone, one that only mentions the method included', () => {
    expect(stepCommandOf(message({ id: 1, method: 'Page.navigate', params: { url: 'https://x/' } }))).toBeUndefined();
    expect(stepCommandOf(message({ id: 2, method: 'Runtime.evaluate', params: { expression: '"Telemetry.addStep"' } }))).toBeUndefined();
    expect(stepCommandOf(Buffer.from('{"id":3,"method":"Telemetry.addStep"'))).toBeUndefined();
  });

  it('refuses an over-long one from its head, unparsed, with payload_too_large', () => {
    const big = message({ id: 9, method: 'Telemetry.addStep', params: { name: 'a', data: { s: 'x'.repeat(MAX_STEP_MESSAGE_BYTES) } }, sessionId: 'S2' });
    const command = stepCommandOf(big)!;
    expect(command).toEqual({ id: 9, sessionId: 'S2', params: undefined, tooLarge: true });
    const { steps: s, events } = steps();
    expect(JSON.parse(answerStepCommand(command, s, CALLER))).toEqual({
      id: 9,
      error: { code: -32602, message: expect.stringContaining('over 262144 bytes'), data: 'payload_too_large' },
      sessionId: 'S2',
    });
    expect(events).toHaveLength(0);
  });

  it('relays an over-long message that only holds the name as a value', () => {
    const big = message({ id: 10, method: 'Runtime.evaluate', params: { label: 'Telemetry.addStep', expression: 'x'.repeat(MAX_STEP_MESSAGE_BYTES) } });
    expect(stepCommandOf(big)).toBeUndefined();
  });

  it('answers the step id on the same id and session', () => {
    const { steps: s, events } = steps();
    const answer = JSON.parse(answerStepCommand({ id: 7, sessionId: 'S1', params: { name: 'log in' } }, s, CALLER)) as Record<string, any>;
    expect(answer).toEqual({ id: 7, result: { step_id: expect.stringMatching(/^step-/), recorded: true }, sessionId: 'S1' });
    expect(events[0]!.data).toMatchObject({ name: 'log in', via: 'cdp', connection_id: 'conn-1', step_id: answer.result.step_id });
  });

  it('answers a CDP error that names the problem and carries the error code', () => {
    const { steps: s, events } = steps();
    const answer = JSON.parse(answerStepCommand({ id: 8, sessionId: undefined, params: { name: 'x'.repeat(201) } }, s, CALLER)) as Record<string, any>;
    expect(answer).toEqual({
      id: 8,
      error: { code: -32602, message: 'Telemetry.addStep: name: at most 200 characters (got 201)', data: 'invalid_input' },
    });
    expect(events).toHaveLength(0);
  });

  it('answers over the rate with a server error saying rate_limited', () => {
    const { steps: s } = steps();
    let answer: Record<string, any> = {};
    for (let i = 0; i < 30; i++)
      answer = JSON.parse(answerStepCommand({ id: i, sessionId: undefined, params: { name: `s${i}` } }, s, CALLER)) as Record<string, any>;
    expect(answer.error).toMatchObject({ code: -32000, data: 'rate_limited' });
  });

  it('answers a command without an integer id as Chromium does', () => {
    const { steps: s } = steps();
    expect(JSON.parse(answerStepCommand({ id: 'x', sessionId: undefined, params: { name: 'a' } }, s, CALLER))).toEqual({
      error: { code: -32600, message: "Message must have integer 'id' property" },
    });
  });
});
