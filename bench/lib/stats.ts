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
 * 95% bootstrap interval of quantile(a, q) / quantile(b, q): both samples resampled with
 * replacement, independently.
 */
export function bootstrapRatio(a: readonly number[], b: readonly number[], q: number, iterations = 2000): [number, number] {
  if (a.length === 0 || b.length === 0) return [NaN, NaN];
  const random = prng(0x5eed);
  const ratios: number[] = [];
  const resample = (values: readonly number[]): number[] => {
    const out = new Array<number>(values.length);
    for (let i = 0; i < values.length; i++) out[i] = values[Math.floor(random() * values.length)]!;
    return out.sort((x, y) => x - y);
  };
  for (let i = 0; i < iterations; i++) ratios.push(quantileSorted(resample(a), q) / quantileSorted(resample(b), q));
  const s = sorted(ratios);
  return [quantileSorted(s, 0.025), quantileSorted(s, 0.975)];
}

/** Round for display and JSON. */
export function round(value: number, digits = 2): number {
  if (!Number.isFinite(value)) return value;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
