// Section 3, latency and fan-out. A page logs 10 numbered lines every 10 ms (1,000 events/s) while
// N SSE subscribers read the stream, in several configurations interleaved over repetitions. The
// agent host stamps CLOCK_MONOTONIC when each raw CDP message carrying a marker arrives (before
// the agent parses it); the subscribers process stamps CLOCK_MONOTONIC when the frame's bytes are
// read from each subscriber's socket. The difference is the agent's latency, Node's socket
// delivery included. Agent CPU is utime+stime of the host process over the window.

import { BenchBrowser } from '../clients/chromium.ts';
import type { StartAgentOptions } from '../../src/agent.ts';
import { AgentHost, BareClient } from '../clients/consumers.ts';
import { rotate, type BenchContext } from '../lib/context.ts';
import { LATENCY_MARKER } from '../lib/pages.ts';
import { cpuSeconds, monoMs, sleep } from '../lib/processes.ts';
import { median, type Summary } from '../lib/stats.ts';

export interface LatencyOptions {
  reps: number;
  /** Duration of the steady logging per window (ms). */
  windowMs: number;
  /**
   * Also measure the floor on a bare ws 8 transport (no chrome-remote-interface), and the relay:
   * the ws 8 floor also writing every raw CDP message to 1 and 10 subscribers as the agent writes.
   */
  diagnose: boolean;
  configs: FanOut[];
}

export interface FanOut {
  name: string;
  readers: number;
  stalled: number;
  /** Run this window on an agent without the durable store (--data-dir none). */
  noStore?: boolean;
  /** Run this window on an agent exporting every event over OTLP (to bench/lib/otlp-sink.ts). */
  otlp?: boolean;
  /** Run this window on an agent without fan-out pacing (--stream-pace-ms 0). */
  unpaced?: boolean;
}

/** The agent options of a window that needs an agent of its own; undefined: the usual agent. */
function agentOptionsOf(config: FanOut): StartAgentOptions | undefined {
  if (config.noStore) return { dataDir: 'none' };
  if (config.otlp) return { otlp: { url: `${process.env.BENCH_OTLP_URL}/v1/logs` } };
  if (config.unpaced) return { streamPaceMs: 0 };
  return undefined;
}

/** Steady logging before an agent's first measured window (each agent is a fresh process). */
const WARMUP_MS = 2000;

export const FAN_OUTS: FanOut[] = [
  { name: '1 subscriber', readers: 1, stalled: 0 },
  { name: '10 subscribers', readers: 10, stalled: 0 },
  { name: '10 subscribers, no store', readers: 10, stalled: 0, noStore: true },
  { name: '10 subscribers, OTLP on', readers: 10, stalled: 0, otlp: true },
  { name: '10 subscribers, unpaced', readers: 10, stalled: 0, unpaced: true },
  { name: '10 + 1 stalled', readers: 10, stalled: 1 },
  { name: '50 (1 stalled)', readers: 49, stalled: 1 },
];

export interface LatencyWindow {
  pooled: Summary;
  /** Highest p99 of any single reader. */
  worstReaderP99: number;
  /** Agent CPU (% of one core) while the steady 1k events/s ran: first to last marked message. */
  cpuPercent: number;
  /** The kernel (system) part of cpuPercent. */
  systemPercent: number;
  /** The same from /proc utime+stime over the whole window (page load and tail included). */
  cpuPercentWindow: number;
  /** Marker lines per second delivered to a reader. */
  eventsPerSecond: number;
  /** Seq gaps over the non-stalled readers. */
  readerGaps: number;
  /** Markers the agent received that some reader never got. */
  lost: number;
  /** Marked CDP messages per tick at the agent (how many one socket write carries today). */
  messagesPerTick: number;
  /** Marked CDP messages per event-loop iteration (how many a write per iteration would carry). */
  messagesPerIteration: number;
}

/** The bare CDP client during the same steady 1k events/s: what receiving them costs Node. */
export interface FloorWindow {
  cpuPercent: number;
  eventsPerSecond: number;
}

/** --diagnose: the bare client relaying raw CDP messages to `readers` subscribers. */
export interface RelayWindow extends FloorWindow {
  readers: number;
  /** Marker lines per second delivered to a reader. */
  readerEventsPerSecond: number;
  /** Socket writes per second over all subscribers. */
  writesPerSecond: number;
  /** CDP messages per tick, i.e. per write to one subscriber (the agent's: messagesPerTick). */
  messagesPerTick: number;
}

export interface FanOutResult {
  config: FanOut;
  windows: LatencyWindow[];
  median: { p50: number; p99: number; cpuPercent: number; eventsPerSecond: number };
  spread: { p50: [number, number]; p99: [number, number]; cpuPercent: [number, number] };
}

export interface LatencyResult {
  options: LatencyOptions;
  configs: FanOutResult[];
  floor: { windows: FloorWindow[]; medianCpuPercent: number };
  /** --diagnose: the same bare client on ws 8 instead of chrome-remote-interface. */
  floorWs8?: { windows: FloorWindow[]; medianCpuPercent: number };
  /** --diagnose: the relay (see LatencyOptions.diagnose), per number of subscribers. */
  relay?: Array<{ readers: number; windows: RelayWindow[]; medianCpuPercent: number }>;
}

export async function runLatency(ctx: BenchContext, options: LatencyOptions): Promise<LatencyResult> {
  const { pages, subscribers } = ctx;
  const browser = await BenchBrowser.launch(pages.idleUrl);
  const profileDir = ctx.profileDir ? `${ctx.profileDir}/latency` : undefined;
  let host = await AgentHost.start({ cdpUrl: browser.httpUrl }, profileDir);
  const windows = new Map<string, LatencyWindow[]>(options.configs.map((c) => [c.name, []]));
  const floorWindows: FloorWindow[] = [];
  const floorWs8Windows: FloorWindow[] = [];
  const relayWindows: RelayWindow[] = [];
  let base = 1_000_000;

  /** A short steady window, not kept: the agent's hot paths compiled before a measured window. */
  const warmUp = async (): Promise<void> => {
    await pages.runChain([`/p/steady?base=0&ms=${WARMUP_MS}`], 30_000);
    await pages.waitIdle();
  };
  /** Replace the agent by one started with `options` (none: the usual one), warmed up as the first one was. */
  const swapHost = async (options: StartAgentOptions): Promise<true> => {
    await host.stop();
    host = await AgentHost.start({ cdpUrl: browser.httpUrl, ...options }, profileDir);
    await pages.waitIdle();
    await warmUp();
    return true;
  };
  /** One steady window with the bare client attached too, measuring the bare client only. */
  const floorWindow = async (transport: 'cri' | 'ws8'): Promise<void> => {
    const bare = await BareClient.start({ wsUrl: browser.wsUrl, consolePrefix: LATENCY_MARKER, cpuOfMatched: true, transport });
    try {
      base += 1_000_000;
      await sleep(300);
      await pages.runChain([`/p/steady?base=${base}&ms=${options.windowMs}`], options.windowMs + 60_000);
      await sleep(300);
      const s = await bare.stats();
      const spanS = (s.lastMatchAt - s.firstMatchAt) / 1000;
      const w = { cpuPercent: s.matchedCpuSpanMs > 0 ? (s.matchedCpuMicros / 1000 / s.matchedCpuSpanMs) * 100 : NaN, eventsPerSecond: s.matched / spanS };
      (transport === 'cri' ? floorWindows : floorWs8Windows).push(w);
      ctx.log(
        `[latency] bare CDP client (floor${transport === 'ws8' ? ', ws 8 transport' : ''}): cpu ${w.cpuPercent.toFixed(1)}%, ${Math.round(w.eventsPerSecond)} ev/s`,
      );
    } finally {
      await bare.stop();
      await pages.waitIdle();
    }
  };
  /** One steady window of the relay with `readers` subscribers on it. */
  const relayWindow = async (readers: number): Promise<void> => {
    const bare = await BareClient.start({ wsUrl: browser.wsUrl, transport: 'ws8', consolePrefix: LATENCY_MARKER, cpuOfMatched: true, relay: true });
    try {
      base += 1_000_000;
      const url = (await bare.stats()).relayUrl!;
      // The relay's frames are raw CDP messages: `"type":"log"` is in every console.log call's.
      await subscribers.open({ url, readers, stalled: 0, match: { type: 'log', contains: LATENCY_MARKER } });
      await sleep(300);
      await pages.runChain([`/p/steady?base=${base}&ms=${options.windowMs}`], options.windowMs + 60_000);
      await sleep(300);
      const s = await bare.stats();
      const reader = (await subscribers.stats())[0]!;
      await subscribers.closeAll();
      const spanS = (s.lastMatchAt - s.firstMatchAt) / 1000;
      const w: RelayWindow = {
        readers,
        cpuPercent: s.matchedCpuSpanMs > 0 ? (s.matchedCpuMicros / 1000 / s.matchedCpuSpanMs) * 100 : NaN,
        eventsPerSecond: s.matched / spanS,
        readerEventsPerSecond: reader.matched / ((reader.lastMatchAt - reader.firstMatchAt) / 1000),
        writesPerSecond: (s.relayWritesAtLastMatch! - s.relayWritesAtFirstMatch!) / spanS,
        messagesPerTick: s.relayed! / s.relayTicks!,
      };
      relayWindows.push(w);
      ctx.log(
        `[latency] relay, ${readers} subscriber(s): cpu ${w.cpuPercent.toFixed(1)}%, ${Math.round(w.eventsPerSecond)} ev/s, ${Math.round(w.readerEventsPerSecond)} ev/s at a reader, ${Math.round(w.writesPerSecond)} writes/s, ${w.messagesPerTick.toFixed(1)} msgs/tick`,
      );
    } finally {
      await bare.stop();
      await pages.waitIdle();
    }
  };
  try {
    await pages.waitIdle();
    await warmUp();

    for (let rep = 0; rep < options.reps; rep++) {
      await floorWindow('cri');
      if (options.diagnose) {
        await floorWindow('ws8');
        for (const readers of rotate([1, 10], rep)) await relayWindow(readers);
      }
      for (const config of rotate(options.configs, rep)) {
        // A cost on its own (the store, OTLP, pacing): the same window on an agent configured for it, the other agent stopped meanwhile.
        const agentOptions = agentOptionsOf(config);
        const swapped = agentOptions === undefined ? false : await swapHost(agentOptions);
        base += 1_000_000;
        const count = options.windowMs + 2000;
        await subscribers.open({
          url: host.streamUrl,
          readers: config.readers,
          stalled: config.stalled,
          match: { type: 'console_log', contains: LATENCY_MARKER },
          marks: { base, count },
        });
        await sleep(300);
        await host.setMarkPrefix(LATENCY_MARKER);
        const cpu0 = cpuSeconds(host.pid);
        const t0 = monoMs();
        await pages.runChain([`/p/steady?base=${base}&ms=${options.windowMs}`], options.windowMs + 60_000);
        await sleep(300); // the last lines' way through
        const cpu = cpuSeconds(host.pid) - cpu0;
        const elapsed = monoMs() - t0;
        ctx.profileWindow(profileDir, t0, monoMs(), config.name);
        const taken = await host.takeMarks();
        const agentMarks = taken.marks.filter(([n]) => n >= base && n < base + count);
        await host.setMarkPrefix(null);
        const report = await subscribers.latency({ agentMarks });
        const stats = (await subscribers.stats()).filter((s) => !s.stalled);
        await subscribers.closeAll();
        await pages.waitIdle();

        const first = stats[0]!;
        const window: LatencyWindow = {
          pooled: report.pooled,
          worstReaderP99: Math.max(...report.perReader.map((r) => r.summary.p99)),
          cpuPercent: taken.cpuSpanMs > 0 ? (taken.cpuMicros / 1000 / taken.cpuSpanMs) * 100 : NaN,
          systemPercent: taken.cpuSpanMs > 0 ? (taken.systemMicros / 1000 / taken.cpuSpanMs) * 100 : NaN,
          cpuPercentWindow: (cpu / (elapsed / 1000)) * 100,
          eventsPerSecond: first.matched / ((first.lastMatchAt - first.firstMatchAt) / 1000),
          readerGaps: stats.reduce((sum, s) => sum + s.gaps, 0),
          lost: report.perReader.reduce((sum, r) => sum + r.lost, 0),
          messagesPerTick: taken.ticks > 0 ? taken.marks.length / taken.ticks : NaN,
          messagesPerIteration: taken.iterations > 0 ? taken.marks.length / taken.iterations : NaN,
        };
        windows.get(config.name)!.push(window);
        if (swapped) await swapHost({});
        ctx.log(
          `[latency] rep ${rep + 1}/${options.reps} ${config.name}: p50 ${window.pooled.p50.toFixed(2)} ms, p99 ${window.pooled.p99.toFixed(2)} ms, ` +
            `cpu ${window.cpuPercent.toFixed(1)}% (sys ${window.systemPercent.toFixed(1)}%, whole window ${window.cpuPercentWindow.toFixed(1)}%), ${Math.round(window.eventsPerSecond)} ev/s, ${window.messagesPerTick.toFixed(1)} msgs/tick, ${window.messagesPerIteration.toFixed(1)} msgs/iteration, gaps ${window.readerGaps}, lost ${window.lost}`,
        );
      }
    }
  } finally {
    await host.stop();
    await browser.close();
  }

  return {
    options,
    floor: { windows: floorWindows, medianCpuPercent: median(floorWindows.map((w) => w.cpuPercent)) },
    ...(options.diagnose
      ? {
          floorWs8: { windows: floorWs8Windows, medianCpuPercent: median(floorWs8Windows.map((w) => w.cpuPercent)) },
          relay: [1, 10].map((readers) => {
            const w = relayWindows.filter((x) => x.readers === readers);
            return { readers, windows: w, medianCpuPercent: median(w.map((x) => x.cpuPercent)) };
          }),
        }
      : {}),
    configs: options.configs.map((config) => {
      const w = windows.get(config.name)!;
      const range = (values: number[]): [number, number] => [Math.min(...values), Math.max(...values)];
      const p50s = w.map((x) => x.pooled.p50);
      const p99s = w.map((x) => x.pooled.p99);
      const cpus = w.map((x) => x.cpuPercent);
      return {
        config,
        windows: w,
        median: { p50: median(p50s), p99: median(p99s), cpuPercent: median(cpus), eventsPerSecond: median(w.map((x) => x.eventsPerSecond)) },
        spread: { p50: range(p50s), p99: range(p99s), cpuPercent: range(cpus) },
      };
    }),
  };
}
