// The watch that tells a dead agent from a quiet one (gateway/src/agent-link/agent-silence.ts), on
// fake timers: it fires once the agent has been silent for the limit while it was its turn,
// every byte starts the count again, and time when the client held things up does not count.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SilenceWatch, streamSilenceLimitMs } from '../../src/agent-link/agent-silence.ts';

const LIMIT = 1000;

describe('SilenceWatch', () => {
  let fired: number;
  let agentsTurn: boolean;
  let watch: SilenceWatch;

  beforeEach(() => {
    vi.useFakeTimers();
    fired = 0;
    agentsTurn = true;
    watch = new SilenceWatch(
      LIMIT,
      () => agentsTurn,
      () => fired++,
    );
  });
  afterEach(() => {
    watch.stop();
    vi.useRealTimers();
  });

  it('fires once the agent has been silent for the limit', () => {
    vi.advanceTimersByTime(LIMIT - 1);
    const before = fired;
    vi.advanceTimersByTime(1);
    expect([before, fired]).toEqual([0, 1]);
  });

  it('fires only once', () => {
    vi.advanceTimersByTime(10 * LIMIT);
    expect(fired).toBe(1);
  });

  it('a byte starts the count again', () => {
    vi.advanceTimersByTime(LIMIT - 100);
    watch.touch();
    vi.advanceTimersByTime(LIMIT - 1);
    const before = fired;
    vi.advanceTimersByTime(1);
    expect([before, fired]).toEqual([0, 1]);
  });

  it("does not fire while it is not the agent's turn (a client holding things up)", () => {
    agentsTurn = false;
    vi.advanceTimersByTime(10 * LIMIT);
    expect(fired).toBe(0);
  });

  it('counts from when the client let go', () => {
    agentsTurn = false;
    vi.advanceTimersByTime(LIMIT);
    agentsTurn = true;
    vi.advanceTimersByTime(LIMIT - 1);
    const before = fired;
    vi.advanceTimersByTime(LIMIT);
    expect([before, fired]).toEqual([0, 1]);
  });

  it('stop() cancels it', () => {
    watch.stop();
    vi.advanceTimersByTime(10 * LIMIT);
    expect(fired).toBe(0);
  });
});

it('a stream is dead after 3 keepalive periods', () => {
  expect(streamSilenceLimitMs({ connectMs: 1, responseMs: 1, batchMarginMs: 1, idleMs: 1, keepaliveMs: 15_000 })).toBe(45_000);
});
