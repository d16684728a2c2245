// Order statistics for noisy samples: quantiles, and a bootstrap interval for the ratio of two
// samples' quantiles (the spread of an A/B comparison on a shared machine).

export function sorted(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

/** Quantile `q` (0..1) of ascending `values`, linear interpolation between closest ranks. */
export function quantileSorted(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const pos = (values.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return values[lo]! + (values[hi]! - values[lo]!) * (pos - lo);
}

export function quantile(values: readonly number[], q: number): number {
  return quantileSorted(sorted(values), q);
}

export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

export interface Summary {
  n: number;
  p10: number;
  p50: number;
  p90: number;
  p99: number;
  min: number;
  max: number;
}

export function summarize(values: readonly number[]): Summary {
  const s = sorted(values);
  return {
    n: s.length,
    p10: quantileSorted(s, 0.1),
    p50: quantileSorted(s, 0.5),
    p90: quantileSorted(s, 0.9),
    p99: quantileSorted(s, 0.99),
    min: s[0] ?? NaN,
    max: s[s.length - 1] ?? NaN,
  };
}

/** A deterministic PRNG (mulberry32), so a run's intervals are reproducible from its samples. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * 95% bootstrap interval of stat(resampled): each sample resampled with replacement,
 * independently, and sorted.
 */
function bootstrap(samples: ReadonlyArray<readonly number[]>, stat: (resampled: number[][]) => number, iterations: number): [number, number] {
  if (samples.some((sample) => sample.length === 0)) return [NaN, NaN];
  const random = prng(0x5eed);
  const values: number[] = [];
  const resample = (sample: readonly number[]): number[] => {
    const out = new Array<number>(sample.length);
    for (let i = 0; i < sample.length; i++) out[i] = sample[Math.floor(random() * sample.length)]!;
    return out.sort((x, y) => x - y);
  };
  for (let i = 0; i < iterations; i++) values.push(stat(samples.map(resample)));
  const s = sorted(values);
  return [quantileSorted(s, 0.025), quantileSorted(s, 0.975)];
}

/** 95% bootstrap interval of quantile(a, q) / quantile(b, q). */
export function bootstrapRatio(a: readonly number[], b: readonly number[], q: number, iterations = 2000): [number, number] {
  return bootstrap([a, b], ([x, y]) => quantileSorted(x!, q) / quantileSorted(y!, q), iterations);
}

/** 95% bootstrap interval of quantile(a, q) − quantile(b, q). */
export function bootstrapDifference(a: readonly number[], b: readonly number[], q: number, iterations = 2000): [number, number] {
  return bootstrap([a, b], ([x, y]) => quantileSorted(x!, q) - quantileSorted(y!, q), iterations);
}

/** 95% bootstrap interval of quantile(a, q). */
export function bootstrapQuantile(a: readonly number[], q: number, iterations = 2000): [number, number] {
  return bootstrap([a], ([x]) => quantileSorted(x!, q), iterations);
}

/** Round for display and JSON. */
export function round(value: number, digits = 2): number {
  if (!Number.isFinite(value)) return value;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
