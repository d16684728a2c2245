// Pointer paths: straight steps between waypoints and human-like smooth curves (a cubic Bézier
// with eased timing). Pure geometry; the executor dispatches the points and waits between them.

export interface Point {
  x: number;
  y: number;
}

/** One pointer position and the wait before dispatching it. */
export interface TimedPoint extends Point {
  waitMs: number;
}

/** About one frame: the interval between the points of a smooth movement. */
export const SMOOTH_STEP_MS = 16;
const AUTO_MIN_MS = 80;
/** Longest automatic duration of a smooth movement (also what validation budgets for one). */
export const AUTO_MAX_MS = 600;

/** Duration of a smooth movement over `distance` CSS px when the caller gives none. */
export function autoMotionMs(distance: number): number {
  return Math.round(Math.min(AUTO_MAX_MS, Math.max(AUTO_MIN_MS, 80 + distance * 0.4)));
}

export function distance(a: Point, b: Point): number {
  return Math.hypot(b.x - a.x, b.y - a.y);
}

export function pathLength(points: readonly Point[]): number {
  let total = 0;
  for (let i = 1; i < points.length; i++) total += distance(points[i - 1]!, points[i]!);
  return total;
}

/** `steps` evenly spaced points from `from` (excluded) to `to` (included). */
export function linearSteps(from: Point, to: Point, steps: number): Point[] {
  const points: Point[] = [];
  for (let i = 1; i <= steps; i++) {
    const t = i / steps;
    points.push({ x: round(from.x + (to.x - from.x) * t), y: round(from.y + (to.y - from.y) * t) });
  }
  return points;
}

/**
 * A smooth movement from `from` (excluded) to `to` (included) taking `durationMs`: a cubic Bézier
 * whose control points sit off the straight line (a slight arc, as a hand moves), sampled with
 * ease-in-out timing at about one point per frame. Deterministic for the same input.
 */
export function smoothSteps(from: Point, to: Point, durationMs: number): TimedPoint[] {
  const count = Math.max(2, Math.round(durationMs / SMOOTH_STEP_MS));
  const dx = to.x - from.x;
  const dy = to.y - from.y;
  // Perpendicular offset of the control points: 10% of the distance, to one side.
  const nx = -dy * 0.1;
  const ny = dx * 0.1;
  const c1 = { x: from.x + dx * 0.3 + nx, y: from.y + dy * 0.3 + ny };
  const c2 = { x: from.x + dx * 0.7 + nx, y: from.y + dy * 0.7 + ny };
  const wait = durationMs / count;
  const points: TimedPoint[] = [];
  for (let i = 1; i <= count; i++) {
    const t = easeInOut(i / count);
    const u = 1 - t;
    const x = u * u * u * from.x + 3 * u * u * t * c1.x + 3 * u * t * t * c2.x + t * t * t * to.x;
    const y = u * u * u * from.y + 3 * u * u * t * c1.y + 3 * u * t * t * c2.y + t * t * t * to.y;
    points.push({ x: round(x), y: round(y), waitMs: wait });
  }
  // The last point is exactly the destination, whatever the rounding.
  points[points.length - 1] = { x: to.x, y: to.y, waitMs: wait };
  return points;
}

/** A smooth path through every waypoint; the duration is shared out by segment length. */
export function smoothPath(waypoints: readonly Point[], durationMs: number): TimedPoint[] {
  const total = pathLength(waypoints);
  const points: TimedPoint[] = [];
  for (let i = 1; i < waypoints.length; i++) {
    const a = waypoints[i - 1]!;
    const b = waypoints[i]!;
    const share = total === 0 ? durationMs / (waypoints.length - 1) : (durationMs * distance(a, b)) / total;
    points.push(...smoothSteps(a, b, Math.max(SMOOTH_STEP_MS, share)));
  }
  return points;
}

function easeInOut(t: number): number {
  return t < 0.5 ? 4 * t * t * t : 1 - (-2 * t + 2) ** 3 / 2;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
