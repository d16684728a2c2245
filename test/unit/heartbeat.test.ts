import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Heartbeat, heartbeat } from '../../src/heartbeat.ts';

describe('Heartbeat', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs every job on one timer, each on its own multiple of the beat', () => {
    const beat = new Heartbeat(1000);
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
    const beat = new Heartbeat(500);
    const runs: string[] = [];
    const stopFirst = beat.every(1, () => {
      runs.push('first');
      stopFirst();
    });
    beat.every(1, () => runs.push('second'));
    vi.advanceTimersByTime(1000);
    expect(runs).toEqual(['first', 'second', 'second']);
  });

  it('shares one beat per period in the process', () => {
    expect(heartbeat(1000)).toBe(heartbeat(1000));
    expect(heartbeat(1000)).not.toBe(heartbeat(250));
  });
});
