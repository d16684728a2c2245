// The benchmark orchestrator (`npm run bench [-- --quick]`, via bench/run.mjs). Runs the six
// sections (docs/performance.md) on real headless Chromium with local pages, prints Markdown
// tables and the budget lines, and writes bench/results.json. Every process it starts is stopped
// at the end, also on failure and on Ctrl-C.
//
// Flags: --quick, --only=load,throughput,latency,reconnect,soak,idle,store,cdp,mcp,replay,snapshot, --idle-seconds=N, --profile (agent
// hosts under node --cpu-prof; prints hot spots), --diagnose (adds page-load modes and throughput
// arms that remove or multiply one agent cost each: screenshots, body fetches, the page script,
// subscribers), --experiment=<name> (a proposed
// change applied to the agent processes: bench/investigate/experiment-list.ts), --soak-seconds=N, --rounds=N
// (page-load rounds), --warmup-loads=N (page-load: unmeasured loads of each page per block), --reps=N (throughput and latency repetitions),
// --modes=none,bare,agent,... (or a set: automation, beside, split, cuts, attribution) and --pages=typical,mixed,console,spa (page-load section subsets),
// --fan-outs=<name>;<name> (latency configurations by name, FAN_OUTS in bench/sections/latency.ts), --pin
// (page loads with Chromium and the bench on CPU 0, the clients and the subscriber on CPU 1).

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { locateChromium } from '../src/browser/chromium-launcher.ts';
import { Subscribers } from './clients/consumers.ts';
import type { BenchContext } from './lib/context.ts';
import { EXPERIMENTS } from './investigate/experiment-list.ts';
import { runIdle } from './sections/idle.ts';
import { FAN_OUTS, runLatency } from './sections/latency.ts';
import { LOAD_MODE_SETS, LOAD_MODES, LOAD_PAGES, runPageLoad, type LoadMode, type LoadPage } from './sections/page-load.ts';
import { PageServer, TYPICAL_SUBRESOURCES } from './lib/pages.ts';
import { killAllNow, stopAll } from './lib/processes.ts';
import { findProfiles, renderProfile, summarizeProfile, type ProfileSummary } from './lib/profile.ts';
import { runReconnect } from './sections/reconnect.ts';
import { evaluateBudget, renderBudget, renderReport, type Results } from './lib/report.ts';
import { runSoak } from './sections/soak.ts';
import { OtlpSink } from './lib/otlp-sink.ts';
import { runStore } from './sections/store.ts';
import { runCdpProxy } from './sections/cdp-proxy.ts';
import { runMcp } from './sections/mcp.ts';
import { runThroughput } from './sections/throughput.ts';
import { runReplay } from './sections/replay.ts';
import { runSnapshot } from './sections/snapshot.ts';

const SECTIONS = ['load', 'throughput', 'latency', 'reconnect', 'soak', 'idle', 'store', 'cdp', 'mcp', 'replay', 'snapshot'] as const;
type Section = (typeof SECTIONS)[number];

interface Flags {
  quick: boolean;
  only: Section[];
  profile: boolean;
  diagnose: boolean;
  /** Page loads with Chromium and the clients on separate CPUs (PageLoadOptions.pin). */
  pin: boolean;
  soakSeconds: number | undefined;
  idleSeconds: number | undefined;
  rounds: number | undefined;
  /** Page-load section: unmeasured loads of each page at the start of every block. */
  warmupLoads: number | undefined;
  reps: number | undefined;
  experiments: string[];
  /** Page-load section: modes and pages to run (investigation; the default is the full set). */
  modes: LoadMode[] | undefined;
  pages: LoadPage[] | undefined;
  /** Latency section: the configurations to run (investigation; the default is FAN_OUTS). */
  fanOuts: string[] | undefined;
}

function parseFlags(argv: string[]): Flags {
  const value = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const number = (name: string) => (value(name) === undefined ? undefined : Number(value(name)));
  const listOf = (name: string, allowed: readonly string[]): string[] | undefined => {
    const list = value(name)?.split(',');
    for (const item of list ?? []) if (!allowed.includes(item)) throw new Error(`--${name}: unknown ${item} (${allowed.join(', ')})`);
    return list;
  };
  const only = value('only')?.split(',') ?? [...SECTIONS];
  for (const s of only) if (!(SECTIONS as readonly string[]).includes(s)) throw new Error(`--only: unknown section ${s} (${SECTIONS.join(', ')})`);
  return {
    // `npm run bench --quick` (without --) reaches us as npm_config_quick.
    quick: argv.includes('--quick') || process.env.npm_config_quick === 'true',
    only: only as Section[],
    profile: argv.includes('--profile'),
    diagnose: argv.includes('--diagnose'),
    pin: argv.includes('--pin'),
    soakSeconds: number('soak-seconds'),
    idleSeconds: number('idle-seconds'),
    rounds: number('rounds'),
    warmupLoads: number('warmup-loads'),
    reps: number('reps'),
    experiments: value('experiment')?.split(',') ?? [],
    // A set's name (LOAD_MODE_SETS: automation, beside, split, cuts) stands for its modes.
    modes: listOf('modes', [...Object.keys(LOAD_MODES), ...Object.keys(LOAD_MODE_SETS)])?.flatMap((m) => LOAD_MODE_SETS[m] ?? [m]) as LoadMode[] | undefined,
    pages: listOf('pages', LOAD_PAGES) as LoadPage[] | undefined,
    fanOuts: fanOutsOf(value('fan-outs')),
  };
}

async function machine(): Promise<{ cpu: string | undefined; cores: number; memoryGiB: number; kernel: string; node: string; chromium: string }> {
  let chromium = 'unknown';
  try {
    const binary = await locateChromium({ chromePath: process.env.CHROME_PATH });
    chromium = `${execFileSync(binary.path, ['--version'], { encoding: 'utf8', env: { ...process.env, ...binary.env } }).trim()} (${binary.source})`;
  } catch {
    // Reported as unknown.
  }
  return {
    cpu: os.cpus()[0]?.model,
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    chromium,
  };
}

function fanOutsOf(list: string | undefined): string[] | undefined {
  const names = list?.split(';');
  for (const name of names ?? [])
    if (!FAN_OUTS.some((f) => f.name === name)) throw new Error(`--fan-outs: unknown ${name} (${FAN_OUTS.map((f) => f.name).join('; ')})`);
  return names;
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  for (const e of flags.experiments) if (!EXPERIMENTS[e]) throw new Error(`--experiment: unknown ${e} (${Object.keys(EXPERIMENTS).join(', ')})`);
  // Read when the agent processes are started (bench/clients/consumers.ts).
  if (flags.experiments.length > 0) process.env.BENCH_EXPERIMENTS = flags.experiments.join(',');
  else delete process.env.BENCH_EXPERIMENTS;
  const q = flags.quick;
  const started = Date.now();
  const log = (line: string) => process.stderr.write(`${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s ${line}\n`);
  const profileDir = flags.profile ? join(process.cwd(), '.tmp/bench-prof') : undefined;
  if (profileDir) rmSync(profileDir, { recursive: true, force: true });
  if (profileDir) mkdirSync(profileDir, { recursive: true });

  const meta = {
    date: new Date().toISOString(),
    quick: q,
    flags,
    machine: await machine(),
    loadAverageStart: os.loadavg(),
    typicalSubresources: TYPICAL_SUBRESOURCES,
  };
  log(
    `bench ${q ? '--quick' : 'full'} on ${String(meta.machine.cpu)} ×${meta.machine.cores}, ${meta.machine.chromium}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );

  // Agents keep their durable store here, as deployed agents do in /var/lib (bench/investigate/experiment-list.ts).
  const benchDataDir = mkdtempSync(join(os.tmpdir(), 'bta-bench-data-'));
  process.env.BENCH_DATA_DIR = benchDataDir;
  process.on('exit', () => rmSync(benchDataDir, { recursive: true, force: true }));
  // The OTLP arms export to this sink (bench/lib/otlp-sink.ts).
  const otlpSink = await OtlpSink.start();
  process.env.BENCH_OTLP_URL = otlpSink.baseUrl;
  const pages = await new PageServer().start();
  const subscribers = await Subscribers.start();
  const profileWindows = new Map<string, Map<string, Array<[number, number]>>>();
  const ctx: BenchContext = {
    quick: q,
    pages,
    subscribers,
    profileDir,
    log,
    profileWindow(dir, from, to, label = '') {
      if (!dir) return;
      const byLabel = profileWindows.get(dir) ?? new Map<string, Array<[number, number]>>();
      byLabel.set(label, [...(byLabel.get(label) ?? []), [from, to]]);
      profileWindows.set(dir, byLabel);
    },
  };
  const results: Results = {};
  const errors: Record<string, string> = {};

  // (p) and (c+p): the agent beside a user's Playwright (budget line (c+p)/(p)).
  const modes: LoadMode[] = [...new Set<LoadMode>(flags.modes ?? ['none', 'bare', 'agent', 'network', 'nostore', 'otlp', 'pw', 'pwagent'])];
  if (flags.diagnose) modes.push('noshots', 'nobody', 'noscript', 'loadpace0', 'cdpread0', 'barebodies', 'barescript', 'baredurable');
  const plan: Record<Section, () => Promise<void>> = {
    load: async () => {
      results.load = await runPageLoad(ctx, {
        rounds: flags.rounds ?? (q ? 2 : 6),
        loadsPerBlock: q ? 2 : 5,
        warmupLoads: flags.warmupLoads ?? (q ? 1 : 2),
        modes,
        pages: flags.pages ?? [...LOAD_PAGES],
        pin: flags.pin,
      });
    },
    throughput: async () => {
      results.throughput = await runThroughput(ctx, {
        reps: flags.reps ?? (q ? 1 : 3),
        floodLines: q ? 20_000 : 50_000,
        fetches: 2000,
        diagnose: flags.diagnose,
      });
    },
    latency: async () => {
      results.latency = await runLatency(ctx, {
        // Five windows a configuration: its CPU lines compare medians a point or two apart, and one
        // 15 s window moves by about ±1.5 points on this VM (docs/performance.md).
        reps: flags.reps ?? (q ? 1 : 5),
        windowMs: q ? 3000 : 15_000,
        configs: FAN_OUTS.filter((f) => flags.fanOuts?.includes(f.name) ?? true),
        diagnose: flags.diagnose,
      });
    },
    reconnect: async () => {
      results.reconnect = await runReconnect(ctx, { kills: q ? 3 : 10 });
    },
    soak: async () => {
      results.soak = await runSoak(ctx, { warmupS: q ? 5 : 20, fillTimeoutS: q ? 0 : 900, durationS: flags.soakSeconds ?? (q ? 30 : 600) });
    },
    store: async () => {
      results.store = await runStore(ctx, { events: q ? 30_000 : 100_000, reads: q ? 10 : 50 });
    },
    cdp: async () => {
      results.cdp = await runCdpProxy(ctx, { roundTrips: q ? 300 : 3000, scripts: flags.reps ?? (q ? 2 : 8), steps: q ? 10 : 50 });
    },
    mcp: async () => {
      results.mcp = await runMcp(ctx, { reps: flags.reps ?? (q ? 3 : 15) });
    },
    replay: async () => {
      results.replay = await runReplay(ctx, {
        rounds: flags.rounds ?? (q ? 1 : 4),
        loadsPerBlock: q ? 3 : 8,
        warmupLoads: flags.warmupLoads ?? 1,
        windowS: q ? 10 : 60,
        longS: q ? 20 : 600,
      });
    },
    snapshot: async () => {
      results.snapshot = await runSnapshot(ctx, {
        clicks: q ? 20 : 200,
        rounds: flags.rounds ?? (q ? 1 : 4),
        loadsPerBlock: q ? 3 : 8,
        warmupLoads: flags.warmupLoads ?? 1,
      });
    },
    idle: async () => {
      results.idle = await runIdle(ctx, { warmupS: 30, durationS: flags.idleSeconds ?? (q ? 20 : 60), reps: flags.reps ?? 1 });
    },
  };

  try {
    for (const section of flags.only) {
      log(`--- ${section}`);
      try {
        await plan[section]();
      } catch (err) {
        errors[section] = (err as Error).stack ?? String(err);
        log(`${section} failed: ${(err as Error).message}`);
      }
    }
  } finally {
    await subscribers.stop();
    await pages.close();
    await otlpSink.close();
    await stopAll();
  }

  const budget = evaluateBudget(results);
  const profiles: ProfileSummary[] = [];
  if (profileDir) {
    for (const file of findProfiles(profileDir)) {
      const byLabel = profileWindows.get(dirname(file)) ?? new Map([['', []]]);
      for (const [label, windows] of byLabel) {
        const summary = summarizeProfile(file, windows, label);
        if (summary.busyMs > 0) profiles.push(summary);
      }
    }
  }

  const report = renderReport(results);
  process.stdout.write(`\n## Benchmark results (${q ? 'quick' : 'full'} run, ${meta.date})\n\n`);
  process.stdout.write(
    `Machine: ${String(meta.machine.cpu)}, ${meta.machine.cores} cores, ${meta.machine.memoryGiB} GiB; ${meta.machine.node}; ${meta.machine.chromium}. `,
  );
  process.stdout.write(
    `Load average at start ${meta.loadAverageStart.map((l) => l.toFixed(1)).join(' ')}, at end ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}.\n\n`,
  );
  for (const e of flags.experiments) process.stdout.write(`EXPERIMENT ${e}: ${EXPERIMENTS[e]!.about}. These numbers are not the agent as it is.\n\n`);
  process.stdout.write(`${report}\n### Budget\n${renderBudget(budget)}\n`);
  if (flags.profile) {
    process.stdout.write('\nResults under --profile run with the profiler attached: compare hot spots, not numbers.\n');
    for (const p of profiles) process.stdout.write(`\n${renderProfile(p)}\n`);
  }
  for (const [section, error] of Object.entries(errors)) process.stdout.write(`\n${section} FAILED: ${error}\n`);

  const file = join(process.cwd(), 'bench/results.json');
  writeFileSync(
    file,
    `${JSON.stringify({ meta: { ...meta, loadAverageEnd: os.loadavg(), durationS: (Date.now() - started) / 1000 }, results, budget, profiles, errors }, null, 1)}\n`,
  );
  log(`wrote ${file} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  process.exitCode = Object.keys(errors).length > 0 ? 1 : 0;
}

// Whatever happens, nothing the bench started outlives it.
process.on('exit', killAllNow);
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`\nbench: ${signal}, stopping everything it started\n`);
    void stopAll().finally(() => process.exit(130));
  });
}

main().catch(async (err: unknown) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  await stopAll();
  process.exit(1);
});
