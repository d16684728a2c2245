import { describe, expect, it } from 'vitest';
import { bootstrapDifference, bootstrapQuantile, bootstrapRatio, median } from '../../bench/lib/stats.ts';

// The bench's budget lines quote these intervals (docs/performance.md): they must bracket the
// statistic they are the interval of, and say nothing more than the samples do.
describe('bootstrap intervals', () => {
  const off = [8.5, 8.8, 8.3, 7.4, 8.3];
  const on = [10.5, 12.4, 11.9, 11.0, 10.3];

  it('brackets the difference of the medians, within the extremes the samples allow', () => {
    const [low, high] = bootstrapDifference(on, off, 0.5);
    const observed = median(on) - median(off);
    expect(low).toBeLessThanOrEqual(observed);
    expect(high).toBeGreaterThanOrEqual(observed);
    expect(low).toBeGreaterThanOrEqual(Math.min(...on) - Math.max(...off));
    expect(high).toBeLessThanOrEqual(Math.max(...on) - Math.min(...off));
    expect(high - low).toBeGreaterThan(0);
  });

  it('brackets a median within the sample, and is empty of width for a constant sample', () => {
    const [low, high] = bootstrapQuantile(off, 0.5);
    expect(low).toBeLessThanOrEqual(median(off));
    expect(high).toBeGreaterThanOrEqual(median(off));
    expect(low).toBeGreaterThanOrEqual(Math.min(...off));
    expect(high).toBeLessThanOrEqual(Math.max(...off));
    expect(bootstrapQuantile([4.4, 4.4, 4.4], 0.5)).toEqual([4.4, 4.4]);
    expect(bootstrapDifference([2, 2], [1, 1], 0.5)).toEqual([1, 1]);
  });

  it('gives the ratio interval of two samples, and NaN for an empty one', () => {
    const [low, high] = bootstrapRatio(on, off, 0.5);
    expect(low).toBeLessThanOrEqual(median(on) / median(off));
    expect(high).toBeGreaterThanOrEqual(median(on) / median(off));
    expect(bootstrapRatio([], off, 0.5)).toEqual([NaN, NaN]);
    expect(bootstrapDifference(on, [], 0.5)).toEqual([NaN, NaN]);
  });

  it('is the same interval on every call (a seeded generator), so a report renders the same twice', () => {
    expect(bootstrapDifference(on, off, 0.5)).toEqual(bootstrapDifference(on, off, 0.5));
  });
});
