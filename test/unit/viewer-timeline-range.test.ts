// The viewer timeline's range maths (viewer/timeline-range.ts), pure: held and visible ranges,
// zoom around a point, pan, and the time ↔ x mapping.
import { describe, expect, it } from 'vitest';
import { axisStep, coversHeld, heldRange, MIN_SPAN_US, panRange, tsAt, visibleRange, xOf, zoomRange } from '../../viewer/timeline-range.ts';

describe('the timeline range maths', () => {
  it('holds the session with 2% room after the newest event, at least 1 s, or the last 10 s before any', () => {
    expect(heldRange(1_000_000, 11_000_000, 0)).toEqual({ start: 1_000_000, end: 1_000_000 + 10_000_000 * 1.02 });
    expect(heldRange(5_000_000, 5_000_100, 0)).toEqual({ start: 5_000_000, end: 5_000_000 + 1_020_000 });
    expect(heldRange(Infinity, -Infinity, 50_000_000)).toEqual({ start: 40_000_000, end: 50_000_000 });
  });

  it('shows everything held without a view, the view when not following, its span at the newest end when following', () => {
    const held = { start: 0, end: 100 };
    const view = { start: 10, end: 30 };
    expect(visibleRange(held, undefined, true)).toEqual(held);
    expect(visibleRange(held, view, false)).toEqual(view);
    expect(visibleRange(held, view, true)).toEqual({ start: 80, end: 100 });
  });

  it('zooms around a point that stays where it is on screen, and never below the minimum span', () => {
    const range = { start: 0, end: 1_000_000 };
    const zoomed = zoomRange(range, 0.5, 250_000);
    expect(zoomed).toEqual({ start: 125_000, end: 625_000 });
    // The point keeps its fraction of the width: a quarter in before and after.
    expect((250_000 - zoomed.start) / (zoomed.end - zoomed.start)).toBe(0.25);
    expect(zoomRange(range, 2)).toEqual({ start: -500_000, end: 1_500_000 });
    const tiny = zoomRange(range, 1e-9, 0);
    expect(tiny.end - tiny.start).toBe(MIN_SPAN_US);
  });

  it('pans by a time delta, and knows when a view covers everything held', () => {
    expect(panRange({ start: 10, end: 20 }, -5)).toEqual({ start: 5, end: 15 });
    expect(coversHeld({ start: -1, end: 101 }, { start: 0, end: 100 })).toBe(true);
    expect(coversHeld({ start: 1, end: 101 }, { start: 0, end: 100 })).toBe(false);
  });

  it('maps time to x right of the gutter and back', () => {
    const range = { start: 1000, end: 2000 };
    expect(xOf(1000, range, 96, 1096)).toBe(96);
    expect(xOf(1500, range, 96, 1096)).toBe(596);
    expect(tsAt(596, range, 96, 1096)).toBe(1500);
    expect(tsAt(xOf(1234, range, 96, 1096), range, 96, 1096)).toBeCloseTo(1234, 9);
  });

  it('picks the smallest round axis step that keeps ticks about 110 px apart', () => {
    // 10 s over 1100 px: ten ticks wanted, so 1 s.
    expect(axisStep(10_000_000, 1100)).toBe(1_000_000);
    expect(axisStep(10_000_001, 1100)).toBe(2_000_000);
    // Beyond the largest step (an hour), the largest.
    expect(axisStep(1e12, 110)).toBe(3.6e9);
  });
});
