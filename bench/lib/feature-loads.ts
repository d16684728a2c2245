// The page-load arm of a feature's section (replay, snapshot): the typical page loaded in blocks
// with the feature on and off, one agent for every block, the arms alternating every round
// (docs/performance.md "Method"); the p50 ratio on/off with its bootstrap interval.

import { BenchBrowser } from '../clients/chromium.ts';
import { AgentCli } from '../clients/consumers.ts';
import { rotate, type BenchContext } from './context.ts';
import { bootstrapRatio, median } from './stats.ts';

export interface FeatureLoadOptions {
  rounds: number;
  loadsPerBlock: number;
  warmupLoads: number;
}

export interface FeatureLoads {
  offMs: number[];
  onMs: number[];
  p50Ratio: number;
  p50Ci: [number, number];
}

/**
 * Runs the blocks; `arm` switches the feature on or off before a block and may return what ends
 * it after the block (a recording's stop).
 */
export async function featureLoads(
  ctx: BenchContext,
  options: FeatureLoadOptions,
  arm: (agent: AgentCli, on: boolean) => Promise<(() => Promise<unknown>) | undefined>,
): Promise<FeatureLoads> {
  const { pages, subscribers } = ctx;
  const browser = await BenchBrowser.launch(pages.idleUrl);
  const offMs: number[] = [];
  const onMs: number[] = [];
  try {
    const agent = await AgentCli.start(browser.httpUrl);
    try {
      await subscribers.open({ url: agent.streamUrl, readers: 1, stalled: 0, countOnly: true });
      await pages.waitIdle();
      await pages.runChain(['/p/typical'], 60_000);
      await pages.waitIdle();
      for (let round = 0; round < options.rounds; round++) {
        for (const on of rotate([false, true], round)) {
          const end = await arm(agent, on);
          await pages.runChain(
            Array.from({ length: options.warmupLoads }, () => '/p/typical'),
            60_000,
          );
          await pages.waitIdle();
          const beacons = await pages.runChain(
            Array.from({ length: options.loadsPerBlock }, () => '/p/typical'),
            60_000 + options.loadsPerBlock * 5000,
          );
          await pages.waitIdle();
          (on ? onMs : offMs).push(...beacons.map((b) => b.metric));
          await end?.();
        }
      }
    } finally {
      await subscribers.closeAll();
      await agent.stop();
    }
  } finally {
    await browser.close();
  }
  return { offMs, onMs, p50Ratio: median(onMs) / median(offMs), p50Ci: bootstrapRatio(onMs, offMs, 0.5) };
}
