// The Actions lane's pure parts (docs/viewer.md "What it shows"): a control event's row and label,
// and the effects of an action found by data.caused_by.

import { describe, expect, it } from 'vitest';
import { EVENT_TYPE_CATEGORY, type Envelope, type EventDataByType, type EventType, type TelemetryEvent } from '../../injected/schema.ts';
import { eventOf } from '../../src/event-data.ts';
import { actionOf, effectsOf } from '../../viewer/action-lane.ts';

const event = <T extends EventType>(type: T, data: EventDataByType[T], ts = 1): TelemetryEvent =>
  eventOf<T>({ ts, type, category: EVENT_TYPE_CATEGORY[type], source: { kind: 'kernel_api' }, data });
const command = (actionId: string) =>
  event('cdp_command', { action_id: actionId, connection_id: 'c1', method: 'Page.navigate', duration_ms: 1, outcome: 'ok' });
/** An event as a client reads it off the wire, where it may lack what the types promise. */
const offTheWire = (json: string) => JSON.parse(json) as TelemetryEvent;

describe('the Actions lane', () => {
  it('labels cdp_command, api_call and computer_action rows, and a failed outcome', () => {
    expect(
      actionOf(
        1,
        event('cdp_command', {
          action_id: 'a1',
          connection_id: 'c1',
          method: 'Input.dispatchKeyEvent',
          event_type: 'keyDown',
          key: 'Enter',
          duration_ms: 1,
          outcome: 'ok',
        }),
      ),
    ).toMatchObject({
      actionId: 'a1',
      label: 'Input.dispatchKeyEvent keyDown Enter',
    });
    const apiCall = event('api_call', { action_id: 'a2', operation_id: 'computerBatch', request_id: 'r2', status: 200, duration_ms: 1, outcome: 'ok' });
    expect(actionOf(2, apiCall)!.label).toBe('API computerBatch → 200');
    const action = event('computer_action', { action_id: 'a3', action: 'click_mouse', index: 0, request_id: 'r2', duration_ms: 1, outcome: 'error' });
    expect(actionOf(3, action)!.label).toBe('computer click_mouse (error)');
  });

  it('has no row for other events or a control event without action_id', () => {
    expect(actionOf(1, event('console_log', { level: 'log', text: 'a1', args: ['a1'] }))).toBeUndefined();
    expect(actionOf(1, offTheWire('{"ts":1,"type":"cdp_command","source":{"kind":"kernel_api"},"data":{"method":"Page.navigate"}}'))).toBeUndefined();
  });

  it("finds an action's effects by caused_by, in seq order", () => {
    const envelopes: Envelope[] = [
      { seq: 1, event: command('a1') },
      { seq: 2, event: event('page_navigation', { url: 'http://x/', frame_id: 'F', loader_id: 'L', caused_by: 'a1' }) },
      { seq: 3, event: event('console_error', { text: 'boom', caused_by: 'a2' }) },
      {
        seq: 4,
        event: event('network_request', { request_id: 'r', method: 'GET', document_url: 'http://x/', headers: {}, initiator_type: 'other', caused_by: 'a1' }),
      },
    ];
    expect(effectsOf(envelopes, 'a1').map((e) => e.seq)).toEqual([2, 4]);
    expect(effectsOf(envelopes, 'a9')).toEqual([]);
  });
});
