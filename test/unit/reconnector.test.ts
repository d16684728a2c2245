import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { backoffDelay, Reconnector } from '../../src/browser/reconnector.ts';

describe('backoffDelay', () => {
  it('doubles from 250 ms and caps at 5 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 20].map((n) => backoffDelay(n))).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
  });
});

describe('Reconnector', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  function rig(outcomes: Array<'fail' | 'ok'>) {
    const calls: number[] = [];
    const events: string[] = [];
    let clock = 0;
    const reconnector = new Reconnector(
      async () => {
        calls.push(Date.now());
        const outcome = outcomes.shift() ?? 'fail';
        if (outcome === 'fail') throw new Error('refused');
      },
      {
        reconnected: (ms) => events.push(`reconnected ${ms}`),
        exhausted: (n) => events.push(`exhausted ${n}`),
      },
      () => clock + Date.now(),
    );
    return { reconnector, calls, events, setClock: (v: number) => (clock = v) };
  }

  it('makes the first attempt after 250 ms and reports the reconnect with its duration', async () => {
    const { reconnector, calls, events } = rig(['ok']);
    const start = Date.now();
    reconnector.start();
    await vi.advanceTimersByTimeAsync(249);
    expect(calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.map((t) => t - start)).toEqual([250]);
    expect(events).toEqual(['reconnected 250']);
    expect(reconnector.isRunning).toBe(false);
  });

  it('backs off 250, 500, 1000 ms between failed attempts', async () => {
    const { reconnector, calls } = rig(['fail', 'fail', 'fail', 'ok']);
    const start = Date.now();
    reconnector.start();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls.map((t) => t - start)).toEqual([250, 750, 1750, 3750]);
  });

  it('reports exhaustion once after 10 failures in a row and keeps trying at the 5 s cap', async () => {
    const outcomes: Array<'fail' | 'ok'> = [...Array(12).fill('fail'), 'ok'];
    const { reconnector, calls, events } = rig(outcomes);
    reconnector.start();
    await vi.advanceTimersByTimeAsync(32_750);
    expect(calls).toHaveLength(10);
    expect(events).toEqual(['exhausted 10']);
    await vi.advanceTimersByTimeAsync(15_000);
    expect(calls).toHaveLength(13);
    expect(calls[12]! - calls[11]!).toBe(5000);
    expect(events).toEqual(['exhausted 10', expect.stringMatching(/^reconnected \d+$/)]);
  });

  it('counts attempts afresh after a success', async () => {
    const { reconnector, events } = rig([...Array(9).fill('fail'), 'ok', ...Array(9).fill('fail'), 'ok']);
    reconnector.start();
    await vi.advanceTimersByTimeAsync(60_000);
    reconnector.start();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(events.filter((e) => e.startsWith('exhausted'))).toEqual([]);
    expect(events.filter((e) => e.startsWith('reconnected'))).toHaveLength(2);
  });

  it('ignores start() while already attempting', async () => {
    const { reconnector, calls } = rig(['fail', 'ok']);
    reconnector.start();
    reconnector.start();
    await vi.advanceTimersByTimeAsync(800);
    expect(calls).toHaveLength(2);
  });

  it('stops for good: no attempt after stop()', async () => {
    const { reconnector, calls } = rig([]);
    reconnector.start();
    reconnector.stop();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls).toHaveLength(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
