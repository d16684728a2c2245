// Section 1, page-load overhead. One browser, one tab, the page set loaded by the pages themselves
// (bench/lib/pages.ts) under each mode in turn: (a) no CDP client, (b) the bare client, (c) the agent
// CLI with every category, (d) the agent CLI with network only. A block = one mode attached while
// the tab loads every page 1 + k times (the first round of the block is a warm-up and not kept);
// the order of the modes rotates every round (A B C D, B C D A, ...), so drift and neighbours' load
// spread over all modes. The load time is the page's own Navigation Timing (loadEventEnd, or the
// end of the SPA's XHR bursts), reported with a beacon.
//
// Since the pages drive themselves, (a) has no CDP client at all: nothing observes the tab while
// it loads, and its own Navigation Timing is read by the page itself. More arms (LOAD_MODE_SETS):
// (p), Playwright connected over CDP following every page, and (c+p), the agent beside it, for
// what the agent costs a user who drives the browser with Playwright; (b+b), two bare clients;
// the feature split (f-*), a bare client with one set of the agent's CDP features each, against
// (a); and the agent without one of its CDP cuts (src/telemetry/cdp-cuts.ts).

import os from 'node:os';
import { BenchBrowser } from '../clients/chromium.ts';
import type { CdpFeatures } from '../clients/bare-client.ts';
import { AgentCli, AgentHost, BareClient, PlaywrightClient, TOKEN, agentMetrics, type AgentMetrics } from '../clients/consumers.ts';
import type { CdpCuts } from '../../src/telemetry/cdp-cuts.ts';
import { rotate, type BenchContext } from '../lib/context.ts';
import { cpuSeconds, monoMs, pinTo, sleep, treeCpu } from '../lib/processes.ts';
import { bootstrapRatio, median, round, summarize, type Summary } from '../lib/stats.ts';

export const LOAD_PAGES = ['typical', 'mixed', 'console', 'spa'] as const;
export type LoadPage = (typeof LOAD_PAGES)[number];

export const LOAD_MODES = {
  none: '(a) no CDP client',
  bare: '(b) bare CDP client',
  agent: '(c) agent, all categories',
  network: '(d) agent, network only',
  // Diagnostics (--diagnose): the agent with every category minus one of its costs.
  nostore: '(c-nostore) agent, all, --data-dir none',
  otlp: '(c-otlp) agent, all, OTLP export on',
  noshots: '(c-shots) agent, all, --screenshots off',
  nobody: '(c-bodies) agent, all, network.bodies off',
  noscript: '(c-script) agent, console+network, no page script',
  nosub: '(c-nosub) agent, all, no stream subscriber',
  barebodies: '(b+bodies) bare client fetching the bodies the agent fetches',
  baredurable: '(b+durable) bare client asking for durable bodies',
  bareworld: '(b+world) bare client with an empty script in an isolated world',
  barescript: '(b+script) bare client injecting the page script',
  nice: '(c-nice) agent, all, at nice 10',
  idle: '(c-idle) agent, all, SCHED_IDLE',
  loadpace0: '(c-loadpace0) agent, all, --stream-load-pace-ms 0',
  loadpace32: '(c-loadpace32) agent, all, --stream-load-pace-ms 32',
  cdpread0: '(c-cdpread0) agent, all, --load-cdp-read-ms 0',
  warm: '(c-warm) agent, all, one process for every block',
  nofailure: '(c-failure) agent, all, no hang probe and no long tasks (--hang-threshold-ms 0 --long-task-ms 0)',
  mallocdefault: "(c-malloc) agent, all, glibc's own mmap threshold (no MALLOC_MMAP_THRESHOLD_)",
  malloctrim: '(c-trim) agent, all, MALLOC_TRIM_THRESHOLD_ 4 MiB beside the 64 KiB mmap threshold',
  // The automation-driven browser: Playwright following every page (bench/clients/playwright-client.ts).
  pw: '(p) Playwright connected over CDP, following every page',
  pwagent: '(c+p) agent, all, beside Playwright',
  bare2: '(b+b) two bare clients on the same tabs',
  // The agent beside automation that connects through the agent's CDP endpoint, and the floor of
  // an agent that reused such a client's events (docs/decisions.md "The agent beside automation").
  pwproxy: "(c+p-proxy) agent, all, Playwright connected through the agent's CDP endpoint",
  pwattach: '(p+attach) Playwright beside a client that only auto-attaches (the floor of reusing its events)',
  // The agent without one of its CDP cuts (src/telemetry/cdp-cuts.ts).
  bufcut: '(c-bufcut) agent, all, 1-byte renderer body buffers (rendererBodyBuffers on: loses fetched request bodies)',
  alldomains: '(c-domains) agent, all, Runtime on every target type (domainsByTargetType off)',
  // The feature split: a bare client with one set of the agent's CDP features each, against (a).
  'f-all': "(f-all) Page, Runtime, Network (the agent's buffers), durable bodies, page script, screenshots",
  'f-nonet': '(f-nonet) the same without Network and durable bodies',
  'f-attach': '(f-attach) auto-attach with waitForDebuggerOnStart, no domain',
  'f-page': '(f-page) Page only',
  'f-runtime': '(f-runtime) Runtime only',
  'f-pagert': '(f-pagert) Page and Runtime',
  'f-world': '(f-world) Page, Runtime, an empty script in an isolated world and a binding',
  'f-script': "(f-script) Page, Runtime, the agent's page script in its world, and its binding",
  'f-shots': "(f-shots) Page and the agent's screenshots",
  'f-net': "(f-net) Network only, the agent's buffers without durable bodies",
  'f-netsmall': '(f-netsmall) Network only, 1-byte renderer body buffers',
  'f-netdurable': "(f-netdurable) Network, the agent's buffers, durable bodies",
  'f-netcut': '(f-netcut) Network, 1-byte renderer body buffers, durable bodies (the renderer-buffer cut)',
} as const;
export type LoadMode = keyof typeof LOAD_MODES;

/** The feature split's arms (bench/clients/bare-client.ts CdpFeatures), each compared with (a). */
const FEATURE_ARMS: Partial<Record<LoadMode, CdpFeatures>> = {
  'f-all': { page: true, runtime: true, network: 'agent', durable: true, script: 'agent', screenshots: true },
  'f-nonet': { page: true, runtime: true, script: 'agent', screenshots: true },
  'f-attach': {},
  'f-page': { page: true },
  'f-runtime': { runtime: true },
  'f-pagert': { page: true, runtime: true },
  'f-world': { page: true, runtime: true, script: 'world' },
  'f-script': { page: true, runtime: true, script: 'agent' },
  'f-shots': { page: true, screenshots: true },
  'f-net': { network: 'agent' },
  'f-netsmall': { network: 'small' },
  'f-netdurable': { network: 'agent', durable: true },
  'f-netcut': { network: 'small', durable: true },
};

/**
 * Named sets of modes for `--modes=<set>` (bench/run.ts): the runs docs/performance.md asks for,
 * each one interleaved run.
 */
export const LOAD_MODE_SETS: Record<string, LoadMode[]> = {
  // (c)/(a), (c)/(b), (c+p)/(p), (b+b)/(b).
  automation: ['none', 'bare', 'agent', 'pw', 'pwagent', 'bare2'],
  // What the agent beside automation costs, and what reusing the automation's events could save.
  beside: ['pw', 'pwagent', 'pwproxy', 'pwattach'],
  // Chromium's price by CDP feature, every arm against (a).
  split: ['none', ...(Object.keys(FEATURE_ARMS) as LoadMode[])],
  // The agent with and without each cut.
  cuts: ['none', 'bare', 'agent', 'bufcut', 'alldomains'],
  // What the agent's CPU per load buys: the agent with every category minus one feature each
  // (docs/performance.md "The agent's CPU per load").
  attribution: ['bare', 'agent', 'nostore', 'nosub', 'nobody', 'noshots', 'noscript', 'nofailure', 'network'],
};

/**
 * Ratios reported besides every mode's against (b): [mode, base]. Modes that are not the agent
 * beside a bare client's setup (Playwright, the feature split) are compared with these only.
 */
const COMPARISONS: Array<[LoadMode, LoadMode]> = [
  ['agent', 'none'],
  ['network', 'none'],
  ['pw', 'none'],
  ['pwagent', 'pw'],
  ['pwagent', 'none'],
  ['pwproxy', 'pw'],
  ['pwattach', 'pw'],
  ['pwproxy', 'pwagent'],
  ['bare2', 'bare'],
  // A cut's effect: below 1 when it pays ((c-bufcut)/(c), (c)/(c-domains)).
  ['bufcut', 'agent'],
  ['agent', 'alldomains'],
  ['mallocdefault', 'agent'],
  ['malloctrim', 'agent'],
  ['loadpace32', 'agent'],
  ...(Object.keys(FEATURE_ARMS) as LoadMode[]).map((mode): [LoadMode, LoadMode] => [mode, 'none']),
  ['f-netsmall', 'f-net'],
  ['f-netcut', 'f-netdurable'],
  ['f-script', 'f-pagert'],
  ['f-world', 'f-pagert'],
];
/** Modes not compared with (b). */
const NOT_OVER_BARE: ReadonlySet<LoadMode> = new Set(['none', 'bare', 'pw', 'pwagent', 'pwproxy', 'pwattach', ...(Object.keys(FEATURE_ARMS) as LoadMode[])]);

const NETWORK_ONLY = JSON.stringify({ browser: { console: { enabled: false }, page: { enabled: false }, interaction: { enabled: false } } });
const NO_PAGE_SCRIPT = JSON.stringify({ browser: { page: { enabled: false }, interaction: { enabled: false } } });
const NO_BODIES = JSON.stringify({ browser: { network: { bodies: false } } });

/** Agent CLI flags of each agent mode. */
const AGENT_FLAGS: Partial<Record<LoadMode, string[]>> = {
  agent: [],
  network: ['--telemetry', NETWORK_ONLY],
  nostore: ['--data-dir', 'none'],
  // The sink's address is known at run time (bench/run.ts sets BENCH_OTLP_URL).
  otlp: [],
  noshots: ['--screenshots', 'off'],
  nobody: ['--telemetry', NO_BODIES],
  noscript: ['--telemetry', NO_PAGE_SCRIPT],
  nosub: [],
  nice: [],
  idle: [],
  loadpace0: ['--stream-load-pace-ms', '0'],
  loadpace32: ['--stream-load-pace-ms', '32'],
  cdpread0: ['--load-cdp-read-ms', '0'],
  nofailure: ['--hang-threshold-ms', '0', '--long-task-ms', '0'],
  mallocdefault: [],
  malloctrim: [],
  // Not a CLI: an agent host process kept for the whole section (start() below).
  warm: [],
  pwagent: [],
  pwproxy: [],
  bufcut: [],
  alldomains: [],
};

/** A CDP cut changed in an agent mode (src/telemetry/cdp-cuts.ts; bench/clients/agent-cuts-cli.ts). */
const AGENT_CUTS: Partial<Record<LoadMode, Partial<CdpCuts>>> = {
  bufcut: { rendererBodyBuffers: true },
  alldomains: { domainsByTargetType: false },
};

/** Environment of an agent mode's process. */
const AGENT_ENV: Partial<Record<LoadMode, Record<string, string>>> = {
  // An empty value removes the variable (bench/clients/consumers.ts AgentCli).
  mallocdefault: { MALLOC_MMAP_THRESHOLD_: '' },
  malloctrim: { MALLOC_TRIM_THRESHOLD_: String(4 * 1024 * 1024) },
};

/** Commands an agent mode runs under: its CPU priority below the browser's. */
const AGENT_PREFIX: Partial<Record<LoadMode, string[]>> = {
  nice: ['nice', '-n', '10'],
  idle: ['chrt', '--idle', '0'],
};

/** Body fetches and screenshots so far, from an agent's /metrics. */
function countsOf(metrics: AgentMetrics): { bodies: BodyFetches; screenshots: number } {
  const bodies = metrics.get('bta_body_fetches_total');
  return {
    bodies: { fetched: bodies?.get('outcome=fetched') ?? 0, failed: bodies?.get('outcome=failed') ?? 0 },
    screenshots: metrics.get('bta_events_admitted_total')?.get('type=monitor_screenshot') ?? 0,
  };
}

/** Modes that run the agent (the others: no client, or the bare client with or without bodies). */
function isAgentMode(mode: LoadMode): boolean {
  return AGENT_FLAGS[mode] !== undefined;
}

export interface PageLoadOptions {
  rounds: number;
  /** Which pages of LOAD_PAGES (all by default). */
  pages: LoadPage[];
  /** Measured loads of each page per block. */
  loadsPerBlock: number;
  /** Loads of each page per block before the measured ones, with the block's client attached. */
  warmupLoads: number;
  modes: LoadMode[];
  /**
   * Diagnostic (`--pin`): Chromium and the bench (the page server) on CPU 0, the client and the
   * subscriber on CPU 1, so that no CPU the client spends is taken from the browser: what is left
   * of (c)/(b) is what the agent costs the browser other than by competing for a core.
   */
  pin?: boolean;
}

/** CPU per load of one page (ms), from the time between its beacon and the one before. */
export interface PageCpu {
  /** The agent's or bare client's process; 0 for (a). */
  client: number;
  /** The process reading the agent's stream (agent modes). */
  subscriber?: number;
  /** Chromium's whole process tree. */
  browser: number;
  /** The same by Chromium process type (`renderer`, `zygote` with the renderers it reaped, ...). */
  browserByType: Record<string, number>;
}

export interface ModeResult {
  mode: LoadMode;
  label: string;
  byPage: Partial<Record<LoadPage, { summary: Summary; samples: number[]; roundMedians: number[]; cpu: PageCpu }>>;
  /** Consumer CPU per page load (ms), over all its blocks; absent for (a). */
  cpuMsPerLoad?: number;
  /** The same over the blocks' unmeasured warm-up loads: a new process's JIT still compiling. */
  warmupCpuMsPerLoad?: number;
  /** SSE events delivered per page load (agent modes). */
  eventsPerLoad?: number;
  /** CPU per page load (ms) of the process reading the agent's stream (agent modes). */
  subscriberCpuMsPerLoad?: number;
  /** Socket reads per page load of that process: about one per write of the agent. */
  subscriberReadsPerLoad?: number;
  /** Response bodies fetched per page load (modes that fetch them). */
  bodyFetchesPerLoad?: BodyFetches;
  /** Screenshots taken per page load (agent modes): a capture inside a load costs the browser. */
  screenshotsPerLoad?: number;
  /** CPU per page load (ms) of Chromium's whole process tree (browser, renderers, helpers). */
  browserCpuMsPerLoad: number;
}

export interface RatioResult {
  page: LoadPage;
  p50: number;
  p50Ci: [number, number];
  p90: number;
  p90Ci: [number, number];
  /** The same ratio of all the CPU a load of the page used (client, subscriber, Chromium). */
  cpu: number;
}

export interface PageLoadResult {
  options: PageLoadOptions;
  modes: ModeResult[];
  /** `(c)/(b)`, `(d)/(b)`, ... per page. */
  ratios: Record<string, RatioResult[]>;
}

interface Running {
  pid: number | undefined;
  /** More processes of the mode (Playwright beside the agent, a second bare client): their CPU counts as the client's. */
  otherPids?: number[];
  stop(): Promise<void>;
  /** What it did so far (modes that fetch bodies; screenshots in agent modes only). */
  counts?(): Promise<Counts>;
}

interface Counts {
  bodies: BodyFetches;
  screenshots?: number;
}

/** `Network.getResponseBody` outcomes: answered with a body, or not (the page moved on). */
export interface BodyFetches {
  fetched: number;
  failed: number;
}

/** Starts `first`, then `second`; when the second fails, the first is stopped. */
async function startPair<A extends { stop(): Promise<void> }, B>(first: () => Promise<A>, second: (a: A) => Promise<B>): Promise<[A, B]> {
  const a = await first();
  try {
    return [a, await second(a)];
  } catch (err) {
    await a.stop();
    throw err;
  }
}

export async function runPageLoad(ctx: BenchContext, options: PageLoadOptions): Promise<PageLoadResult> {
  const { pages, subscribers } = ctx;
  const pageSet = options.pages;
  const allCpus = `0-${os.cpus().length - 1}`;
  // Chromium inherits the bench's CPU set when pinned.
  if (options.pin) pinTo(process.pid, '0');
  const browser = await BenchBrowser.launch(pages.idleUrl);
  if (options.pin) pinTo(subscribers.pid, '1');
  const samples = new Map<LoadMode, Map<LoadPage, number[][]>>();
  const cpu = new Map<
    LoadMode,
    {
      seconds: number;
      loads: number;
      warmupSeconds: number;
      warmupLoads: number;
      events: number;
      subscriberSeconds: number;
      subscriberReads: number;
      browserSeconds: number;
      bodies: BodyFetches;
      screenshots: number;
    }
  >();
  const pageCpu = new Map<LoadMode, Map<LoadPage, { loads: number; client: number; subscriber: number; browser: number; byType: Record<string, number> }>>();
  for (const mode of options.modes) {
    samples.set(mode, new Map(pageSet.map((p) => [p, []])));
    cpu.set(mode, {
      seconds: 0,
      loads: 0,
      warmupSeconds: 0,
      warmupLoads: 0,
      events: 0,
      subscriberSeconds: 0,
      subscriberReads: 0,
      browserSeconds: 0,
      bodies: { fetched: 0, failed: 0 },
      screenshots: 0,
    });
    pageCpu.set(mode, new Map(pageSet.map((p) => [p, { loads: 0, client: 0, subscriber: 0, browser: 0, byType: {} }])));
  }

  const profileDirOf = (mode: LoadMode) => (ctx.profileDir ? `${ctx.profileDir}/load-${mode}` : undefined);
  const start = async (mode: LoadMode): Promise<Running> => {
    if (mode === 'none') return { pid: undefined, stop: async () => undefined };
    const features = FEATURE_ARMS[mode];
    if (features) {
      const client = await BareClient.start({ wsUrl: browser.wsUrl, features });
      const counts = async (): Promise<Counts> => ({ bodies: { fetched: 0, failed: 0 }, screenshots: (await client.stats()).screenshots ?? 0 });
      return { pid: client.pid, stop: () => client.stop(), ...(features.screenshots === true && { counts }) };
    }
    if (mode === 'pw') {
      const client = await PlaywrightClient.start({ wsUrl: browser.wsUrl });
      return { pid: client.pid, stop: () => client.stop() };
    }
    if (mode === 'bare2') {
      const [first, second] = await Promise.all([BareClient.start({ wsUrl: browser.wsUrl }), BareClient.start({ wsUrl: browser.wsUrl })]);
      return {
        pid: first.pid,
        otherPids: [second.pid],
        stop: async () => {
          await Promise.all([first.stop(), second.stop()]);
        },
      };
    }
    if (mode === 'pwagent' || mode === 'pwproxy') {
      // (c+p): the user's automation is there first and the agent joins it. (c+p-proxy): the
      // agent is there first and the automation connects through its CDP endpoint.
      const [agent, pw] =
        mode === 'pwagent'
          ? await startPair(
              () => PlaywrightClient.start({ wsUrl: browser.wsUrl }),
              () => AgentCli.start(browser.httpUrl, [], profileDirOf(mode)),
            ).then(([first, second]) => [second, first] as const)
          : await startPair(
              () => AgentCli.start(browser.httpUrl, [], profileDirOf(mode)),
              (first) => PlaywrightClient.start({ wsUrl: first.url, headers: { Authorization: `Bearer ${TOKEN}` } }),
            );
      const block = await agentBlock(agent.pid, agent.streamUrl, agent.url, async () => {
        await Promise.all([agent.stop(), pw.stop()]);
      });
      return { ...block, otherPids: [pw.pid] };
    }
    if (mode === 'pwattach') {
      const [pw, attach] = await startPair(
        () => PlaywrightClient.start({ wsUrl: browser.wsUrl }),
        () => BareClient.start({ wsUrl: browser.wsUrl, features: {} }),
      );
      return {
        pid: attach.pid,
        otherPids: [pw.pid],
        stop: async () => {
          await Promise.all([attach.stop(), pw.stop()]);
        },
      };
    }
    if (mode === 'bare') return BareClient.start({ wsUrl: browser.wsUrl });
    if (mode === 'baredurable') return BareClient.start({ wsUrl: browser.wsUrl, durable: true });
    if (mode === 'bareworld') return BareClient.start({ wsUrl: browser.wsUrl, pageScript: 'world' });
    if (mode === 'barescript') return BareClient.start({ wsUrl: browser.wsUrl, pageScript: 'agent' });
    if (mode === 'barebodies') {
      const client = await BareClient.start({ wsUrl: browser.wsUrl, fetchBodies: true });
      return { pid: client.pid, stop: () => client.stop(), counts: async () => ({ bodies: (await client.stats()).bodyFetches! }) };
    }
    // (c-warm): the agent as it is after days in service, its hot paths compiled long ago. One
    // process for the whole section: each block starts a new agent in it (startAgent) and closes
    // it at the end, so the browser is left alone between its blocks as with the CLI.
    if (mode === 'warm') {
      warmHost ??= await AgentHost.start({ cdpUrl: browser.httpUrl }, profileDirOf(mode));
      const host = warmHost;
      const { url } = await host.attach();
      return agentBlock(host.pid, host.streamUrl, url, () => host.detach());
    }
    const flags = mode === 'otlp' ? ['--otlp-endpoint', process.env.BENCH_OTLP_URL ?? ''] : AGENT_FLAGS[mode];
    const agent = await AgentCli.start(browser.httpUrl, flags, profileDirOf(mode), AGENT_PREFIX[mode], AGENT_ENV[mode], AGENT_CUTS[mode]);
    return agentBlock(agent.pid, agent.streamUrl, agent.url, () => agent.stop(), mode !== 'nosub');
  };
  let warmHost: AgentHost | undefined;
  const agentBlock = async (pid: number, streamUrl: string, url: string, stopAgent: () => Promise<void>, subscribe = true): Promise<Running> => {
    // One subscriber, as in production (the gateway). It only counts frames: its CPU competes with
    // the browser's too, and is reported apart (subscriberCpuMsPerLoad).
    if (subscribe) await subscribers.open({ url: streamUrl, readers: 1, stalled: 0, countOnly: true });
    return {
      pid,
      counts: async () => countsOf(await agentMetrics(url)),
      stop: async () => {
        await subscribers.closeAll();
        await stopAgent();
      },
    };
  };

  try {
    await pages.waitIdle();
    // Warm the browser, the server and the OS caches once before anything is measured.
    await pages.runChain(
      pageSet.map((p) => `/p/${p}`),
      60_000,
    );
    await pages.waitIdle();

    for (let round = 0; round < options.rounds; round++) {
      for (const mode of rotate(options.modes, round)) {
        const running = await start(mode);
        if (options.pin) for (const pid of pidsOf(running)) pinTo(pid, '1');
        await sleep(200);
        // The client was started for this block; the agent runs for days. Its start (attaching,
        // setting up the tab, the JIT compiling its hot paths) is not what a page load costs it
        // in service, so the block first loads every page `warmupLoads` times, unmeasured.
        const isAgent = isAgentMode(mode);
        const clientCpu = () => pidsOf(running).reduce((sum, pid) => sum + cpuSeconds(pid), 0);
        const warmupCpu0 = clientCpu();
        const warmups = await pages.runChain(plan(pageSet, options.warmupLoads), 60_000 + options.warmupLoads * pageSet.length * 5000);
        const warmup = cpu.get(mode)!;
        warmup.warmupSeconds += clientCpu() - warmupCpu0;
        warmup.warmupLoads += warmups.length;
        await pages.waitIdle();
        const reader = async () => (isAgent ? (await subscribers.stats())[0] : undefined);
        const reader0 = await reader();
        const counts0 = await running.counts?.();
        // CPU read as each page reports: what was used since the previous page reported is that
        // page's (the first page's since the chain started). The same reads happen in every mode.
        const snapshot = () => {
          const tree = treeCpu(browser.pid);
          return {
            client: clientCpu(),
            subscriber: cpuSeconds(subscribers.pid),
            browser: tree.total,
            byType: tree.byType,
          };
        };
        const first = snapshot();
        let last = first;
        const perPage = pageCpu.get(mode)!;
        const onBeacon = (beacon: { page: string }) => {
          const now = snapshot();
          const acc = perPage.get(beacon.page as LoadPage);
          if (acc) {
            acc.loads++;
            acc.client += now.client - last.client;
            acc.subscriber += now.subscriber - last.subscriber;
            acc.browser += now.browser - last.browser;
            for (const type of new Set([...Object.keys(now.byType), ...Object.keys(last.byType)])) {
              acc.byType[type] = (acc.byType[type] ?? 0) + (now.byType[type] ?? 0) - (last.byType[type] ?? 0);
            }
          }
          last = now;
        };
        const t0 = monoMs();
        const beacons = await pages.runChain(plan(pageSet, options.loadsPerBlock), 60_000 + options.loadsPerBlock * pageSet.length * 5000, onBeacon);
        ctx.profileWindow(profileDirOf(mode), t0, monoMs());
        const reader1 = await reader();
        const counts1 = await running.counts?.();
        const events = (reader1?.frames ?? 0) - (reader0?.frames ?? 0);
        const reads = (reader1?.reads ?? 0) - (reader0?.reads ?? 0);
        await running.stop();
        await pages.waitIdle();

        const byPage = samples.get(mode)!;
        const roundSamples = new Map<LoadPage, number[]>(pageSet.map((p) => [p, []]));
        for (const beacon of beacons) roundSamples.get(beacon.page as LoadPage)?.push(beacon.metric);
        for (const page of pageSet) byPage.get(page)!.push(roundSamples.get(page)!);
        const c = cpu.get(mode)!;
        c.seconds += last.client - first.client;
        c.loads += beacons.length;
        c.events += events;
        c.subscriberSeconds += last.subscriber - first.subscriber;
        c.subscriberReads += reads;
        c.browserSeconds += last.browser - first.browser;
        if (counts0 && counts1) {
          c.bodies.fetched += counts1.bodies.fetched - counts0.bodies.fetched;
          c.bodies.failed += counts1.bodies.failed - counts0.bodies.failed;
          c.screenshots += (counts1.screenshots ?? 0) - (counts0.screenshots ?? 0);
        }
        const medians = pageSet.map((p) => `${p} ${round1(median(roundSamples.get(p)!))}`).join(', ');
        ctx.log(`[load] round ${round + 1}/${options.rounds} ${LOAD_MODES[mode]}: median ms ${medians}`);
      }
    }
  } finally {
    await warmHost?.stop();
    await browser.close();
    if (options.pin) {
      pinTo(process.pid, allCpus);
      pinTo(subscribers.pid, allCpus);
    }
  }

  const modes: ModeResult[] = options.modes.map((mode) => {
    const byPage: ModeResult['byPage'] = {};
    for (const page of pageSet) {
      const rounds = samples.get(mode)!.get(page)!;
      const all = rounds.flat();
      const pc = pageCpu.get(mode)!.get(page)!;
      const perLoad = (seconds: number) => (pc.loads > 0 ? round((seconds * 1000) / pc.loads, 2) : NaN);
      byPage[page] = {
        summary: summarize(all),
        samples: all.map((v) => round(v, 1)),
        roundMedians: rounds.map((r) => round(median(r), 1)),
        cpu: {
          client: perLoad(pc.client),
          ...(isAgentMode(mode) && { subscriber: perLoad(pc.subscriber) }),
          browser: perLoad(pc.browser),
          browserByType: Object.fromEntries(Object.entries(pc.byType).map(([type, seconds]) => [type, perLoad(seconds)])),
        },
      };
    }
    const c = cpu.get(mode)!;
    const result: ModeResult = { mode, label: LOAD_MODES[mode], byPage, browserCpuMsPerLoad: c.loads > 0 ? (c.browserSeconds * 1000) / c.loads : NaN };
    if (mode !== 'none' && c.loads > 0) result.cpuMsPerLoad = (c.seconds * 1000) / c.loads;
    if (mode !== 'none' && c.warmupLoads > 0) result.warmupCpuMsPerLoad = (c.warmupSeconds * 1000) / c.warmupLoads;
    if (isAgentMode(mode) && c.loads > 0) {
      result.eventsPerLoad = c.events / c.loads;
      result.subscriberCpuMsPerLoad = (c.subscriberSeconds * 1000) / c.loads;
      result.subscriberReadsPerLoad = c.subscriberReads / c.loads;
      result.screenshotsPerLoad = c.screenshots / c.loads;
    }
    if (FEATURE_ARMS[mode]?.screenshots === true && c.loads > 0) result.screenshotsPerLoad = c.screenshots / c.loads;
    if ((isAgentMode(mode) || mode === 'barebodies') && c.loads > 0) {
      result.bodyFetchesPerLoad = { fetched: c.bodies.fetched / c.loads, failed: c.bodies.failed / c.loads };
    }
    return result;
  });

  const ratios: Record<string, RatioResult[]> = {};
  const ratio = (m: ModeResult, base: ModeResult): RatioResult[] =>
    pageSet.map((page) => {
      const a = m.byPage[page]!;
      const b = base.byPage[page]!;
      return {
        page,
        p50: a.summary.p50 / b.summary.p50,
        p50Ci: bootstrapRatio(a.samples, b.samples, 0.5),
        p90: a.summary.p90 / b.summary.p90,
        p90Ci: bootstrapRatio(a.samples, b.samples, 0.9),
        cpu: totalCpu(a.cpu) / totalCpu(b.cpu),
      };
    });
  const none = modes.find((m) => m.mode === 'none');
  const bare = modes.find((m) => m.mode === 'bare');
  if (bare) {
    for (const m of modes) {
      if (!NOT_OVER_BARE.has(m.mode)) ratios[`${labelLetter(m.mode)}/(b)`] = ratio(m, bare);
    }
    // What being observed costs the browser, whoever observes it.
    if (none) ratios['(b)/(a)'] = ratio(bare, none);
  }
  const byMode = new Map(modes.map((m) => [m.mode, m]));
  for (const [mode, base] of COMPARISONS) {
    const m = byMode.get(mode);
    const b = byMode.get(base);
    if (m && b) ratios[`${labelLetter(mode)}/${labelLetter(base)}`] = ratio(m, b);
  }
  return { options, modes, ratios };
}

/** The processes of a mode's client (none for (a)). */
function pidsOf(running: Running): number[] {
  return running.pid === undefined ? [] : [running.pid, ...(running.otherPids ?? [])];
}

/** All the CPU (ms) a load used: the client, the stream's reader, Chromium. */
export function totalCpu(cpu: PageCpu): number {
  return cpu.client + (cpu.subscriber ?? 0) + cpu.browser;
}

export function labelLetter(mode: LoadMode): string {
  return LOAD_MODES[mode].split(' ')[0]!;
}

function round1(v: number): number {
  return round(v, 1);
}

/** `rounds` times every page of the set, in order. */
function plan(pageSet: readonly LoadPage[], rounds: number): string[] {
  const paths: string[] = [];
  for (let round = 0; round < rounds; round++) for (const page of pageSet) paths.push(`/p/${page}`);
  return paths;
}
