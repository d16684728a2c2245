// Section 9, replays (docs/replay.md "Costs"): what a recording costs, on real headless Chromium
// with the agent CLI and its encoder (ffmpeg, a child of the agent).
//
// - Page load: the typical page loaded in blocks with a recording running and without, the arms
//   alternating every round (one agent for every block; the recording is started before an "on"
//   block and stopped after it). The p50 ratio on/off.
// - CPU and bytes per recorded minute: a page that animates continuously (every animation frame,
//   at 1280×720) and a page that does not paint, each with and without a recording, in windows
//   that alternate. CPU is the agent's and the encoder's over the window, as % of one core; bytes
//   are the finished file's per minute of video. RSS: the agent's at the end of a window.
// - Stop → downloadable: a recording of the animated page as long as the run allows (10 minutes
//   in a full run), stopped; the time from the stop request to the download's response head.

import { readFileSync } from 'node:fs';
import { BenchBrowser } from '../clients/chromium.ts';
import { AgentCli, TOKEN } from '../clients/consumers.ts';
import { rotate, type BenchContext } from '../lib/context.ts';
import { featureLoads, type FeatureLoads } from '../lib/feature-loads.ts';
import { cpuSeconds, sleep, statusBytes, threadActivity } from '../lib/processes.ts';
import { median } from '../lib/stats.ts';

export interface ReplayOptions {
  rounds: number;
  loadsPerBlock: number;
  warmupLoads: number;
  /** Seconds of each CPU window. */
  windowS: number;
  /** Seconds of the long recording (stop → downloadable). */
  longS: number;
}

export interface ReplayWindow {
  page: 'animated' | 'static';
  recording: boolean;
  seconds: number;
  /** % of one core. */
  agentCpuPercent: number;
  encoderCpuPercent: number;
  rssBytes: number;
  /** Finished file bytes per minute of video (recording windows). */
  bytesPerMinute?: number;
  /** Frames written and dropped (recording windows, from replay_stopped). */
  frames?: number;
  droppedFrames?: number;
}

export interface ReplayResult {
  options: ReplayOptions;
  load: FeatureLoads;
  windows: ReplayWindow[];
  long: { seconds: number; stopToDownloadableMs: number; sizeBytes: number };
}

const auth = { authorization: `Bearer ${TOKEN}` };
const json = { ...auth, 'content-type': 'application/json' };

async function startReplay(agent: AgentCli): Promise<string> {
  const response = await fetch(`${agent.url}/browsers/${agent.sessionId}/replays`, { method: 'POST', headers: json, body: '{}' });
  if (response.status !== 201) throw new Error(`replay start answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { replay_id: string }).replay_id;
}

async function stopReplay(agent: AgentCli, id: string): Promise<{ size_bytes: number; started_at: string; finished_at: string }> {
  const response = await fetch(`${agent.url}/browsers/${agent.sessionId}/replays/${id}/stop`, { method: 'POST', headers: auth });
  if (response.status !== 200) throw new Error(`replay stop answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as { size_bytes: number; started_at: string; finished_at: string };
}

/** The agent's encoder process (its ffmpeg child), if one runs. */
function encoderPid(agentPid: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${agentPid}/task/${agentPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    return children.find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('ffmpeg'));
  } catch {
    return undefined;
  }
}

export async function runReplay(ctx: BenchContext, options: ReplayOptions): Promise<ReplayResult> {
  const load = await pageLoads(ctx, options);
  const windows: ReplayWindow[] = [];
  const arms: Array<Pick<ReplayWindow, 'page' | 'recording'>> = [
    { page: 'animated', recording: true },
    { page: 'animated', recording: false },
    { page: 'static', recording: true },
    { page: 'static', recording: false },
  ];
  for (let round = 0; round < options.rounds; round++) {
    for (const arm of rotate(arms, round)) windows.push(await cpuWindow(ctx, arm, options.windowS));
  }
  const long = await longRecording(ctx, options.longS);
  return { options, load, windows, long };
}

async function pageLoads(ctx: BenchContext, options: ReplayOptions): Promise<FeatureLoads> {
  const load = await featureLoads(ctx, options, async (agent, on) => {
    if (!on) return undefined;
    const id = await startReplay(agent);
    return () => stopReplay(agent, id);
  });
  ctx.log(
    `[replay] typical page load p50 ${median(load.offMs).toFixed(0)} ms without a recording, ${median(load.onMs).toFixed(0)} ms with one (×${load.p50Ratio.toFixed(3)})`,
  );
  return load;
}

async function cpuWindow(ctx: BenchContext, arm: Pick<ReplayWindow, 'page' | 'recording'>, seconds: number): Promise<ReplayWindow> {
  const browser = await BenchBrowser.launch(ctx.pages.url(arm.page === 'animated' ? '/animated' : '/still?n=0'));
  try {
    const agent = await AgentCli.start(browser.httpUrl);
    try {
      await ctx.subscribers.open({ url: agent.streamUrl, readers: 1, stalled: 0, countOnly: true });
      // The page has loaded and settled; the agent's start-up is not the recording's cost.
      await sleep(3000);
      const id = arm.recording ? await startReplay(agent) : undefined;
      // The encoder starts with the first frame.
      await sleep(500);
      const encoder = id === undefined ? undefined : encoderPid(agent.pid);
      const a0 = threadActivity(agent.pid);
      const e0 = encoder === undefined ? 0 : cpuSeconds(encoder);
      const t0 = process.hrtime.bigint();
      await sleep(seconds * 1000);
      const e1 = encoder === undefined ? 0 : cpuSeconds(encoder);
      const a1 = threadActivity(agent.pid);
      const measured = Number(process.hrtime.bigint() - t0) / 1e9;
      const rssBytes = statusBytes(agent.pid, 'VmRSS');
      const window: ReplayWindow = {
        ...arm,
        seconds: measured,
        agentCpuPercent: ((a1.cpuNs - a0.cpuNs) / 1e9 / measured) * 100,
        encoderCpuPercent: ((e1 - e0) / measured) * 100,
        rssBytes,
      };
      if (id !== undefined) {
        const stopped = await stopReplay(agent, id);
        const videoS = (Date.parse(stopped.finished_at) - Date.parse(stopped.started_at)) / 1000;
        window.bytesPerMinute = (stopped.size_bytes / videoS) * 60;
        const events = (await (
          await fetch(`${agent.url}/browsers/${agent.sessionId}/telemetry/events?type=replay_stopped`, { headers: auth })
        ).json()) as Array<{
          event: { data: { frames?: number; dropped_frames?: number } };
        }>;
        window.frames = events.at(-1)?.event.data.frames;
        window.droppedFrames = events.at(-1)?.event.data.dropped_frames ?? 0;
      }
      ctx.log(
        `[replay] ${arm.page} page, ${arm.recording ? 'recording' : 'no recording'}, ${measured.toFixed(0)} s: agent ${window.agentCpuPercent.toFixed(2)}% + encoder ${window.encoderCpuPercent.toFixed(2)}% of a core, RSS ${(rssBytes / 2 ** 20).toFixed(0)} MB${window.bytesPerMinute === undefined ? '' : `, ${(window.bytesPerMinute / 1e6).toFixed(2)} MB per minute, ${window.frames} frames (${window.droppedFrames} dropped)`}`,
      );
      return window;
    } finally {
      await ctx.subscribers.closeAll();
      await agent.stop();
    }
  } finally {
    await browser.close();
  }
}

async function longRecording(ctx: BenchContext, seconds: number): Promise<ReplayResult['long']> {
  const browser = await BenchBrowser.launch(ctx.pages.url('/animated'));
  try {
    const agent = await AgentCli.start(browser.httpUrl);
    try {
      const id = await startReplay(agent);
      await sleep(seconds * 1000);
      const asked = process.hrtime.bigint();
      const stopped = await stopReplay(agent, id);
      const download = await fetch(`${agent.url}/browsers/${agent.sessionId}/replays/${id}`, { headers: auth });
      const stopToDownloadableMs = Number(process.hrtime.bigint() - asked) / 1e6;
      await download.body?.cancel();
      if (download.status !== 200) throw new Error(`the download answered ${download.status}`);
      ctx.log(
        `[replay] a ${seconds} s recording of the animated page: stop → downloadable ${stopToDownloadableMs.toFixed(0)} ms, ${(stopped.size_bytes / 1e6).toFixed(1)} MB`,
      );
      return { seconds, stopToDownloadableMs, sizeBytes: stopped.size_bytes };
    } finally {
      await agent.stop();
    }
  } finally {
    await browser.close();
  }
}

const f = (v: number | undefined, digits = 1): string => (v !== undefined && Number.isFinite(v) ? v.toFixed(digits) : 'n/a');

function medianOf(windows: ReplayWindow[], page: ReplayWindow['page'], recording: boolean, pick: (w: ReplayWindow) => number | undefined): number {
  return median(windows.filter((w) => w.page === page && w.recording === recording).map((w) => pick(w) ?? NaN));
}

export function renderReplay(result: ReplayResult): string {
  const rows = (['animated', 'static'] as const).flatMap((page) =>
    [true, false].map((recording) => {
      const m = (pick: (w: ReplayWindow) => number | undefined) => medianOf(result.windows, page, recording, pick);
      return [
        page,
        recording ? 'recording' : 'none',
        f(
          m((w) => w.agentCpuPercent),
          2,
        ),
        f(
          m((w) => w.encoderCpuPercent),
          2,
        ),
        f(m((w) => w.rssBytes) / 2 ** 20, 0),
        recording ? f(m((w) => w.bytesPerMinute) / 1e6, 2) : '',
        recording
          ? `${f(
              m((w) => w.frames),
              0,
            )} (${f(
              m((w) => w.droppedFrames),
              0,
            )} dropped)`
          : '',
      ];
    }),
  );
  const header = ['page', 'replay', 'agent CPU %', 'encoder CPU %', 'agent RSS MB', 'MB per minute', 'frames'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [
    `### 9. Replays (bench/sections/replay.ts; medians of ${result.options.rounds} windows of ${result.options.windowS} s)`,
    line(header),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...rows.map(line),
    '',
    `Typical page load p50: ${f(median(result.load.offMs), 0)} ms without a recording, ${f(median(result.load.onMs), 0)} ms with one: ×${f(result.load.p50Ratio, 3)} [${f(result.load.p50Ci[0], 2)}–${f(result.load.p50Ci[1], 2)}] (${result.load.onMs.length} loads each).`,
    `A ${result.long.seconds} s recording of the animated page: stop → downloadable ${f(result.long.stopToDownloadableMs, 0)} ms, ${f(result.long.sizeBytes / 1e6)} MB.`,
    '',
  ].join('\n');
}

/** The budget lines (docs/performance.md "Budget"), in bench/lib/report.ts's shape. */
export function replayBudget(result: ReplayResult): Array<{ line: string; limit: string; measured: string; pass: boolean }> {
  const cost = (page: ReplayWindow['page']) =>
    medianOf(result.windows, page, true, (w) => w.agentCpuPercent + w.encoderCpuPercent) - medianOf(result.windows, page, false, (w) => w.agentCpuPercent);
  const animated = cost('animated');
  const still = cost('static');
  const bytes = (page: ReplayWindow['page']) => medianOf(result.windows, page, true, (w) => w.bytesPerMinute);
  const rss = medianOf(result.windows, 'animated', true, (w) => w.rssBytes) - medianOf(result.windows, 'animated', false, (w) => w.rssBytes);
  return [
    {
      line: 'replay: typical page load p50, recording / not (interleaved)',
      limit: '≤ 1.05',
      measured: f(result.load.p50Ratio, 3),
      pass: result.load.p50Ratio <= 1.05,
    },
    {
      line: 'replay: agent + encoder CPU over none, animated page at 1280×720',
      limit: '≤ 25% of a core',
      measured: `${f(animated, 2)}%`,
      pass: animated <= 25,
    },
    { line: 'replay: agent + encoder CPU over none, a page that does not paint', limit: '≈ 0 (≤ 1% of a core)', measured: `${f(still, 2)}%`, pass: still <= 1 },
    { line: 'replay: bytes per minute, animated page', limit: '≤ 8 MB', measured: `${f(bytes('animated') / 1e6, 2)} MB`, pass: bytes('animated') <= 8e6 },
    {
      line: 'replay: bytes per minute, a page that does not paint',
      limit: '≤ 0.5 MB',
      measured: `${f(bytes('static') / 1e6, 2)} MB`,
      pass: bytes('static') <= 0.5e6,
    },
    {
      line: `replay: stop → downloadable, ${result.long.seconds} s recording`,
      limit: '≤ 2 s (for 10 minutes)',
      measured: `${f(result.long.stopToDownloadableMs, 0)} ms`,
      pass: result.long.stopToDownloadableMs <= 2000,
    },
    {
      line: 'replay: agent RSS while recording, over none',
      limit: '≤ +50 MB',
      measured: `${rss >= 0 ? '+' : ''}${f(rss / 2 ** 20)} MB`,
      pass: rss <= 50 * 2 ** 20,
    },
  ];
}
