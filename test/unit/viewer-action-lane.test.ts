// The Actions lane's pure parts (docs/viewer.md "What it shows"): a control event's row and label,
// and the effects of an action found by data.caused_by.

import { describe, expect, it } from 'vitest';
import type { Envelope, TelemetryEvent } from '../../injected/schema.ts';
import { actionOf, effectsOf } from '../../viewer/action-lane.ts';

const event = (type: string, data: Record<string, unknown>, ts = 1): TelemetryEvent =>
  ({ ts, type, category: 'control', source: { kind: 'kernel_api' }, data }) as unknown as TelemetryEvent;

describe('the Actions lane', () => {
  it('labels cdp_command, api_call and computer_action rows, and a failed outcome', () => {
    expect(
      actionOf(1, event('cdp_command', { action_id: 'a1', method: 'Input.dispatchKeyEvent', event_type: 'keyDown', key: 'Enter', outcome: 'ok' })),
    ).toMatchObject({
      actionId: 'a1',
      label: 'Input.dispatchKeyEvent keyDown Enter',
    });
    expect(actionOf(2, event('api_call', { action_id: 'a2', operation_id: 'computerBatch', status: 200 }))!.label).toBe('API computerBatch → 200');
    expect(actionOf(3, event('computer_action', { action_id: 'a3', action: 'click_mouse', outcome: 'error' }))!.label).toBe('computer click_mouse (error)');
  });

  it('has no row for other events or a control event without action_id', () => {
    expect(actionOf(1, event('console_log', { action_id: 'a1' }))).toBeUndefined();
    expect(actionOf(1, event('cdp_command', { method: 'Page.navigate' }))).toBeUndefined();
  });

  it("finds an action's effects by caused_by, in seq order", () => {
    const envelopes: Envelope[] = [
      { seq: 1, event: event('cdp_command', { action_id: 'a1' }) },
      { seq: 2, event: event('page_navigation', { caused_by: 'a1' }) },
      { seq: 3, event: event('console_error', { caused_by: 'a2' }) },
      { seq: 4, event: event('network_request', { caused_by: 'a1' }) },
    ];
    expect(effectsOf(envelopes, 'a1').map((e) => e.seq)).toEqual([2, 4]);
    expect(effectsOf(envelopes, 'a9')).toEqual([]);
  });
});
