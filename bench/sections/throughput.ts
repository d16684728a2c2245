// Section 2, throughput and drops. Two workloads in one page each: a console.log flood and 2,000
// fetches. Each runs once per arm and repetition, the arms interleaved (agent, floor, floor,
// agent, ...), every arm in a fresh process so its peak RSS (VmHWM) is its own:
// - agent: the agent host attached to the browser, all categories, one SSE subscriber in the
//   subscribers process (which counts the workload's events, their arrival times and seq gaps);
// - floor: the bare CDP client (same domains, same targets), counting the same CDP events.
// With --diagnose, more agent arms split the agent's cost: 10 subscribers instead of one (the cost
// of fan-out), and no response body fetches (their cost, in the fetch workload); and the floor on a
// bare ws 8 transport instead of chrome-remote-interface (what the CDP client library costs).
// CPU is utime+stime of the consumer process from /proc over the workload's window.

import type { StartAgentOptions } from '../../src/agent.ts';
import { BenchBrowser } from '../clients/chromium.ts';
import { AgentHost, BareClient } from '../clients/consumers.ts';
import { rotate, type BenchContext } from '../lib/context.ts';
import { FETCH_PATH, FLOOD_MARKER } from '../lib/pages.ts';
import { cpuTimes, monoMs, sleep, statusBytes } from '../lib/processes.ts';
import type { FrameMatch } from '../clients/sse-reader.ts';
import type { HostMemory } from '../clients/agent-host.ts';
import { median } from '../lib/stats.ts';

export interface ThroughputOptions {
  reps: number;
  floodLines: number;
  fetches: number;
  /** Add the diagnostic agent arms. */
  diagnose: boolean;
}

interface Workload {
  name: 'console flood' | 'fetches';
  path: string;
  expected: number;
  sse: FrameMatch;
  bare: { consolePrefix?: string; fetchPath?: string };
  /** What one unit of work is (for display). */
  unit: string;
}

interface Arm {
  name: string;
  kind: 'agent' | 'floor';
  /** Floor only: the bare client's CDP transport. */
  transport?: 'cri' | 'ws8';
  readers?: number;
  agent?: StartAgentOptions;
  /** Only for this workload. */
  only?: Workload['name'];
}

const ARMS: Arm[] = [
  { name: 'agent', kind: 'agent', readers: 1 },
  { name: 'floor', kind: 'floor' },
];
const DIAGNOSTIC_ARMS: Arm[] = [
  { name: 'agent, 10 subscribers', kind: 'agent', readers: 10 },
  { name: 'agent, no body fetches', kind: 'agent', readers: 1, agent: { limits: { maxBodyFetchBytes: 1 } }, only: 'fetches' },
  { name: 'floor on ws 8 (no chrome-remote-interface)', kind: 'floor', transport: 'ws8' },
];

export interface ArmRun {
  /** Workload units (lines, responses) that reached the consumer. */
  received: number;
  expected: number;
  /** Units per second at the consumer (first to last arrival). */
  unitsPerSecond: number;
  /** All events in the window (SSE frames of one subscriber, or CDP events for the floor). */
  events: number;
  eventsPerSecond: number;
  cpuSeconds: number;
  /** The kernel part of cpuSeconds (socket reads and writes). */
  systemCpuSeconds: number;
  cpuSecondsPer10kEvents: number;
  peakRssBytes: number;
  /** SSE only (the first subscriber). */
  seqGaps?: number;
  missing?: number;
  /** The page's own duration of the workload (ms). */
  pageMs: number;
  /** Agent only: memoryUsage() sampled every 100 ms in the window, the sample with the most RSS. */
  memoryAtPeak?: HostMemory;
}

export interface ArmSummary {
  arm: string;
  runs: ArmRun[];
  unitsPerSecond: number;
  cpuSecondsPer10kEvents: number;
  /** CPU per unit of page work (µs). */
  cpuMicrosPerUnit: number;
  systemShare: number;
  peakRssBytes: number;
  seqGaps: number;
}

export interface WorkloadResult {
  name: string;
  unit: string;
  arms: ArmSummary[];
  /** Agent CPU / floor CPU per unit of the same page work (medians): CPU per event vs the floor. */
  cpuRatio: number;
}

export interface ThroughputResult {
  options: ThroughputOptions;
  workloads: WorkloadResult[];
}

export async function runThroughput(ctx: BenchContext, options: ThroughputOptions): Promise<ThroughputResult> {
  const { pages, subscribers } = ctx;
  const workloads: Workload[] = [
    {
      name: 'console flood',
      path: `/p/flood?n=${options.floodLines}`,
      expected: options.floodLines,
      sse: { type: 'console_log', contains: FLOOD_MARKER },
      bare: { consolePrefix: FLOOD_MARKER },
      unit: 'lines',
    },
    {
      name: 'fetches',
      path: `/p/fetches?n=${options.fetches}`,
      expected: options.fetches,
      // The full URL: the page's own HTML (whose body is in its network_response) has the path too.
      sse: { type: 'network_response', contains: pages.url(FETCH_PATH) },
      bare: { fetchPath: FETCH_PATH },
      unit: 'responses',
    },
  ];
  const arms = options.diagnose ? [...ARMS, ...DIAGNOSTIC_ARMS] : ARMS;
  const browser = await BenchBrowser.launch(pages.idleUrl);
  const runs = new Map<string, ArmRun[]>();
  let profileIndex = 0;

  /** Run the workload page; wait until the consumer got every unit or went quiet for 3 s. */
  const drive = async (
    w: Workload,
    pid: number,
    profileDir: string | undefined,
    progress: () => Promise<{ received: number; events: number; first: number; last: number; gaps?: number; missing?: number }>,
  ): Promise<ArmRun> => {
    await sleep(300);
    const t0 = monoMs();
    const cpu0 = cpuTimes(pid);
    const [beacon] = await pages.runChain([w.path], 180_000);
    let last = await progress();
    let quietSince = monoMs();
    while (last.received < w.expected && monoMs() - quietSince < 3000) {
      await sleep(100);
      const now = await progress();
      if (now.received !== last.received) quietSince = monoMs();
      last = now;
    }
    const cpu1 = cpuTimes(pid);
    ctx.profileWindow(profileDir, t0, monoMs());
    const cpu = cpu1.user + cpu1.system - cpu0.user - cpu0.system;
    // Over the page's own duration at least: the agent emits the fetches page's responses in
    // batches (their bodies wait for the tab to go quiet, docs/network.md), so the span from the
    // first to the last is shorter than the page's work.
    const spanS = Math.max((last.last - last.first) / 1000, (beacon?.metric ?? 0) / 1000);
    const run: ArmRun = {
      received: last.received,
      expected: w.expected,
      unitsPerSecond: spanS > 0 ? last.received / spanS : NaN,
      events: last.events,
      eventsPerSecond: spanS > 0 ? last.events / spanS : NaN,
      cpuSeconds: cpu,
      systemCpuSeconds: cpu1.system - cpu0.system,
      cpuSecondsPer10kEvents: last.events > 0 ? (cpu / last.events) * 10_000 : NaN,
      peakRssBytes: statusBytes(pid, 'VmHWM'),
      pageMs: beacon?.metric ?? NaN,
    };
    if (last.gaps !== undefined) run.seqGaps = last.gaps;
    if (last.missing !== undefined) run.missing = last.missing;
    return run;
  };

  const runAgent = async (w: Workload, arm: Arm): Promise<ArmRun> => {
    const profileDir = ctx.profileDir ? `${ctx.profileDir}/throughput-${profileIndex++}-${`${w.name} ${arm.name}`.replace(/\W+/g, '-')}` : undefined;
    const host = await AgentHost.start({ cdpUrl: browser.httpUrl, ...arm.agent }, profileDir);
    let memoryAtPeak: HostMemory | undefined;
    const sampler = setInterval(() => {
      void host.memory(false).then(
        (m) => {
          if (!memoryAtPeak || m.rss > memoryAtPeak.rss) memoryAtPeak = m;
        },
        () => undefined,
      );
    }, 100);
    try {
      await subscribers.open({ url: host.streamUrl, readers: arm.readers ?? 1, stalled: 0, match: w.sse });
      const run = await drive(w, host.pid, profileDir, async () => {
        const s = (await subscribers.stats())[0]!;
        return { received: s.matched, events: s.frames, first: s.firstMatchAt, last: s.lastMatchAt, gaps: s.gaps, missing: s.missing };
      });
      if (memoryAtPeak) run.memoryAtPeak = memoryAtPeak;
      return run;
    } finally {
      clearInterval(sampler);
      await subscribers.closeAll();
      await host.stop();
      await pages.waitIdle();
    }
  };

  const runFloor = async (w: Workload, arm: Arm): Promise<ArmRun> => {
    const bare = await BareClient.start({ wsUrl: browser.wsUrl, transport: arm.transport, ...w.bare });
    try {
      return await drive(w, bare.pid, undefined, async () => {
        const s = await bare.stats();
        return { received: s.matched, events: s.events, first: s.firstMatchAt, last: s.lastMatchAt };
      });
    } finally {
      await bare.stop();
      await pages.waitIdle();
    }
  };

  try {
    await pages.waitIdle();
    for (let rep = 0; rep < options.reps; rep++) {
      for (const w of workloads) {
        for (const arm of rotate(arms, rep)) {
          if (arm.only && arm.only !== w.name) continue;
          const run = arm.kind === 'agent' ? await runAgent(w, arm) : await runFloor(w, arm);
          const key = `${w.name}/${arm.name}`;
          runs.set(key, [...(runs.get(key) ?? []), run]);
          const gaps = run.seqGaps === undefined ? '' : `, seq gaps ${run.seqGaps}`;
          ctx.log(
            `[throughput] rep ${rep + 1}/${options.reps} ${w.name}, ${arm.name}: ${run.received}/${run.expected} ${w.unit}, ` +
              `${Math.round(run.unitsPerSecond)}/s, cpu ${run.cpuSeconds.toFixed(2)} s (sys ${run.systemCpuSeconds.toFixed(2)}), ` +
              `peak rss ${(run.peakRssBytes / 2 ** 20).toFixed(0)} MB${gaps}${atPeak(run.memoryAtPeak)}`,
          );
        }
      }
    }
  } finally {
    await browser.close();
  }

  return {
    options,
    workloads: workloads.map((w) => {
      const summaries: ArmSummary[] = [];
      for (const arm of arms) {
        const armRuns = runs.get(`${w.name}/${arm.name}`);
        if (!armRuns) continue;
        summaries.push({
          arm: arm.name,
          runs: armRuns,
          unitsPerSecond: median(armRuns.map((r) => r.unitsPerSecond)),
          cpuSecondsPer10kEvents: median(armRuns.map((r) => r.cpuSecondsPer10kEvents)),
          // Per unit of page work, so an arm that missed some units is not flattered.
          cpuMicrosPerUnit: median(armRuns.map((r) => (r.cpuSeconds / r.received) * 1e6)),
          systemShare: median(armRuns.map((r) => r.systemCpuSeconds / r.cpuSeconds)),
          peakRssBytes: Math.max(...armRuns.map((r) => r.peakRssBytes)),
          seqGaps: Math.max(...armRuns.map((r) => r.seqGaps ?? 0)),
        });
      }
      const of = (name: string) => summaries.find((s) => s.arm === name)!;
      return { name: w.name, unit: w.unit, arms: summaries, cpuRatio: of('agent').cpuMicrosPerUnit / of('floor').cpuMicrosPerUnit };
    }),
  };
}

/** What the largest RSS sample was made of (log line). */
function atPeak(m: HostMemory | undefined): string {
  if (!m) return '';
  const mb = (b: number) => (b / 2 ** 20).toFixed(0);
  return ` (sampled max rss ${mb(m.rss)}: heap ${mb(m.heapUsed)}/${mb(m.heapTotal)}, external ${mb(m.external)}, arrayBuffers ${mb(m.arrayBuffers)} MB)`;
}
