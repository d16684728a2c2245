// A counter mirroring a running total kept elsewhere (src/metrics/mirrored-counter.ts), as the
// store's and the CDP proxy's metrics use it: raised at each scrape by what the total grew.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { mirroredCounter } from '../../src/metrics/mirrored-counter.ts';

describe('mirroredCounter', () => {
  it('reads the total at each scrape and never goes down', async () => {
    const registry = new Registry();
    let total = 0;
    mirroredCounter([registry], 'test_mirrored_total', 'A mirrored total.', () => total);
    const scrape = async () => (await registry.getSingleMetric('test_mirrored_total')!.get()).values[0]?.value;
    expect(await scrape()).toBe(0);
    total = 5;
    expect(await scrape()).toBe(5);
    expect(await scrape()).toBe(5);
    total = 12;
    expect(await scrape()).toBe(12);
    // The total started over (its owner was replaced): the counter keeps what it had and counts on from there.
    total = 2;
    expect(await scrape()).toBe(12);
    total = 3;
    expect(await scrape()).toBe(13);
  });

  it('is listed in the registry with its help', async () => {
    const registry = new Registry();
    mirroredCounter([registry], 'test_listed_total', 'Listed.', () => 1);
    const text = await registry.metrics();
    expect(text).toContain('# HELP test_listed_total Listed.');
    expect(text).toContain('# TYPE test_listed_total counter');
    expect(text).toMatch(/^test_listed_total 1$/m);
  });
});
