import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TelemetryRig } from './support/telemetry-rig.ts';

const SHIFT = JSON.stringify({ type: 'page_layout_shift', time: 10, value: 0.1, had_recent_input: false });

describe('settle machines per tab', () => {
  let rig: TelemetryRig;

  beforeEach(() => {
    vi.useFakeTimers();
    rig = new TelemetryRig();
  });
  afterEach(() => {
    rig.dispose();
    vi.useRealTimers();
  });

  const settledTypes = () => rig.events.filter((e) => e.type.endsWith('_settled')).map((e) => `${e.type}@${(e.data as { target_id?: string }).target_id}`);

  /** A page target navigated to its first document, with a context of the page script's world. */
  function openTab(sessionId: string, targetId: string): void {
    rig.attach(sessionId, targetId, 'page');
    rig.navigate(sessionId, targetId, `L-${targetId}`, `http://a.test/${targetId}`);
    addScriptContext(sessionId, targetId, 1);
  }

  function addScriptContext(sessionId: string, frameId: string, id: number): void {
    const world = (rig.connection.sent.find((c) => c.method === 'Runtime.addBinding' && c.sessionId === sessionId)!.params as { executionContextName: string })
      .executionContextName;
    const context = { id, name: world, origin: '', uniqueId: `u${id}`, auxData: { frameId, isDefault: false, type: 'isolated' } };
    rig.connection.emit('Runtime.executionContextCreated', { context }, sessionId);
  }

  function shift(sessionId: string, contextId = 1): void {
    const name = (rig.connection.sent.find((c) => c.method === 'Runtime.addBinding')!.params as { name: string }).name;
    rig.connection.emit('Runtime.bindingCalled', { name, payload: SHIFT, executionContextId: contextId }, sessionId);
  }

  const dcl = (sessionId: string) => rig.connection.emit('Page.domContentEventFired', { timestamp: 1 }, sessionId);
  const load = (sessionId: string) => rig.connection.emit('Page.loadEventFired', { timestamp: 2 }, sessionId);

  it('emits page_layout_settled 1 s after load, then page_navigation_settled, with the tab context', () => {
    openTab('S1', 'T1');
    dcl('S1');
    load('S1');
    vi.advanceTimersByTime(999);
    expect(settledTypes()).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(settledTypes()).toEqual(['page_layout_settled@T1', 'page_navigation_settled@T1']);
    expect(rig.ofType('page_navigation_settled')[0]!.data).toEqual({
      session_id: 'S1',
      target_id: 'T1',
      target_type: 'page',
      frame_id: 'T1',
      loader_id: 'L-T1',
      url: 'http://a.test/T1',
      nav_seq: 1,
    });
    expect(rig.ofType('page_layout_settled')[0]!.source).toEqual({ kind: 'agent' });
  });

  it('re-arms on a layout shift reported after load', () => {
    openTab('S1', 'T1');
    dcl('S1');
    load('S1');
    vi.advanceTimersByTime(900);
    shift('S1');
    vi.advanceTimersByTime(900);
    expect(settledTypes()).toEqual([]);
    vi.advanceTimersByTime(100);
    expect(settledTypes()).toEqual(['page_layout_settled@T1', 'page_navigation_settled@T1']);
  });

  it('re-arms on a layout shift of an out-of-process iframe of the tab', () => {
    openTab('S1', 'T1');
    const tab = rig.telemetry.tracker.get('S1')!.target;
    rig.attach('S2', 'F1', 'iframe', tab);
    addScriptContext('S2', 'F1', 7);
    dcl('S1');
    load('S1');
    vi.advanceTimersByTime(900);
    shift('S2', 7);
    vi.advanceTimersByTime(900);
    expect(settledTypes()).toEqual([]);
    vi.advanceTimersByTime(100);
    expect(settledTypes()).toEqual(['page_layout_settled@T1', 'page_navigation_settled@T1']);
  });

  it("does not arm the tab on an out-of-process iframe's own load", () => {
    openTab('S1', 'T1');
    rig.attach('S2', 'F1', 'iframe', rig.telemetry.tracker.get('S1')!.target);
    dcl('S2');
    load('S2');
    vi.advanceTimersByTime(5000);
    expect(settledTypes()).toEqual([]);
  });

  it('keeps the machines of two tabs apart', () => {
    openTab('S1', 'T1');
    openTab('S2', 'T2');
    dcl('S1');
    load('S1');
    vi.advanceTimersByTime(500);
    dcl('S2');
    load('S2');
    vi.advanceTimersByTime(500);
    expect(settledTypes()).toEqual(['page_layout_settled@T1', 'page_navigation_settled@T1']);
    vi.advanceTimersByTime(500);
    expect(settledTypes()).toEqual(['page_layout_settled@T1', 'page_navigation_settled@T1', 'page_layout_settled@T2', 'page_navigation_settled@T2']);
  });

  it('drops the pending settle when the tab navigates, and settles the new navigation on its own load', () => {
    openTab('S1', 'T1');
    dcl('S1');
    load('S1');
    vi.advanceTimersByTime(500);
    rig.navigate('S1', 'T1', 'L2', 'http://a.test/next');
    vi.advanceTimersByTime(5000);
    expect(settledTypes()).toEqual([]);
    dcl('S1');
    load('S1');
    vi.advanceTimersByTime(1000);
    expect(rig.ofType('page_navigation_settled').map((e) => (e.data as { nav_seq: number }).nav_seq)).toEqual([2]);
  });

  it('does not reset on a child frame navigation', () => {
    openTab('S1', 'T1');
    dcl('S1');
    load('S1');
    vi.advanceTimersByTime(500);
    rig.navigate('S1', 'C1', 'LC', 'http://a.test/child', 'T1');
    vi.advanceTimersByTime(500);
    expect(settledTypes()).toEqual(['page_layout_settled@T1', 'page_navigation_settled@T1']);
  });

  it('emits nothing when the page category is off', () => {
    rig.dispose();
    rig = new TelemetryRig({ browser: { page: { enabled: false } } });
    rig.attach('S1', 'T1', 'page');
    rig.navigate('S1', 'T1', 'L1', 'http://a.test/');
    dcl('S1');
    load('S1');
    vi.advanceTimersByTime(5000);
    expect(rig.events.filter((e) => e.type.startsWith('page_'))).toEqual([]);
  });
});
