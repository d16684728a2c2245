// The printed report (Markdown tables, so a run can be pasted into docs/performance.md) and the
// budget lines, each PASS or FAIL against the measured value.

import { IDLE_TABS, type IdleResult } from '../sections/idle.ts';
import type { FanOutResult, LatencyResult } from '../sections/latency.ts';
import { labelLetter, totalCpu, type PageLoadResult, type RatioResult } from '../sections/page-load.ts';
import type { ReconnectResult } from '../sections/reconnect.ts';
import type { SoakResult } from '../sections/soak.ts';
import type { StoreResult } from '../sections/store.ts';
import type { CdpProxyResult } from '../sections/cdp-proxy.ts';
import type { McpResult } from '../sections/mcp.ts';
import type { ThroughputResult } from '../sections/throughput.ts';
import { renderReplay, replayBudget, type ReplayResult } from '../sections/replay.ts';
import { renderSnapshot, snapshotBudget, type SnapshotResult } from '../sections/snapshot.ts';
import { bootstrapDifference, bootstrapQuantile, median } from './stats.ts';

export interface Results {
  load?: PageLoadResult;
  throughput?: ThroughputResult;
  latency?: LatencyResult;
  reconnect?: ReconnectResult;
  soak?: SoakResult;
  idle?: IdleResult;
  store?: StoreResult;
  cdp?: CdpProxyResult;
  mcp?: McpResult;
  replay?: ReplayResult;
  snapshot?: SnapshotResult;
}

export interface BudgetLine {
  line: string;
  limit: string;
  measured: string;
  pass: boolean;
}

const MB = 2 ** 20;

function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(headers), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

const f = (v: number, digits = 1): string => (Number.isFinite(v) ? v.toFixed(digits) : 'n/a');
const ci = ([lo, hi]: [number, number]): string => `[${f(lo, 2)}–${f(hi, 2)}]`;

export function renderReport(results: Results): string {
  const out: string[] = [];
  const { load, throughput, latency, reconnect, soak, idle } = results;
  if (load) {
    out.push(
      `### 1. Page-load overhead (ms from navigation start; ${load.options.rounds} rounds × ${load.options.loadsPerBlock} loads per mode and page, interleaved, each block after ${load.options.warmupLoads ?? 1} unmeasured loads of each page${load.options.pin ? '; pinned: Chromium and the page server on CPU 0, the client and its subscriber on CPU 1' : ''})`,
    );
    const rows: string[][] = [];
    for (const m of load.modes) {
      for (const page of load.options.pages) {
        const { summary, roundMedians, cpu } = m.byPage[page]!;
        rows.push([
          m.label,
          page,
          String(summary.n),
          f(summary.p50),
          f(summary.p90),
          `${f(summary.p10)}–${f(summary.max)}`,
          `${f(Math.min(...roundMedians))}–${f(Math.max(...roundMedians))}`,
          m.mode === 'none' ? '' : f(cpu.client),
          cpu.subscriber === undefined ? '' : f(cpu.subscriber),
          f(cpu.browser),
          f(totalCpu(cpu)),
        ]);
      }
    }
    out.push(table(['mode', 'page', 'n', 'p50', 'p90', 'p10–max', 'round medians', 'CPU ms/load: client', 'subscriber', 'Chromium', 'all'], rows));
    const perMode = load.modes
      .filter((m) => m.mode !== 'none')
      .map((m) => {
        const stream =
          m.eventsPerLoad === undefined ? '' : `, ${f(m.eventsPerLoad, 0)} events and ${f(m.subscriberReadsPerLoad ?? NaN, 0)} subscriber reads per load`;
        const bodies =
          m.bodyFetchesPerLoad === undefined ? '' : `, ${f(m.bodyFetchesPerLoad.fetched)} bodies fetched and ${f(m.bodyFetchesPerLoad.failed)} not per load`;
        const shots = m.screenshotsPerLoad === undefined ? '' : `, ${f(m.screenshotsPerLoad, 2)} screenshots per load`;
        const warmup = m.warmupCpuMsPerLoad === undefined ? '' : ` (${f(m.warmupCpuMsPerLoad)} ms in the warm-up)`;
        return `${labelLetter(m.mode)} client ${f(m.cpuMsPerLoad ?? NaN)} ms${warmup}${stream}${bodies}${shots}`;
      });
    out.push(
      '',
      `All pages: CPU per load ${perMode.join('; ')}. A page's CPU is what was used between its beacon and the one before; the warm-up's, over the block's unmeasured loads (a new process, its JIT still compiling).`,
    );
    const ratioRows: string[][] = [];
    for (const [name, ratios] of Object.entries(load.ratios)) {
      for (const r of ratios) ratioRows.push([name, r.page, f(r.p50, 3), ci(r.p50Ci), f(r.p90, 3), ci(r.p90Ci), f(r.cpu, 3)]);
    }
    if (ratioRows.length) out.push('', table(['ratio', 'page', 'p50', 'p50 95% CI', 'p90', 'p90 95% CI', 'all CPU per load'], ratioRows));
    out.push('');
  }
  if (throughput) {
    out.push(`### 2. Throughput and drops (${throughput.options.reps} runs per arm, interleaved; medians)`);
    const rows: string[][] = [];
    for (const w of throughput.workloads) {
      for (const a of w.arms) {
        rows.push([
          w.name,
          a.arm,
          `${f(a.unitsPerSecond, 0)} ${w.unit}/s`,
          f(a.cpuMicrosPerUnit, 0),
          `${f(a.systemShare * 100, 0)}%`,
          f(a.cpuSecondsPer10kEvents, 3),
          a.arm.startsWith('floor') ? '' : String(a.seqGaps),
          f(a.peakRssBytes / MB, 0),
        ]);
      }
      rows.push([w.name, 'agent / floor CPU per unit', `${f(w.cpuRatio, 2)}×`, '', '', '', '', '']);
    }
    out.push(
      table(['workload', 'arm', 'delivered', 'CPU µs per unit', 'kernel share', 'CPU s per 10k events', 'seq gaps', 'peak RSS MB'], rows),
      'Events are SSE frames for the agent arms, CDP events for the floor (the bare client).',
      '',
    );
  }
  if (latency) {
    out.push(
      `### 3. Latency and fan-out at 1,000 events/s (CDP arrival → subscriber socket; ${latency.options.reps} windows of ${latency.options.windowMs / 1000} s per config)`,
    );
    const rows = latency.configs.map((c) => [
      c.config.name,
      f(c.median.p50, 2),
      `${f(c.spread.p50[0], 2)}–${f(c.spread.p50[1], 2)}`,
      f(c.median.p99, 2),
      `${f(c.spread.p99[0], 2)}–${f(c.spread.p99[1], 2)}`,
      f(c.median.cpuPercent),
      `${f(c.spread.cpuPercent[0])}–${f(c.spread.cpuPercent[1])}`,
      f(c.median.eventsPerSecond, 0),
      String(c.windows.reduce((s, w) => s + w.readerGaps + w.lost, 0)),
    ]);
    out.push(table(['subscribers', 'p50 ms', 'p50 range', 'p99 ms', 'p99 range', 'agent CPU %', 'CPU range', 'events/s', 'gaps+lost'], rows));
    const ws8 = latency.floorWs8 ? ` (on ws 8 without chrome-remote-interface: ${f(latency.floorWs8.medianCpuPercent)}%)` : '';
    out.push(`Floor: the bare CDP client receiving the same 1,000 events/s uses ${f(latency.floor.medianCpuPercent)}% of a core${ws8}.`);
    if (latency.relay) {
      const relay = latency.relay.map((r) => `${r.readers} subscriber${r.readers === 1 ? '' : 's'} ${f(r.medianCpuPercent)}%`).join(', ');
      out.push(`Relay (the floor also writing each raw CDP message to the subscribers, one write per subscriber per tick, as the agent writes): ${relay}.`);
    }
    out.push('');
  }
  if (reconnect) {
    out.push(`### 4. Reconnect (embedded mode, SIGKILL of the browser, ${reconnect.kills.length} kills)`);
    out.push(
      table(
        ['measure', 'p50 ms', 'range ms'],
        [
          [
            'kill → monitor_reconnected at subscriber',
            f(reconnect.median.reconnectedMs, 0),
            `${f(Math.min(...reconnect.kills.map((k) => k.reconnectedMs)), 0)}–${f(Math.max(...reconnect.kills.map((k) => k.reconnectedMs)), 0)}`,
          ],
          [
            'kill → first console line of the new browser',
            f(reconnect.median.firstEventMs, 0),
            `${f(reconnect.spread.firstEventMs[0], 0)}–${f(reconnect.spread.firstEventMs[1], 0)}`,
          ],
          ['agent-reported reconnect_duration_ms', f(reconnect.median.agentReportedMs, 0), ''],
        ],
      ),
      '',
    );
  }
  if (soak) {
    const from = soak.logFull ? `from a full event log (filled in ${f(soak.fillSeconds, 0)} s)` : 'the event log not yet full';
    out.push(
      `### 5. Soak (${soak.options.durationS} s measured, ${from}, after a ${soak.options.warmupS} s warm-up; ${soak.pageLoads} page loads, ${f(soak.eventsPerSecond, 0)} events/s)`,
    );
    // A measure of the agent's memory at each point, then its growth over the measured part and
    // since the warm-up: as the soak measured it where it did, else end minus start (or warm-up).
    // The event log's retained bytes are not sampled half-way.
    const memoryRow = (
      label: string,
      key: keyof SoakResult['end'],
      growth = soak.end[key] - soak.start[key],
      sinceWarm = soak.end[key] - soak.warm[key],
    ): string[] => [
      label,
      f(soak.warm[key] / MB),
      f(soak.start[key] / MB),
      key === 'retainedLogBytes' ? '' : f(soak.mid[key] / MB),
      f(soak.end[key] / MB),
      f(growth / MB),
      f(sinceWarm / MB),
    ];
    out.push(
      table(
        ['after GC', 'warm-up', 'start', 'half-way', 'end', 'growth start → end', 'growth warm-up → end'],
        [
          memoryRow('RSS MB', 'rss', soak.rssGrowthBytes, soak.rssGrowthSinceWarmBytes),
          memoryRow('heap used MB', 'heapUsed', soak.heapGrowthBytes),
          // memoryUsage().external includes arrayBuffers (Node Buffers: the log's frames among them).
          memoryRow('external (Buffers) MB', 'external'),
          memoryRow('event log retained MB', 'retainedLogBytes', soak.retainedLogGrowthBytes),
        ],
      ),
      `peak RSS ${f(soak.peakRssBytes / MB)} MB, RSS trend over the measured part ${f(soak.rssSlopeMbPerMin, 2)} MB/min, seq gaps ${soak.seqGaps}`,
      '',
    );
  }
  if (idle) {
    out.push(
      `### 6. Idle (${IDLE_TABS} loaded tabs doing nothing, the agent CLI with its defaults and one subscriber; ${idle.options.durationS} s after a ${idle.options.warmupS} s warm-up, ${idle.windows.length} run${idle.windows.length === 1 ? '' : 's'})`,
    );
    out.push(
      table(
        [
          'run',
          'agent CPU % of a core',
          'event-loop thread %',
          'wake-ups/s, event loop',
          'wake-ups/s, all threads',
          'threads',
          'RSS MB',
          'heap used / total MB',
          'Chromium CPU %',
          'frames',
        ],
        idle.windows.map((w, i) => [
          String(i + 1),
          f(w.cpuPercent, 3),
          f(w.mainCpuPercent, 3),
          f(w.mainWakeupsPerSecond, 1),
          f(w.wakeupsPerSecond, 1),
          String(w.threads),
          f(w.rssBytes / MB),
          `${f(w.heapUsedBytes / MB)} / ${f(w.heapTotalBytes / MB)}`,
          f(w.browserCpuPercent, 2),
          String(w.frames),
        ]),
      ),
      'Wake-ups are context switches (/proc/<pid>/task/*/status); the health probe accounts for about two a second (its timer and its answer).',
      '',
    );
  }
  const store = results.store;
  if (store) {
    out.push(`### 7. The durable store (${store.events.toLocaleString('en')} synthetic events; bench/sections/store.ts)`);
    out.push(
      table(
        ['measure', 'value'],
        [
          ['CPU per admitted event, RAM only', `${f(store.appendUsRam)} µs`],
          ['CPU per admitted event, with the store (writes in batches of 100)', `${f(store.appendUsStore)} µs`],
          ...store.historyPages.map((p) => [`history page of ${p.items} (${p.query}), p50 / p90`, `${f(p.p50Ms)} / ${f(p.p90Ms)} ms`]),
          [
            `resume ${store.resume.events.toLocaleString('en')} events back`,
            `${f(store.resume.seconds, 2)} s, ${Math.round(store.resume.eventsPerS).toLocaleString('en')} events/s`,
          ],
        ],
      ),
    );
  }
  const mcp = results.mcp;
  if (mcp) {
    out.push(`### The MCP tools (an hour of a session: ${mcp.events.toLocaleString('en')} events, ${f(mcp.storedMiB)} MiB stored; bench/sections/mcp.ts)`);
    out.push(
      table(
        ['call', 'CPU (p50)', 'wall (p50)', 'longest event-loop block (p50)', 'text to the model'],
        mcp.calls.map((c) => [c.call, `${f(c.cpuMs)} ms`, `${f(c.wallMs)} ms`, `${f(c.maxBlockMs)} ms`, `${c.textBytes.toLocaleString('en')} B`]),
      ),
    );
  }
  const cdp = results.cdp;
  if (cdp) {
    const rt = cdp.roundTrip;
    out.push(`### 8. The CDP proxy (bench/sections/cdp-proxy.ts)`);
    out.push(
      table(
        ['line', 'direct', 'through the agent'],
        [
          ['`Runtime.evaluate` of `1`, round trip p50', `${f(rt.directP50Ms, 3)} ms`, `${f(rt.agentP50Ms, 3)} ms`],
          ['round trip p99', `${f(rt.directP99Ms, 3)} ms`, `${f(rt.agentP99Ms, 3)} ms`],
          [
            `Playwright, ${cdp.options.steps} navigations + clicks, median of ${cdp.options.scripts}`,
            `${f(median(cdp.playwright.directMs), 0)} ms`,
            `${f(median(cdp.playwright.agentMs), 0)} ms (×${f(cdp.playwright.ratio, 3)})`,
          ],
          ['agent CPU per relayed message', '', `${f(cdp.cpuPerMessageUs)} µs`],
        ],
      ),
    );
  }
  if (results.replay) out.push(renderReplay(results.replay));
  if (results.snapshot) out.push(renderSnapshot(results.snapshot));
  return out.join('\n');
}

export function evaluateBudget(results: Results): BudgetLine[] {
  const lines: BudgetLine[] = [];
  const { load, throughput, latency, reconnect, soak, idle } = results;
  // Every page is reported; the budget holds on the worst one.
  const pageLines = (name: string, ratios: RatioResult[] | undefined, limits: Array<['p50' | 'p90', number]>) => {
    if (!ratios) return;
    for (const [q, limit] of limits) {
      const worst = Math.max(...ratios.map((r) => r[q]));
      const each = ratios.map((r) => `${r.page} ${f(r[q], 3)}`).join(', ');
      lines.push({
        line: `${name} page load ${q}, worst page`,
        limit: `≤ ${limit.toFixed(2)}`,
        measured: `worst ${f(worst, 3)} (${each})`,
        pass: worst <= limit,
      });
    }
  };
  pageLines('(c)/(b)', load?.ratios['(c)/(b)'], [
    ['p50', 1.03],
    ['p90', 1.06],
  ]);
  pageLines('(d)/(b), network only,', load?.ratios['(d)/(b)'], [['p50', 1.02]]);
  // Against the unmonitored browser, and beside a user's Playwright (docs/performance.md "Budget").
  pageLines('(c)/(a), agent against no client,', load?.ratios['(c)/(a)'], [['p50', 1.2]]);
  pageLines('(c+p)/(p), agent beside Playwright,', load?.ratios['(c+p)/(p)'], [['p50', 1.05]]);
  // The agent's CPU per load against the bare client's, per page (docs/performance.md "The agent's CPU per load").
  const agentMode = load?.modes.find((m) => m.mode === 'agent');
  const bareMode = load?.modes.find((m) => m.mode === 'bare');
  if (agentMode && bareMode) {
    const perPage = Object.entries(agentMode.byPage).flatMap(([page, a]) => {
      const b = bareMode.byPage[page as keyof typeof bareMode.byPage];
      return a && b && b.cpu.client > 0 ? [{ page, agent: a.cpu.client, bare: b.cpu.client, ratio: a.cpu.client / b.cpu.client }] : [];
    });
    if (perPage.length > 0) {
      const worst = Math.max(...perPage.map((p) => p.ratio));
      lines.push({
        line: "agent CPU per load / bare client's, worst page",
        limit: '≤ 1.30×',
        measured: `worst ${f(worst, 2)}× (${perPage.map((p) => `${p.page} ${f(p.agent)}/${f(p.bare)} ms ${f(p.ratio, 2)}×`).join(', ')})`,
        pass: worst <= 1.3,
      });
    }
  }
  const ten = latency?.configs.find((c) => c.config.readers === 10 && c.config.stalled === 0 && !c.config.noStore && !c.config.otlp);
  const tenNoStore = latency?.configs.find((c) => c.config.noStore);
  const tenOtlp = latency?.configs.find((c) => c.config.otlp);
  /** A configuration's per-window agent CPU, for the intervals of the CPU lines. */
  const cpuOf = (result: FanOutResult): number[] => result.windows.map((w) => w.cpuPercent);
  // What turning something on costs in agent CPU, in percentage points of a core: `on` over `off`.
  const cpuCostLine = (line: string, on: FanOutResult, off: FanOutResult, limitPoints: number): BudgetLine => {
    const extra = on.median.cpuPercent - off.median.cpuPercent;
    const ci = bootstrapDifference(cpuOf(on), cpuOf(off), 0.5);
    return {
      line,
      limit: `≤ +${limitPoints} point${limitPoints === 1 ? '' : 's'}`,
      measured: `${extra >= 0 ? '+' : ''}${f(extra, 2)} points [${f(ci[0], 2)}–${f(ci[1], 2)}] (${f(on.median.cpuPercent)}% vs ${f(off.median.cpuPercent)}%)`,
      pass: extra <= limitPoints,
    };
  };
  if (ten && tenOtlp) lines.push(cpuCostLine('OTLP export on: agent CPU at 1k events/s, 10 subscribers, over off', tenOtlp, ten, 2));
  if (ten && tenNoStore) lines.push(cpuCostLine('the durable store: agent CPU at 1k events/s, 10 subscribers, over --data-dir none', ten, tenNoStore, 1));
  // Unchanged within the noise: for every page of (c)/(b), its p50 ratio's 95% interval and
  // `other`'s overlap. `measured` shows the two p50s in the order `line` names them.
  const noiseLine = (line: string, cb: RatioResult[], other: RatioResult[], otherFirst: boolean): BudgetLine => {
    const pairs = cb.map((r) => [r, other.find((n) => n.page === r.page)] as const).filter((p) => p[1] !== undefined);
    const overlap = pairs.every(([a, b]) => a.p50Ci[0] <= b!.p50Ci[1] && b!.p50Ci[0] <= a.p50Ci[1]);
    const shown = pairs.map(([a, b]) => {
      const [first, second] = otherFirst ? [b!, a] : [a, b!];
      return `${a.page} ${f(first.p50, 3)} vs ${f(second.p50, 3)}`;
    });
    return { line, limit: 'within the noise (95% intervals overlap on every page)', measured: shown.join(', '), pass: overlap };
  };
  const cRatios = load?.ratios['(c)/(b)'];
  const otlpRatios = load?.ratios['(c-otlp)/(b)'];
  const noStoreRatios = load?.ratios['(c-nostore)/(b)'];
  if (cRatios && otlpRatios) lines.push(noiseLine('OTLP export on: page load (c-otlp)/(b) p50 vs (c)/(b)', cRatios, otlpRatios, true));
  if (cRatios && noStoreRatios) lines.push(noiseLine('the durable store: page load (c)/(b) p50 vs --data-dir none', cRatios, noStoreRatios, false));
  if (ten && latency) {
    const floor = latency.floor.medianCpuPercent;
    const cpu = ten.median.cpuPercent;
    const ci = bootstrapQuantile(cpuOf(ten), 0.5);
    lines.push({
      line: 'agent CPU at 1k events/s, 10 subscribers',
      limit: '≤ 8% of a core, or ≤ 1.5× the bare-client floor',
      measured: `${f(cpu)}% [${f(ci[0])}–${f(ci[1])}], ${f(cpu / floor, 2)}× the floor (${f(floor)}%)`,
      pass: cpu <= 8 || cpu <= 1.5 * floor,
    });
  }
  if (throughput) {
    const worst = Math.max(...throughput.workloads.map((w) => w.cpuRatio));
    const each = throughput.workloads.map((w) => `${w.name} ${f(w.cpuRatio, 2)}×`).join(', ');
    lines.push({ line: 'agent CPU per event vs bare floor', limit: '≤ 2.5×', measured: `worst ${f(worst, 2)}× (${each})`, pass: worst <= 2.5 });
  }
  if (ten) {
    lines.push({ line: 'latency p50, 1k events/s, 10 subscribers', limit: '≤ 2 ms', measured: `${f(ten.median.p50, 2)} ms`, pass: ten.median.p50 <= 2 });
    lines.push({ line: 'latency p99, 1k events/s, 10 subscribers', limit: '≤ 10 ms', measured: `${f(ten.median.p99, 2)} ms`, pass: ten.median.p99 <= 10 });
  }
  const stalled = latency?.configs.find((c) => c.config.readers === 10 && c.config.stalled > 0);
  if (ten && stalled) {
    const losses = stalled.windows.reduce((s, w) => s + w.readerGaps + w.lost, 0);
    // "Changes nothing" = within the noise seen between windows of the same config on this machine.
    const ok =
      stalled.median.p50 <= ten.median.p50 * 1.25 + 0.25 &&
      stalled.median.p99 <= ten.median.p99 * 1.25 + 1 &&
      stalled.median.cpuPercent <= ten.median.cpuPercent * 1.25 + 1 &&
      losses === 0;
    lines.push({
      line: 'a stalled subscriber changes nothing for the others',
      limit: '10+stalled ≈ 10 (p50 ≤ 1.25×+0.25 ms, p99 ≤ 1.25×+1 ms, CPU ≤ 1.25×+1 pt), no loss',
      measured: `p50 ${f(stalled.median.p50, 2)} vs ${f(ten.median.p50, 2)} ms, p99 ${f(stalled.median.p99, 2)} vs ${f(ten.median.p99, 2)} ms, CPU ${f(stalled.median.cpuPercent)} vs ${f(ten.median.cpuPercent)}%, gaps+lost ${losses}`,
      pass: ok,
    });
  }
  const flood = throughput?.workloads.find((w) => w.name === 'console flood');
  const floodAgent = flood?.arms.find((a) => a.arm === 'agent');
  if (floodAgent) {
    const gaps = Math.max(...floodAgent.runs.map((r) => r.seqGaps ?? 0));
    const missing = Math.max(...floodAgent.runs.map((r) => r.expected - r.received));
    lines.push({
      line: 'seq gaps for a non-stalled subscriber, console flood',
      limit: '0',
      measured: `${gaps} gaps, ${missing} lines not delivered`,
      pass: gaps === 0 && missing === 0,
    });
  }
  if (throughput) {
    const agentArms = throughput.workloads.flatMap((w) => w.arms.filter((a) => a.arm === 'agent'));
    const peak = Math.max(...agentArms.map((a) => a.peakRssBytes), soak?.peakRssBytes ?? 0);
    lines.push({ line: 'agent peak RSS (throughput runs and soak)', limit: '≤ 150 MB', measured: `${f(peak / MB)} MB`, pass: peak <= 150 * MB });
  }
  if (reconnect) {
    lines.push({
      line: 'reconnect, kill → first console line (p50)',
      limit: '≤ 2000 ms',
      measured: `${f(reconnect.median.firstEventMs, 0)} ms`,
      pass: reconnect.median.firstEventMs <= 2000,
    });
  }
  if (idle) {
    const w = idle.median;
    lines.push({
      line: `idle agent CPU (${IDLE_TABS} idle tabs, ${idle.options.durationS} s)`,
      limit: '≤ 0.1% of a core',
      measured: `${f(w.cpuPercent, 3)}% (${f(w.mainWakeupsPerSecond, 1)} wake-ups/s of the event loop, ${f(w.wakeupsPerSecond, 1)} of all threads; the probe floor ${f(w.floorCpuPercent, 3)}%)`,
      pass: w.cpuPercent <= 0.1,
    });
  }
  if (soak) {
    lines.push({
      line: `soak RSS growth over ${soak.options.durationS >= 120 ? `${f(soak.options.durationS / 60, 0)} min` : `${soak.options.durationS} s`}, ${soak.logFull ? 'from a full event log' : 'event log NOT full (quick run)'}`,
      limit: '≤ 10 MB',
      measured: `${f(soak.rssGrowthBytes / MB)} MB (heap used ${f(soak.heapGrowthBytes / MB)} MB, log retained ${f(soak.retainedLogGrowthBytes / MB)} MB)`,
      pass: soak.rssGrowthBytes <= 10 * MB,
    });
    // The growth while the log fills, next to the bytes the log took: the log is bounded
    // (--ring-events, --ring-bytes) and holds the events' own content.
    const fill = soak.end.retainedLogBytes - soak.warm.retainedLogBytes;
    lines.push({
      line: 'soak RSS growth from the warm-up, the log filling included',
      limit: "≤ 10 MB beyond the log's own bytes",
      measured: `${f(soak.rssGrowthSinceWarmBytes / MB)} MB, of which the log's retained frames ${f(fill / MB)} MB`,
      pass: soak.rssGrowthSinceWarmBytes - fill <= 10 * MB,
    });
  }
  const store = results.store;
  if (store) {
    const worst = Math.max(...store.historyPages.map((p) => p.p50Ms));
    lines.push({
      line: `history read: a filtered page of 1000 from ${store.events / 1000}k stored events, p50`,
      limit: '≤ 50 ms',
      measured: `worst ${f(worst)} ms (${store.historyPages.map((p) => `${p.query} ${f(p.p50Ms)}`).join(', ')})`,
      pass: worst <= 50,
    });
    lines.push({
      line: `resume from ${Math.round(store.resume.events / 1000)}k events back (from disk)`,
      limit: '≥ 20k events/s',
      measured: `${Math.round(store.resume.eventsPerS).toLocaleString('en')} events/s`,
      pass: store.resume.eventsPerS >= 20_000,
    });
  }
  const cdp = results.cdp;
  if (cdp) {
    const rt = cdp.roundTrip;
    const d50 = rt.agentP50Ms - rt.directP50Ms;
    const d99 = rt.agentP99Ms - rt.directP99Ms;
    lines.push({
      line: 'CDP proxy: Runtime.evaluate round trip, through the agent − direct, p50',
      limit: '≤ +0.3 ms',
      measured: `${d50 >= 0 ? '+' : ''}${f(d50, 3)} ms`,
      pass: d50 <= 0.3,
    });
    lines.push({ line: 'CDP proxy: round trip, p99', limit: '≤ +2 ms', measured: `${d99 >= 0 ? '+' : ''}${f(d99, 3)} ms`, pass: d99 <= 2 });
    lines.push({
      line: `CDP proxy: Playwright, ${cdp.options.steps} navigations + clicks, agent/direct (interleaved)`,
      limit: '≤ 1.03',
      measured: f(cdp.playwright.ratio, 3),
      pass: cdp.playwright.ratio <= 1.03,
    });
  }
  // Issue 51's compactness targets (docs/mcp.md "Measured"): what a model reads of an hour.
  for (const call of results.mcp?.calls.filter((c) => c.call.startsWith('what_went_wrong') || c.call === 'get_events, first page') ?? []) {
    lines.push({
      line: `MCP: ${call.call}, text to the model`,
      limit: '≤ 8,192 B',
      measured: `${call.textBytes.toLocaleString('en')} B`,
      pass: call.textBytes <= 8192,
    });
  }
  if (results.replay) lines.push(...replayBudget(results.replay));
  if (results.snapshot) lines.push(...snapshotBudget(results.snapshot));
  return lines;
}

export function renderBudget(lines: BudgetLine[]): string {
  return table(
    ['budget line', 'limit', 'measured', 'result'],
    lines.map((l) => [l.line, l.limit, l.measured, l.pass ? 'PASS' : 'FAIL']),
  );
}
