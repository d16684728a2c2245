// The hang probe's timing on a FakeConnection with fake timers: one timer for every active tab,
// nothing for idle tabs, unresponsive after the threshold and responsive at the late answer.
// Real Chromium hangs are in test/e2e/failure-signals.test.ts.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { EventName } from '../../src/browser/cdp-connection.ts';
import { AttachedTarget } from '../../src/browser/target-manager.ts';
import { Heartbeats } from '../../src/heartbeat.ts';
import { BrowserClock } from '../../src/telemetry/clock.ts';
import { EventContextTracker, type TargetState } from '../../src/telemetry/event-context.ts';
import type { FamilyHost, StateHandler } from '../../src/telemetry/family.ts';
import { HANG_ACTIVE_WINDOW_MS, HANG_PROBE_PERIOD_MS, HangFamily } from '../../src/telemetry/hang-family.ts';
import { FakeConnection } from './support/fake-connection.ts';

const THRESHOLD_MS = 5000;

function rig() {
  const fake = new FakeConnection();
  const tracker = new EventContextTracker();
  const events: Array<{ type: string; data: Record<string, unknown> }> = [];
  const host = {
    connection: fake.asConnection(),
    tracker,
    clock: new BrowserClock(),
    handle<E extends EventName>(event: E, handler: StateHandler<E>) {
      fake.on(event, (params, sessionId) => {
        const state = tracker.get(sessionId);
        if (state) handler(params, state);
      });
    },
    isOn: () => true,
    admits: () => true,
    emit: (type: string, _ts: number, data: Record<string, unknown>) => events.push({ type, data }),
  } as unknown as FamilyHost;
  const family = new HangFamily(
    THRESHOLD_MS,
    new Heartbeats((err) => {
      throw err;
    }),
  );
  family.start(host);
  const tab = (n: number): TargetState => {
    const info = { targetId: `T${n}`, type: 'page', url: 'http://a.test/', title: '', attached: true, canAccessOpener: false };
    const state = tracker.add(new AttachedTarget(fake.asConnection(), `S${n}`, `T${n}`, 'page', info, undefined, true));
    void family.setUpTarget(state);
    return state;
  };
  /** Probes sent so far, by session. */
  const probes = () => fake.sent.filter((c) => c.method === 'Runtime.evaluate').map((c) => c.sessionId);
  return { fake, family, events, tab, probes };
}

describe('HangFamily', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('probes every active tab on one timer and stops when they are quiet', async () => {
    const r = rig();
    r.tab(1);
    r.tab(2);
    r.tab(3);
    // One pending timer for the three tabs, not three.
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(HANG_PROBE_PERIOD_MS);
    expect(r.probes()).toEqual(['S1', 'S2', 'S3']);
    // Answered at once: still one timer (the next tick); no threshold timer is left behind.
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(HANG_ACTIVE_WINDOW_MS + 2 * HANG_PROBE_PERIOD_MS);
    const sent = r.probes().length;
    // About one probe per tab per second over the window, then none.
    expect(sent).toBeGreaterThanOrEqual(3 * (HANG_ACTIVE_WINDOW_MS / HANG_PROBE_PERIOD_MS));
    expect(sent).toBeLessThanOrEqual(3 * (HANG_ACTIVE_WINDOW_MS / HANG_PROBE_PERIOD_MS + 2));
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10 * HANG_PROBE_PERIOD_MS);
    expect(r.probes()).toHaveLength(sent);
    expect(r.events).toEqual([]);
    r.family.dispose();
  });

  it('wakes up for the tab that shows activity again, and only probes that tab', async () => {
    const r = rig();
    r.tab(1);
    r.tab(2);
    await vi.advanceTimersByTimeAsync(HANG_ACTIVE_WINDOW_MS + 3 * HANG_PROBE_PERIOD_MS);
    expect(vi.getTimerCount()).toBe(0);
    const before = r.probes().length;
    r.fake.emit('Runtime.consoleAPICalled', { type: 'log', args: [], executionContextId: 1, timestamp: 0 }, 'S2');
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(3 * HANG_PROBE_PERIOD_MS);
    expect(r.probes().slice(before)).toEqual(['S2', 'S2', 'S2']);
    r.family.dispose();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('reports a tab that does not answer within the threshold, and its late answer', async () => {
    const r = rig();
    let answer: (() => void) | undefined;
    r.fake.answers.set('Runtime.evaluate', (_p, sessionId) =>
      sessionId === 'S1' ? new Promise((resolve) => (answer = () => resolve({}))) : Promise.resolve({}),
    );
    r.tab(1);
    r.tab(2);
    await vi.advanceTimersByTimeAsync(HANG_PROBE_PERIOD_MS);
    await vi.advanceTimersByTimeAsync(THRESHOLD_MS - 1);
    expect(r.events).toEqual([]);
    // The hung tab is not probed again while its probe waits; the other tab still is.
    expect(r.probes().filter((s) => s === 'S1')).toHaveLength(1);
    expect(r.probes().filter((s) => s === 'S2').length).toBeGreaterThanOrEqual(THRESHOLD_MS / HANG_PROBE_PERIOD_MS - 1);
    await vi.advanceTimersByTimeAsync(1);
    expect(r.events.map((e) => e.type)).toEqual(['page_unresponsive']);
    expect(r.events[0]!.data).toMatchObject({ target_id: 'T1', threshold_ms: THRESHOLD_MS });
    await vi.advanceTimersByTimeAsync(2000);
    answer!();
    await vi.advanceTimersByTimeAsync(0);
    expect(r.events.map((e) => e.type)).toEqual(['page_unresponsive', 'page_responsive']);
    expect(r.events[1]!.data).toMatchObject({ target_id: 'T1', unresponsive_ms: THRESHOLD_MS + 2000 });
    // Probed again from the next tick.
    await vi.advanceTimersByTimeAsync(HANG_PROBE_PERIOD_MS);
    expect(r.probes().filter((s) => s === 'S1')).toHaveLength(2);
    r.family.dispose();
  });
});
