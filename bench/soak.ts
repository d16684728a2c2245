// Section 5, soak. The agent host attached to a browser whose tab runs SPA-like pages for the
// whole duration: every ~3 s a full navigation (10 subresources, a screenshot), and in between a
// burst of 5 JSON fetches, a pushState and a console line every 300 ms; one SSE subscriber reads
// everything. Memory is taken after a warm-up and at the end, each after a full GC; RSS is also
// sampled every 10 s. The event log legitimately grows until it holds --ring-events events, so the
// bytes it retains at both points are reported next to RSS (from the subscriber's own count of the
// newest 16,384 frames).

import { BenchBrowser } from './chromium.ts';
import { AgentHost } from './consumers.ts';
import type { BenchContext } from './context.ts';
import type { HostMemory } from './agent-host.ts';
import { monoMs, sleep, statusBytes } from './processes.ts';

const RING_EVENTS = 16384; // the agent's default --ring-events

export interface SoakOptions {
  warmupS: number;
  durationS: number;
}

export interface SoakResult {
  options: SoakOptions;
  start: HostMemory & { retainedLogBytes: number };
  /** Half-way through the measured part (after a full GC). */
  mid: HostMemory;
  end: HostMemory & { retainedLogBytes: number };
  rssGrowthBytes: number;
  heapGrowthBytes: number;
  retainedLogGrowthBytes: number;
  peakRssBytes: number;
  events: number;
  eventsPerSecond: number;
  pageLoads: number;
  seqGaps: number;
  /** [seconds since the chain started, RSS bytes, heap used bytes] every 10 s. */
  timeline: Array<[number, number, number]>;
  /** Least-squares slope of RSS over the measured part of the timeline (MB per minute). */
  rssSlopeMbPerMin: number;
}

export async function runSoak(ctx: BenchContext, options: SoakOptions): Promise<SoakResult> {
  const { pages, subscribers } = ctx;
  const browser = await BenchBrowser.launch(pages.idleUrl);
  const profileDir = ctx.profileDir ? `${ctx.profileDir}/soak` : undefined;
  const host = await AgentHost.start({ cdpUrl: browser.httpUrl }, profileDir);
  try {
    await subscribers.open({ url: host.streamUrl, readers: 1, stalled: 0, retainedWindow: RING_EVENTS });
    await pages.waitIdle();
    const t0 = monoMs();
    const deadline = t0 + (options.warmupS + options.durationS) * 1000;
    const chain = pages.runUntil((i) => `/p/soak?k=${i}`, deadline, (options.warmupS + options.durationS + 120) * 1000);
    chain.catch(() => undefined); // awaited below; a failure during the warm-up must not go unhandled
    const timeline: Array<[number, number, number]> = [];
    const sampler = setInterval(() => {
      void host.memory(false).then(
        (m) => timeline.push([Math.round((monoMs() - t0) / 1000), m.rss, m.heapUsed]),
        () => undefined,
      );
    }, 10_000);
    try {
      await sleep(options.warmupS * 1000);
      const start = { ...(await host.memory(true)), retainedLogBytes: (await subscribers.stats())[0]!.retainedBytes };
      const framesAtStart = (await subscribers.stats())[0]!.frames;
      const tStart = monoMs();
      ctx.log(`[soak] start: rss ${mb(start.rss)} MB, heap ${mb(start.heapUsed)} MB, log ${mb(start.retainedLogBytes)} MB; running ${options.durationS} s`);
      await sleep((options.durationS * 1000) / 2);
      const mid = await host.memory(true);
      ctx.log(`[soak] half-way: rss ${mb(mid.rss)} MB, heap ${mb(mid.heapUsed)} MB`);
      const beacons = await chain;
      ctx.profileWindow(profileDir, tStart, monoMs());
      const end = { ...(await host.memory(true)), retainedLogBytes: (await subscribers.stats())[0]!.retainedBytes };
      const stats = (await subscribers.stats())[0]!;
      const elapsedS = (monoMs() - tStart) / 1000;
      ctx.log(`[soak] end: rss ${mb(end.rss)} MB, heap ${mb(end.heapUsed)} MB, log ${mb(end.retainedLogBytes)} MB`);
      return {
        options,
        start,
        mid,
        end,
        rssGrowthBytes: end.rss - start.rss,
        heapGrowthBytes: end.heapUsed - start.heapUsed,
        retainedLogGrowthBytes: end.retainedLogBytes - start.retainedLogBytes,
        peakRssBytes: statusBytes(host.pid, 'VmHWM'),
        events: stats.frames - framesAtStart,
        eventsPerSecond: (stats.frames - framesAtStart) / elapsedS,
        pageLoads: beacons.length,
        seqGaps: stats.gaps,
        timeline,
        rssSlopeMbPerMin: slope(timeline.filter(([t]) => t >= options.warmupS).map(([t, rss]) => [t / 60, rss / 2 ** 20])),
      };
    } finally {
      clearInterval(sampler);
    }
  } finally {
    await subscribers.closeAll();
    await host.stop();
    await browser.close();
  }
}

/** Least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  if (points.length < 2) return NaN;
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return num / den;
}

function mb(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(1);
}
