// Section 6, idle. A browser with three tabs whose pages have loaded and do nothing more; the
// agent CLI attached with its defaults and one SSE subscriber (as under a gateway). After a
// warm-up, nothing happens for the measured window: whatever the agent does then is its own idle
// cost. CPU is the sum over its threads of `/proc/<pid>/task/<tid>/schedstat` (nanoseconds: an
// idle process spends far less than `stat`'s 10 ms ticks); wake-ups are context switches, of the
// event-loop thread and of all threads. The browser's health probe wakes the agent once a second
// by design (1 s interval, 2 s timeout); nothing else should. Chromium's own CPU over the window
// is reported beside it, and so is the floor: a process doing only that probe
// (bench/clients/probe-floor.ts), over the same window, for what this machine charges for it.

import { BenchBrowser } from '../clients/chromium.ts';
import { AgentCli, ProbeFloor } from '../clients/consumers.ts';
import type { BenchContext } from '../lib/context.ts';
import { sleep, statusBytes, threadActivity, treeCpuSeconds } from '../lib/processes.ts';

export const IDLE_TABS = 3;

export interface IdleOptions {
  warmupS: number;
  durationS: number;
  /** Repetitions, each with a fresh browser and agent. */
  reps: number;
}

export interface IdleWindow {
  seconds: number;
  /** Agent CPU, % of one core (all threads). */
  cpuPercent: number;
  /** The event-loop thread's share of it. */
  mainCpuPercent: number;
  /** Context switches per second: the event-loop thread, and all threads. */
  mainWakeupsPerSecond: number;
  wakeupsPerSecond: number;
  threads: number;
  rssBytes: number;
  /** From the agent's /metrics at the end of the window. */
  heapUsedBytes: number;
  heapTotalBytes: number;
  externalBytes: number;
  /** Chromium's whole tree over the same window, % of one core. */
  browserCpuPercent: number;
  /** Frames the subscriber received in the window (keepalives are not frames). */
  frames: number;
  /** The probe floor's CPU over the same window, % of one core, and its wake-ups per second. */
  floorCpuPercent: number;
  floorWakeupsPerSecond: number;
}

export interface IdleResult {
  options: IdleOptions;
  windows: IdleWindow[];
  median: IdleWindow;
}

export async function runIdle(ctx: BenchContext, options: IdleOptions): Promise<IdleResult> {
  const windows: IdleWindow[] = [];
  for (let rep = 0; rep < options.reps; rep++) {
    const urls = Array.from({ length: IDLE_TABS }, (_, n) => ctx.pages.url(`/still?n=${n}`));
    const browser = await BenchBrowser.launch(urls[0]!);
    try {
      for (const url of urls.slice(1)) await browser.openTab(url);
      const agent = await AgentCli.start(browser.httpUrl);
      const floor = ProbeFloor.start(browser.wsUrl);
      try {
        await ctx.subscribers.open({ url: agent.streamUrl, readers: 1, stalled: 0, countOnly: true });
        await sleep(options.warmupS * 1000);
        const frames0 = (await ctx.subscribers.stats())[0]?.frames ?? 0;
        const a0 = threadActivity(agent.pid);
        const f0 = threadActivity(floor.pid);
        const b0 = treeCpuSeconds(browser.pid);
        const t0 = process.hrtime.bigint();
        await sleep(options.durationS * 1000);
        const a1 = threadActivity(agent.pid);
        const f1 = threadActivity(floor.pid);
        const b1 = treeCpuSeconds(browser.pid);
        const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
        const frames1 = (await ctx.subscribers.stats())[0]?.frames ?? 0;
        const metrics = await agent.metrics();
        const gauge = (name: string) => metrics.get(name)?.get('') ?? NaN;
        const w: IdleWindow = {
          seconds,
          cpuPercent: ((a1.cpuNs - a0.cpuNs) / 1e9 / seconds) * 100,
          mainCpuPercent: ((a1.mainCpuNs - a0.mainCpuNs) / 1e9 / seconds) * 100,
          mainWakeupsPerSecond: (a1.mainSwitches - a0.mainSwitches) / seconds,
          wakeupsPerSecond: (a1.switches - a0.switches) / seconds,
          threads: a1.threads,
          rssBytes: statusBytes(agent.pid, 'VmRSS'),
          heapUsedBytes: gauge('bta_nodejs_heap_size_used_bytes'),
          heapTotalBytes: gauge('bta_nodejs_heap_size_total_bytes'),
          externalBytes: gauge('bta_nodejs_external_memory_bytes'),
          browserCpuPercent: ((b1 - b0) / seconds) * 100,
          frames: frames1 - frames0,
          floorCpuPercent: ((f1.cpuNs - f0.cpuNs) / 1e9 / seconds) * 100,
          floorWakeupsPerSecond: (f1.switches - f0.switches) / seconds,
        };
        windows.push(w);
        ctx.log(
          `[idle] ${IDLE_TABS} idle tabs, ${seconds.toFixed(0)} s: agent ${w.cpuPercent.toFixed(3)}% of a core, ${w.mainWakeupsPerSecond.toFixed(1)} wake-ups/s of its event loop (${w.wakeupsPerSecond.toFixed(1)} all threads), RSS ${(w.rssBytes / 2 ** 20).toFixed(0)} MB (heap ${(w.heapUsedBytes / 2 ** 20).toFixed(1)} of ${(w.heapTotalBytes / 2 ** 20).toFixed(1)} MB, external ${(w.externalBytes / 2 ** 20).toFixed(1)} MB), ${w.frames} frames; the probe floor ${w.floorCpuPercent.toFixed(3)}% at ${w.floorWakeupsPerSecond.toFixed(1)} wake-ups/s`,
        );
      } finally {
        await ctx.subscribers.closeAll();
        await Promise.all([agent.stop(), floor.stop()]);
      }
    } finally {
      await browser.close();
    }
  }
  const sorted = [...windows].sort((a, b) => a.cpuPercent - b.cpuPercent);
  return { options, windows, median: sorted[Math.floor((sorted.length - 1) / 2)]! };
}
