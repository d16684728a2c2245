import { describe, expect, it } from 'vitest';
import { AttachedTarget } from '../../src/browser/target-manager.ts';
import { EventContextTracker } from '../../src/telemetry/event-context.ts';
import { FakeConnection } from './support/fake-connection.ts';

function pageState(sessionId: string, targetId: string) {
  const info = { targetId, type: 'page', url: '', title: '', attached: true, canAccessOpener: false };
  const target = new AttachedTarget(new FakeConnection().asConnection(), sessionId, targetId, 'page', info, undefined, true);
  return new EventContextTracker().add(target);
}

describe('TargetState.sourceOf', () => {
  it("is the event's CDP source: method and the target's metadata", () => {
    expect(pageState('S1', 'T1').sourceOf('Runtime.consoleAPICalled')).toEqual({
      kind: 'cdp',
      event: 'Runtime.consoleAPICalled',
      metadata: { cdp_session_id: 'S1', target_id: 'T1', target_type: 'page' },
    });
  });

  it('hands every event of one target and method the same frozen object (the log serializes it once)', () => {
    const state = pageState('S1', 'T1');
    const source = state.sourceOf('Runtime.consoleAPICalled');
    expect([state.sourceOf('Runtime.consoleAPICalled') === source, Object.isFrozen(source), Object.isFrozen(source.metadata)]).toEqual([true, true, true]);
    expect(state.sourceOf('Runtime.exceptionThrown')).not.toBe(source);
    expect(pageState('S2', 'T2').sourceOf('Runtime.consoleAPICalled').metadata).toEqual({ cdp_session_id: 'S2', target_id: 'T2', target_type: 'page' });
  });
});
