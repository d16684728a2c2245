// The orchestrator's handles on the processes that consume the browser's CDP stream: the real agent
// CLI, the agent host (startAgent + instrumentation), the bare CDP client, and the subscribers
// process. Each is a separate process, so its CPU and memory are read from /proc on its own.

import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import type { StartAgentOptions } from '../../src/agent.ts';
import type { CdpCuts } from '../../src/telemetry/cdp-cuts.ts';
import type { HostInfo, HostMemory, TakenMarks } from './agent-host.ts';
import type { BareClientOptions, BareStats } from './bare-client.ts';
import type { PlaywrightClientOptions, PlaywrightStats } from './playwright-client.ts';
import { agentNodeFlags, agentEnv } from '../investigate/experiment-list.ts';
import { IpcPeer } from '../lib/ipc.ts';
import { exited, forkOwned, spawnOwned, stopChild, until } from '../lib/processes.ts';
import type { ReaderStats } from './sse-reader.ts';
import type { LatencyArgs, LatencyReport, OpenArgs } from './subscribers.ts';

export const TOKEN = 'bench-token-with-every-scope';

/** A sample's labels as one key, `k=v` joined by commas in the labels' order. */
function labelKey(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** The bundles run.mjs writes next to this one (.tmp/bench-*.js). */
function sibling(name: string): string {
  return fileURLToPath(new URL(`./bench-${name}.js`, import.meta.url));
}

export function streamUrlOf(agentUrl: string, sessionId: string): string {
  return `${agentUrl}/browsers/${sessionId}/telemetry`;
}

/** The agent CLI (`node dist/main.js`, built from the current sources), attached via --cdp-url. */
export class AgentCli {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    readonly sessionId: string,
  ) {}

  get pid(): number {
    return this.child.pid!;
  }

  get streamUrl(): string {
    return streamUrlOf(this.url, this.sessionId);
  }

  /**
   * `profileDir`: run under `node --cpu-prof`, profile written there when it exits. `prefix`: a
   * command the agent runs under (`nice -n 10`, `chrt -i 0`). `cuts`: a CDP cut changed
   * (src/telemetry/cdp-cuts.ts), run by agent-cuts-cli.ts instead of the CLI.
   */
  static async start(
    cdpUrl: string,
    extraArgs: string[] = [],
    profileDir?: string,
    prefix: string[] = [],
    env: Record<string, string> = {},
    cuts?: Partial<CdpCuts>,
  ): Promise<AgentCli> {
    const profiling = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
    if (profileDir) mkdirSync(profileDir, { recursive: true });
    // As deployed (deploy/, npm start): agentNodeFlags and agentEnv.
    const args = [
      ...agentNodeFlags(),
      ...profiling,
      ...(cuts ? [sibling('agent-cuts-cli'), JSON.stringify(cuts)] : [sibling('agent-cli')]),
      '--cdp-url',
      cdpUrl,
      '--port',
      '0',
      '--token',
      TOKEN,
      '--log-level',
      'warn',
      ...extraArgs,
    ];
    const [command, ...commandArgs] = [...prefix, process.execPath, ...args];
    // An empty value in `env` removes the variable.
    const childEnv = Object.fromEntries(Object.entries({ ...agentEnv(), ...env }).filter(([, value]) => value !== ''));
    const child = spawnOwned(command!, commandArgs, { stdio: ['ignore', 'ignore', 'pipe'], env: childEnv });
    let stderr = '';
    child.stderr!.setEncoding('utf8');
    const banner = new Promise<{ url: string; sessionId: string }>((resolve, reject) => {
      child.stderr!.on('data', (chunk: string) => {
        // Keep draining for the process's whole life; remember only the tail (for errors).
        stderr = (stderr + chunk).slice(-8192);
        const url = /listening on (http:\/\/\S+)/.exec(stderr)?.[1];
        const sessionId = /session id:\s+(\S+)/.exec(stderr)?.[1];
        if (url && sessionId) resolve({ url, sessionId });
      });
      child.once('exit', (code) => reject(new Error(`agent CLI exited during start-up (code ${code}): ${stderr.slice(-500)}`)));
    });
    try {
      const { url, sessionId } = await withTimeout(banner, 30_000, 'the agent CLI banner');
      const cli = new AgentCli(child, url, sessionId);
      // Attached to the browser (CDP up, existing targets being set up).
      await until(async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.status === 200, 'agent /healthz 200', 30_000, 25);
      return cli;
    } catch (err) {
      await stopChild(child, 1000);
      throw err;
    }
  }

  /** Its /metrics, parsed (agentMetrics). */
  metrics(): Promise<AgentMetrics> {
    return agentMetrics(this.url);
  }

  /** SIGTERM: ends its streams, closes CDP, leaves the browser running; exits within 5 s. */
  stop(): Promise<void> {
    return stopChild(this.child, 6000);
  }
}

/** Value by metric name and then by the sample's labels as `k=v,...`. */
export type AgentMetrics = Map<string, Map<string, number>>;

/** An agent's /metrics (at `url`, the bench's token), parsed. */
export async function agentMetrics(url: string): Promise<AgentMetrics> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
  const byName: AgentMetrics = new Map();
  for (const family of parsePrometheusTextFormat(text)) {
    const byLabels = new Map<string, number>();
    for (const m of family.metrics) byLabels.set(labelKey(m.labels ?? {}), Number(m.value));
    byName.set(family.name, byLabels);
  }
  return byName;
}

/** bench/clients/agent-host.ts: the agent in-process with startAgent, driven over IPC. */
export class AgentHost {
  private constructor(
    private readonly peer: IpcPeer,
    private hostInfo: HostInfo,
  ) {}

  /** The agent's addresses (a new session after each attach()). */
  get info(): HostInfo {
    return this.hostInfo;
  }

  get pid(): number {
    return this.peer.pid;
  }

  get streamUrl(): string {
    return streamUrlOf(this.info.url, this.info.sessionId);
  }

  /** `profileDir`: run under `node --cpu-prof`, profile written there on close. */
  static async start(options: StartAgentOptions, profileDir?: string): Promise<AgentHost> {
    // The agent runs as deployed (deploy/, npm start): agentNodeFlags and agentEnv.
    const execArgv = ['--expose-gc', ...agentNodeFlags()];
    if (profileDir) {
      mkdirSync(profileDir, { recursive: true });
      execArgv.push('--cpu-prof', '--cpu-prof-dir', profileDir);
    }
    const child = forkOwned(sibling('agent-host'), [JSON.stringify({ token: TOKEN, ...options })], {
      execArgv,
      env: agentEnv(),
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    const peer = new IpcPeer(child, 'agent host');
    try {
      await peer.waitForEvent('ready', 30_000);
      return new AgentHost(peer, await peer.request<HostInfo>('info'));
    } catch (err) {
      await stopChild(child, 1000);
      throw err;
    }
  }

  current(): Promise<HostInfo> {
    return this.peer.request<HostInfo>('info');
  }

  /** Close the agent but keep its process (and the code V8 compiled for it) for attach(). */
  detach(): Promise<void> {
    return this.peer.request('detach', undefined, 10_000);
  }

  /** Start a new agent in the same process (no-op while one is attached). */
  async attach(): Promise<HostInfo> {
    this.hostInfo = await this.peer.request<HostInfo>('attach', undefined, 30_000);
    return this.hostInfo;
  }

  setMarkPrefix(prefix: string | null): Promise<void> {
    return this.peer.request('setMarkPrefix', prefix);
  }

  takeMarks(): Promise<TakenMarks> {
    return this.peer.request('takeMarks');
  }

  memory(gc: boolean): Promise<HostMemory> {
    return this.peer.request('mem', { gc });
  }

  async stop(): Promise<void> {
    await this.peer.request('close', undefined, 10_000).catch(() => undefined);
    // It exits by itself after close (and writes its CPU profile then): give it the time.
    await exited(this.peer.child, 10_000);
    await stopChild(this.peer.child, 5000);
  }
}

/** bench/clients/bare-client.ts. */
export class BareClient {
  private constructor(private readonly peer: IpcPeer) {}

  get pid(): number {
    return this.peer.pid;
  }

  static async start(options: BareClientOptions): Promise<BareClient> {
    const child = forkOwned(sibling('bare-client'), [JSON.stringify(options)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    const peer = new IpcPeer(child, 'bare client');
    try {
      await peer.waitForEvent('ready', 30_000);
      return new BareClient(peer);
    } catch (err) {
      await stopChild(child, 1000);
      throw err;
    }
  }

  stats(): Promise<BareStats> {
    return this.peer.request('stats');
  }

  async stop(): Promise<void> {
    await this.peer.request('close', undefined, 5000).catch(() => undefined);
    await stopChild(this.peer.child, 3000);
  }
}

/** bench/clients/playwright-client.ts: Playwright connected over CDP, following every page. */
export class PlaywrightClient {
  private constructor(private readonly peer: IpcPeer) {}

  get pid(): number {
    return this.peer.pid;
  }

  static async start(options: PlaywrightClientOptions): Promise<PlaywrightClient> {
    const child = forkOwned(sibling('playwright-client'), [JSON.stringify(options)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    const peer = new IpcPeer(child, 'playwright client');
    try {
      // connectOverCDP returns once every existing page is set up.
      await peer.waitForEvent('ready', 60_000);
      return new PlaywrightClient(peer);
    } catch (err) {
      await stopChild(child, 1000);
      throw err;
    }
  }

  stats(): Promise<PlaywrightStats> {
    return this.peer.request('stats');
  }

  async stop(): Promise<void> {
    await this.peer.request('close', undefined, 5000).catch(() => undefined);
    await stopChild(this.peer.child, 3000);
  }
}

/** bench/clients/probe-floor.ts: a process doing only the agent's health probe (the idle floor). */
export class ProbeFloor {
  private constructor(private readonly child: ChildProcess) {}

  get pid(): number {
    return this.child.pid!;
  }

  static start(wsUrl: string): ProbeFloor {
    return new ProbeFloor(spawnOwned(process.execPath, [sibling('probe-floor'), wsUrl], { stdio: ['ignore', 'ignore', 'inherit'] }));
  }

  async stop(): Promise<void> {
    await stopChild(this.child, 3000);
  }
}

/** bench/clients/subscribers.ts: one long-lived process holding the SSE readers of a measurement. */
export class Subscribers {
  private constructor(private readonly peer: IpcPeer) {}

  get pid(): number {
    return this.peer.pid;
  }

  static async start(): Promise<Subscribers> {
    const child = forkOwned(sibling('subscribers'), [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    return new Subscribers(new IpcPeer(child, 'subscribers'));
  }

  open(args: Omit<OpenArgs, 'token'>): Promise<number> {
    return this.peer.request('open', { token: TOKEN, ...args });
  }

  stats(): Promise<ReaderStats[]> {
    return this.peer.request('stats');
  }

  latency(args: LatencyArgs): Promise<LatencyReport> {
    return this.peer.request('latency', args);
  }

  closeAll(): Promise<void> {
    return this.peer.request('closeAll');
  }

  stop(): Promise<void> {
    return stopChild(this.peer.child, 2000);
  }
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
