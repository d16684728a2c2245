// The network_idle state machine (docs/events.md#computed-events) on fake timers.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { NetworkIdleMachine, type IdleTimers } from '../../src/telemetry/network-idle.ts';

const fakeTimers: IdleTimers = {
  set: (callback, ms) => setTimeout(callback, ms),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

function machine(navSeq = 1, timers: IdleTimers = fakeTimers) {
  const fired: number[] = [];
  const m = new NetworkIdleMachine({ navSeq, timers, onIdle: (n) => fired.push(n) });
  return { m, fired };
}

describe('NetworkIdleMachine', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('fires 500 ms after the last request of a load ends', () => {
    const { m, fired } = machine();
    m.requestStarted('doc');
    m.requestStarted('a');
    m.requestEnded('doc');
    m.requestEnded('a');
    vi.advanceTimersByTime(499);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([1]);
  });

  it('does not fire while any request is in flight', () => {
    const { m, fired } = machine();
    m.requestStarted('a');
    m.requestStarted('b');
    m.requestEnded('a');
    vi.advanceTimersByTime(5000);
    expect(fired).toEqual([]);
  });

  it('cancels the quiet timer when a new request starts', () => {
    const { m, fired } = machine();
    m.requestStarted('a');
    m.requestEnded('a');
    vi.advanceTimersByTime(400);
    m.requestStarted('b');
    vi.advanceTimersByTime(400);
    expect(fired).toEqual([]);
    m.requestEnded('b');
    vi.advanceTimersByTime(499);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([1]);
  });

  it('fires again after a later burst goes quiet', () => {
    const { m, fired } = machine();
    m.requestStarted('a');
    m.requestEnded('a');
    vi.advanceTimersByTime(500);
    m.requestStarted('xhr');
    m.requestEnded('xhr');
    vi.advanceTimersByTime(500);
    expect(fired).toEqual([1, 1]);
  });

  it('fires only once for one quiet period', () => {
    const { m, fired } = machine();
    m.requestStarted('a');
    m.requestEnded('a');
    vi.advanceTimersByTime(10_000);
    expect(fired).toEqual([1]);
  });

  it('ignores the end of a request it never saw start', () => {
    const { m, fired } = machine();
    m.requestEnded('unknown');
    vi.advanceTimersByTime(1000);
    expect(fired).toEqual([]);
  });

  it('counts a redirect hop (the same id started again) as one request', () => {
    const { m, fired } = machine();
    m.requestStarted('r');
    m.requestStarted('r');
    m.requestEnded('r');
    vi.advanceTimersByTime(500);
    expect(fired).toEqual([1]);
  });

  it('resets on navigation: a timer armed before it never fires', () => {
    const { m, fired } = machine();
    m.requestStarted('a');
    m.requestStarted('doc2');
    m.requestEnded('a');
    m.requestEnded('doc2');
    vi.advanceTimersByTime(300);
    m.requestStarted('doc3');
    m.reset(2, 'doc3');
    vi.advanceTimersByTime(5000);
    expect(fired).toEqual([]);
  });

  it("keeps the new document's request in flight across the navigation, so idle waits for the HTML", () => {
    const { m, fired } = machine();
    m.requestStarted('doc2');
    m.reset(2, 'doc2');
    vi.advanceTimersByTime(2000);
    expect(fired).toEqual([]);
    m.requestEnded('doc2');
    vi.advanceTimersByTime(500);
    expect(fired).toEqual([2]);
  });

  it('stops counting the requests the previous document left in flight', () => {
    const { m, fired } = machine();
    m.requestStarted('old-hanging');
    m.requestStarted('doc2');
    m.reset(2, 'doc2');
    m.requestEnded('doc2');
    vi.advanceTimersByTime(500);
    expect(fired).toEqual([2]);
  });

  it('arms at once on a navigation with nothing in flight (the document already arrived)', () => {
    const { m, fired } = machine();
    m.reset(2, 'doc2');
    vi.advanceTimersByTime(500);
    expect(fired).toEqual([2]);
  });

  it('ignores a stale timer of an earlier nav_seq even when its clear did not stop it', () => {
    const leaky: IdleTimers = { set: (callback, ms) => setTimeout(callback, ms), clear: () => undefined };
    const { m, fired } = machine(1, leaky);
    m.requestStarted('a');
    m.requestEnded('a');
    m.requestStarted('doc2');
    m.reset(2, 'doc2');
    vi.advanceTimersByTime(1000);
    expect(fired).toEqual([]);
  });

  it('ignores a stale timer of an earlier quiet period in the same nav_seq', () => {
    const leaky: IdleTimers = { set: (callback, ms) => setTimeout(callback, ms), clear: () => undefined };
    const { m, fired } = machine(1, leaky);
    m.requestStarted('a');
    m.requestEnded('a');
    vi.advanceTimersByTime(300);
    m.requestStarted('b');
    m.requestEnded('b');
    vi.advanceTimersByTime(200);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(300);
    expect(fired).toEqual([1]);
  });

  it('never fires after dispose', () => {
    const { m, fired } = machine();
    m.requestStarted('a');
    m.requestEnded('a');
    m.dispose();
    vi.advanceTimersByTime(1000);
    expect(fired).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
