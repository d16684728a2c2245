import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Heartbeat, Heartbeats } from '../../src/heartbeat.ts';

/** A job that throws fails the test unless the test expects it. */
const rethrow = (error: unknown): never => {
  throw error;
};

describe('Heartbeat', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs every job on one timer, each on its own multiple of the beat', () => {
    const beat = new Heartbeat(1000, rethrow);
    const runs: string[] = [];
    const stopEach = beat.every(1, () => runs.push('each'));
    vi.advanceTimersByTime(2000);
    const stopFifth = beat.every(5, () => runs.push('fifth'));
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(10_000);
    expect(runs.filter((r) => r === 'each')).toHaveLength(12);
    // Five beats after it joined, then every five.
    expect(runs.filter((r) => r === 'fifth')).toHaveLength(2);
    expect(runs.slice(0, 7)).toEqual(['each', 'each', 'each', 'each', 'each', 'each', 'each']);
    expect(runs[7]).toBe('fifth');
    stopEach();
    expect(beat.running).toBe(true);
    stopFifth();
    expect(beat.running).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('lets a job leave during a beat without skipping the others', () => {
    const beat = new Heartbeat(500, rethrow);
    const runs: string[] = [];
    const stopFirst = beat.every(1, () => {
      runs.push('first');
      stopFirst();
    });
    beat.every(1, () => runs.push('second'));
    vi.advanceTimersByTime(1000);
    expect(runs).toEqual(['first', 'second', 'second']);
  });

  it('runs the other jobs of a beat when one throws, and reports the failure', () => {
    const failures: unknown[] = [];
    const beat = new Heartbeat(1000, (error) => failures.push(error));
    const runs: string[] = [];
    const broken = new Error('probe bug');
    beat.every(1, () => runs.push('before'));
    beat.every(1, () => {
      throw broken;
    });
    beat.every(1, () => runs.push('after'));
    vi.advanceTimersByTime(2000);
    expect(runs).toEqual(['before', 'after', 'before', 'after']);
    expect(failures).toEqual([broken, broken]);
  });
});

describe('Heartbeats', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("gives one agent's parts one beat per period", () => {
    const agent = new Heartbeats(rethrow);
    expect(agent.of(1000)).toBe(agent.of(1000));
    expect(agent.of(1000)).not.toBe(agent.of(250));
  });

  it('shares no beat between two agents in one process: each runs, stops and reports on its own', () => {
    const failures: string[] = [];
    const first = new Heartbeats(() => failures.push('first'));
    const second = new Heartbeats(() => failures.push('second'));
    expect(first.of(1000)).not.toBe(second.of(1000));
    const runs: string[] = [];
    const stopFirst = first.of(1000).every(1, () => {
      runs.push('first');
      throw new Error('first agent bug');
    });
    second.of(1000).every(1, () => runs.push('second'));
    vi.advanceTimersByTime(1000);
    stopFirst();
    expect(first.of(1000).running).toBe(false);
    expect(second.of(1000).running).toBe(true);
    vi.advanceTimersByTime(1000);
    expect(runs).toEqual(['first', 'second', 'second']);
    expect(failures).toEqual(['first']);
  });
});
