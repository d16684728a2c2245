import { describe, expect, it } from 'vitest';
import { AUTO_MAX_MS, autoMotionMs, linearSteps, pathLength, smoothPath, smoothSteps } from '../../src/computer/motion.ts';

describe('linearSteps', () => {
  it('gives evenly spaced points ending exactly at the destination', () => {
    expect(linearSteps({ x: 0, y: 0 }, { x: 100, y: 50 }, 4)).toEqual([
      { x: 25, y: 12.5 },
      { x: 50, y: 25 },
      { x: 75, y: 37.5 },
      { x: 100, y: 50 },
    ]);
  });
});

describe('smoothSteps', () => {
  const from = { x: 10, y: 10 };
  const to = { x: 300, y: 200 };

  it('ends exactly at the destination', () => {
    const points = smoothSteps(from, to, 300);
    expect(points.at(-1)).toMatchObject(to);
  });

  it('spreads the duration over about one point per frame', () => {
    const points = smoothSteps(from, to, 320);
    expect(points).toHaveLength(20);
    expect(points.reduce((sum, p) => sum + p.waitMs, 0)).toBeCloseTo(320);
  });

  it('curves off the straight line', () => {
    const mid = smoothSteps(from, to, 320)[9]!;
    // Distance of the midpoint from the straight line through from and to.
    const dx = to.x - from.x;
    const dy = to.y - from.y;
    const offLine = Math.abs(dy * (mid.x - from.x) - dx * (mid.y - from.y)) / Math.hypot(dx, dy);
    expect(offLine).toBeGreaterThan(5);
  });

  it('gives the same points for the same input', () => {
    expect(smoothSteps(from, to, 200)).toEqual(smoothSteps(from, to, 200));
  });
});

describe('smoothPath', () => {
  it('passes through every waypoint', () => {
    const waypoints = [
      { x: 0, y: 0 },
      { x: 100, y: 0 },
      { x: 100, y: 100 },
    ];
    const points = smoothPath(waypoints, 400);
    expect(points).toContainEqual(expect.objectContaining({ x: 100, y: 0 }));
    expect(points.at(-1)).toMatchObject({ x: 100, y: 100 });
  });
});

describe('autoMotionMs', () => {
  it('grows with distance within 80 ms and the automatic maximum', () => {
    expect(autoMotionMs(0)).toBe(80);
    expect(autoMotionMs(500)).toBe(280);
    expect(autoMotionMs(1e6)).toBe(AUTO_MAX_MS);
  });

  it('measures a path along its segments', () => {
    expect(
      pathLength([
        { x: 0, y: 0 },
        { x: 3, y: 4 },
        { x: 3, y: 10 },
      ]),
    ).toBe(11);
  });
});
