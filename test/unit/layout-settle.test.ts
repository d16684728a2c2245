import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LAYOUT_SETTLE_MS, LayoutSettleMachine, type Scheduler } from '../../src/telemetry/layout-settle.ts';

describe('LayoutSettleMachine', () => {
  let settled: number[];
  let machine: LayoutSettleMachine;

  beforeEach(() => {
    vi.useFakeTimers();
    settled = [];
    machine = new LayoutSettleMachine((navigation) => settled.push(navigation), undefined, 1);
  });
  afterEach(() => {
    machine.dispose();
    vi.useRealTimers();
  });

  it('settles 1 s after page_load when nothing shifts', () => {
    machine.load(1);
    vi.advanceTimersByTime(LAYOUT_SETTLE_MS - 1);
    expect(settled).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(settled).toEqual([1]);
  });

  it('does not settle before page_load, however long it waits', () => {
    vi.advanceTimersByTime(60_000);
    expect(settled).toEqual([]);
  });

  it('re-arms to a full second on every layout shift after load', () => {
    machine.load(1);
    vi.advanceTimersByTime(800);
    machine.layoutShift(1);
    vi.advanceTimersByTime(800);
    machine.layoutShift(1);
    vi.advanceTimersByTime(999);
    expect(settled).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(settled).toEqual([1]);
  });

  it('ignores a layout shift before load', () => {
    machine.layoutShift(1);
    vi.advanceTimersByTime(500);
    machine.load(1);
    vi.advanceTimersByTime(LAYOUT_SETTLE_MS);
    expect(settled).toEqual([1]);
  });

  it('fires once per navigation, whatever comes after', () => {
    machine.load(1);
    vi.advanceTimersByTime(LAYOUT_SETTLE_MS);
    machine.layoutShift(1);
    machine.load(1);
    vi.advanceTimersByTime(10 * LAYOUT_SETTLE_MS);
    expect(settled).toEqual([1]);
  });

  it('fires again for the next navigation after a reset', () => {
    machine.load(1);
    vi.advanceTimersByTime(LAYOUT_SETTLE_MS);
    machine.navigate(2);
    machine.load(2);
    vi.advanceTimersByTime(LAYOUT_SETTLE_MS);
    expect(settled).toEqual([1, 2]);
  });

  it('drops the pending settle of the previous navigation on reset', () => {
    machine.load(1);
    vi.advanceTimersByTime(500);
    machine.navigate(2);
    vi.advanceTimersByTime(10 * LAYOUT_SETTLE_MS);
    expect(settled).toEqual([]);
  });

  it('ignores load and shifts that belong to another navigation', () => {
    machine.navigate(2);
    machine.load(1);
    vi.advanceTimersByTime(LAYOUT_SETTLE_MS);
    expect(settled).toEqual([]);
    machine.load(2);
    vi.advanceTimersByTime(900);
    machine.layoutShift(1);
    vi.advanceTimersByTime(100);
    expect(settled).toEqual([2]);
  });

  it('ignores a stale timer that still fires after a reset', () => {
    // A scheduler whose cancel does nothing: every timer armed fires.
    const queue: Array<() => void> = [];
    const leaky: Scheduler = { setTimeout: (callback) => queue.push(callback), clearTimeout: () => undefined };
    const fired: number[] = [];
    const m = new LayoutSettleMachine((navigation) => fired.push(navigation), leaky, 1);
    m.load(1);
    m.layoutShift(1);
    m.navigate(2);
    for (const callback of queue.splice(0)) callback();
    expect(fired).toEqual([]);
  });

  it('ignores a stale timer of an earlier arming in the same navigation', () => {
    const queue: Array<() => void> = [];
    const leaky: Scheduler = { setTimeout: (callback) => queue.push(callback), clearTimeout: () => undefined };
    const fired: number[] = [];
    const m = new LayoutSettleMachine((navigation) => fired.push(navigation), leaky, 1);
    m.load(1);
    m.layoutShift(1);
    queue[0]!();
    expect(fired).toEqual([]);
    queue[1]!();
    expect(fired).toEqual([1]);
  });

  it('never fires after dispose', () => {
    machine.load(1);
    machine.dispose();
    vi.advanceTimersByTime(10 * LAYOUT_SETTLE_MS);
    expect(settled).toEqual([]);
  });
});
