// The timeline's range maths, pure (docs/viewer.md "Timeline"): which span of time is held and
// visible, zooming and panning it, and mapping between time and canvas x. timeline.ts does the
// input and drawing around it; test/unit/viewer-timeline-range.test.ts tests it.

/** A span of time in unix µs. */
export interface Range {
  start: number;
  end: number;
}

/** The smallest visible span: 2 ms. */
export const MIN_SPAN_US = 2_000;

/**
 * The whole session as held: from the oldest event to a little after the newest (so the newest
 * is not on the edge), at least 1 s; before any event, the last 10 s up to `nowUs`.
 */
export function heldRange(minTs: number, maxTs: number, nowUs: number): Range {
  if (!Number.isFinite(minTs)) return { start: nowUs - 10_000_000, end: nowUs };
  const span = Math.max(maxTs - minTs, 1_000_000);
  return { start: minTs, end: minTs + span * 1.02 };
}

/** What is shown: everything held without a chosen view; while following, the view's span at the newest end. */
export function visibleRange(held: Range, view: Range | undefined, following: boolean): Range {
  if (view === undefined) return held;
  if (!following) return view;
  const span = view.end - view.start;
  return { start: held.end - span, end: held.end };
}

/**
 * `range` zoomed by `factor` (below 1: in) around `aroundTs` (default its middle), which stays at
 * the same place on screen; never narrower than MIN_SPAN_US.
 */
export function zoomRange(range: Range, factor: number, aroundTs = (range.start + range.end) / 2): Range {
  const span = Math.max(MIN_SPAN_US, (range.end - range.start) * factor);
  const ratio = (aroundTs - range.start) / (range.end - range.start);
  const start = aroundTs - span * ratio;
  return { start, end: start + span };
}

/** `range` moved by `deltaUs` (negative: into the past). */
export function panRange(range: Range, deltaUs: number): Range {
  return { start: range.start + deltaUs, end: range.end + deltaUs };
}

/** Does `view` show all of `held` (so no view need be kept)? */
export function coversHeld(view: Range, held: Range): boolean {
  return view.start <= held.start && view.end >= held.end;
}

/** The x of `ts` on a plot from `left` to `width`. */
export function xOf(ts: number, range: Range, left: number, width: number): number {
  return left + ((ts - range.start) / (range.end - range.start)) * (width - left);
}

/** The time at `x` on a plot from `left` to `width` (the inverse of xOf). */
export function tsAt(x: number, range: Range, left: number, width: number): number {
  return range.start + ((x - left) / (width - left)) * (range.end - range.start);
}

const AXIS_STEPS = [1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 3e7, 6e7, 1.2e8, 3e8, 6e8, 1.8e9, 3.6e9];

/** The axis's tick step (µs): the smallest round step that keeps ticks about `spacingPx` apart. */
export function axisStep(span: number, plotWidth: number, spacingPx = 110): number {
  const wanted = span / Math.max(1, plotWidth / spacingPx);
  return AXIS_STEPS.find((s) => s >= wanted) ?? AXIS_STEPS[AXIS_STEPS.length - 1]!;
}
