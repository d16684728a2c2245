// Section 5, soak. The agent host attached to a browser whose tab runs SPA-like pages for the
// whole duration: every ~3 s a full navigation (10 subresources, a screenshot), and in between a
// burst of 5 JSON fetches, a pushState and a console line every 300 ms; one SSE subscriber reads
// everything. RSS is sampled every 10 s; memory after a full GC is taken at four points:
// - after a short warm-up;
// - once the event log is full (it holds --ring-events events, 16,384): the log is bounded and
//   fills by design, with the events' own bytes (screenshots, bodies), so the growth to this
//   point is reported on its own line; the quick run does not wait for it;
// - half-way and at the end of the measured duration, which starts at the previous point.
// The bytes the log retains are reported next to RSS (the subscriber's own count of the newest
// 16,384 frames).

import { BenchBrowser } from '../clients/chromium.ts';
import { AgentHost } from '../clients/consumers.ts';
import type { BenchContext } from '../lib/context.ts';
import type { HostMemory } from '../clients/agent-host.ts';
import { monoMs, sleep, statusBytes } from '../lib/processes.ts';

const RING_EVENTS = 16384; // the agent's default --ring-events

export interface SoakOptions {
  warmupS: number;
  /** Wait (at most this long) for the event log to be full before the measured part starts; 0: don't. */
  fillTimeoutS: number;
  durationS: number;
}

type Point = HostMemory & { retainedLogBytes: number };

export interface SoakResult {
  options: SoakOptions;
  /** After the warm-up. */
  warm: Point;
  /** Whether the log was full when the measured part started, and how long filling it took. */
  logFull: boolean;
  fillSeconds: number;
  /** Start of the measured part. */
  start: Point;
  /** Half-way through the measured part. */
  mid: HostMemory;
  end: Point;
  /** Over the measured part. */
  rssGrowthBytes: number;
  heapGrowthBytes: number;
  retainedLogGrowthBytes: number;
  /** From the warm-up to the end (the log filling included). */
  rssGrowthSinceWarmBytes: number;
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
  const point = async (): Promise<Point> => ({ ...(await host.memory(true)), retainedLogBytes: (await subscribers.stats())[0]!.retainedBytes });
  try {
    await subscribers.open({ url: host.streamUrl, readers: 1, stalled: 0, retainedWindow: RING_EVENTS });
    await pages.waitIdle();
    const t0 = monoMs();
    let deadline = Infinity; // set once the measured part starts
    const chainTimeoutMs = (options.warmupS + options.fillTimeoutS + options.durationS + 120) * 1000;
    const chain = pages.runUntil(
      (i) => `/p/soak?k=${i}`,
      () => deadline,
      chainTimeoutMs,
    );
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
      const warm = await point();
      ctx.log(`[soak] warm: rss ${mb(warm.rss)} MB, heap ${mb(warm.heapUsed)} MB, log ${mb(warm.retainedLogBytes)} MB`);
      const fillStart = monoMs();
      let logFull = (await subscribers.stats())[0]!.frames >= RING_EVENTS;
      if (options.fillTimeoutS > 0) {
        ctx.log(`[soak] waiting for the event log to hold ${RING_EVENTS} events (at most ${options.fillTimeoutS} s)`);
        while (!logFull && monoMs() - fillStart < options.fillTimeoutS * 1000) {
          await sleep(2000);
          logFull = (await subscribers.stats())[0]!.frames >= RING_EVENTS;
        }
      }
      const fillSeconds = (monoMs() - fillStart) / 1000;
      const start = await point();
      const framesAtStart = (await subscribers.stats())[0]!.frames;
      const tStart = monoMs();
      deadline = tStart + options.durationS * 1000;
      ctx.log(
        `[soak] start (log ${logFull ? `full after ${fillSeconds.toFixed(0)} s` : 'not full'}): rss ${mb(start.rss)} MB, ` +
          `heap ${mb(start.heapUsed)} MB, log ${mb(start.retainedLogBytes)} MB; running ${options.durationS} s`,
      );
      await sleep((options.durationS * 1000) / 2);
      const mid = await host.memory(true);
      ctx.log(`[soak] half-way: rss ${mb(mid.rss)} MB, heap ${mb(mid.heapUsed)} MB`);
      const beacons = await chain;
      ctx.profileWindow(profileDir, tStart, monoMs());
      const end = await point();
      const stats = (await subscribers.stats())[0]!;
      const elapsedS = (monoMs() - tStart) / 1000;
      ctx.log(`[soak] end: rss ${mb(end.rss)} MB, heap ${mb(end.heapUsed)} MB, log ${mb(end.retainedLogBytes)} MB`);
      const measuredFrom = (tStart - t0) / 1000;
      return {
        options,
        warm,
        logFull,
        fillSeconds,
        start,
        mid,
        end,
        rssGrowthBytes: end.rss - start.rss,
        heapGrowthBytes: end.heapUsed - start.heapUsed,
        retainedLogGrowthBytes: end.retainedLogBytes - start.retainedLogBytes,
        rssGrowthSinceWarmBytes: end.rss - warm.rss,
        peakRssBytes: statusBytes(host.pid, 'VmHWM'),
        events: stats.frames - framesAtStart,
        eventsPerSecond: (stats.frames - framesAtStart) / elapsedS,
        pageLoads: beacons.length,
        seqGaps: stats.gaps,
        timeline,
        rssSlopeMbPerMin: slope(timeline.filter(([t]) => t >= measuredFrom).map(([t, rss]) => [t / 60, rss / 2 ** 20])),
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
