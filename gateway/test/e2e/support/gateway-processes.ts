// The archive tests' processes: an agent and a gateway run as users run them (their command
// lines, bundled from the current sources into a directory of this test process's own, since other
// test files rebuild dist/), so that they can be killed with -9 and their machines "vanish".

import { build, type Plugin } from 'esbuild';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ChromiumProcess } from '../../../../src/browser/chromium-launcher.ts';
import { AGENT_ENV_VARS } from '../../../../src/config.ts';

const ROOT = resolve(import.meta.dirname, '../../../..');

/** As build.mjs: `browser-telemetry-agent/<entry>` bundled from the entry's source. */
export function agentSourcePlugin(): Plugin {
  const entries = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, { source?: string }> }).exports;
  return {
    name: 'agent-source',
    setup(esbuild) {
      esbuild.onResolve({ filter: /^browser-telemetry-agent(\/|$)/ }, (args) => {
        const entry = entries[`.${args.path.slice('browser-telemetry-agent'.length)}`];
        if (entry?.source === undefined) return { errors: [{ text: `the agent package exports no ${args.path}` }] };
        return { path: join(ROOT, entry.source) };
      });
    },
  };
}

export interface Bundles {
  agent: string;
  gateway: string;
  remove(): void;
}

/** Bundles src/main.ts and gateway/src/main.ts, as build.mjs does, into .tmp/<name>-<pid>/. */
export async function bundlePrograms(name: string): Promise<Bundles> {
  // Inside the repository, so the external packages resolve from its node_modules; one level
  // below the root, so the programs' `../package.json` is found as from dist/.
  const dir = join(ROOT, '.tmp', `${name}-${process.pid}`);
  await build({
    entryPoints: { agent: 'src/main.ts', gateway: 'gateway/src/main.ts' },
    absWorkingDir: ROOT,
    outdir: dir,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    packages: 'external',
    plugins: [agentSourcePlugin()],
    logLevel: 'silent',
  });
  return { agent: join(dir, 'agent.js'), gateway: join(dir, 'gateway.js'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The environment without the programs' own variables: only the test's flags count. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (name.startsWith('GATEWAY_') || name.startsWith('OTEL_') || AGENT_ENV_VARS.includes(name)) continue;
    env[name] = value;
  }
  return env;
}

/** A running program whose stdout carries pino JSON lines. */
export class ProgramProcess {
  stdout = '';
  stderr = '';
  private readonly exit: Promise<void>;

  private constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (this.stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.exit = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  static start(bundle: string, args: string[]): ProgramProcess {
    return new ProgramProcess(spawn(process.execPath, [bundle, ...args], { cwd: ROOT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] }));
  }

  get pid(): number {
    return this.child.pid!;
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** The first log line with this `msg`. */
  async line(msg: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const text of this.stdout.split('\n')) {
        if (!text.includes(`"msg":"${msg}"`)) continue;
        return JSON.parse(text) as Record<string, unknown>;
      }
      if (this.exited) throw new Error(`the process exited before logging "${msg}": ${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`no "${msg}" line within ${timeoutMs} ms: ${this.stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** kill -9, and its embedded Chromium with it (which would otherwise outlive it). */
  async kill(): Promise<void> {
    const chromium = this.chromiumPid();
    if (!this.exited) this.child.kill('SIGKILL');
    await this.exit;
    if (chromium !== undefined) {
      try {
        process.kill(chromium, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }

  /** SIGTERM, then -9 after 10 s. */
  async stop(): Promise<void> {
    if (this.exited) return;
    const chromium = this.chromiumPid();
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => void this.kill(), 10_000);
    await this.exit;
    clearTimeout(timer);
    if (chromium !== undefined) {
      try {
        process.kill(chromium, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }

  private chromiumPid(): number | undefined {
    try {
      const children = readFileSync(`/proc/${this.pid}/task/${this.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
      return children.find((pid) => /chrom/i.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8')));
    } catch {
      return undefined;
    }
  }
}

/** An agent process in embedded mode (its own headless Chromium) with a data directory of its own. */
export class AgentProgram {
  private constructor(
    readonly process: ProgramProcess,
    readonly url: string,
    readonly sessionId: string,
    readonly token: string,
    private readonly dataDir: string,
  ) {}

  static async start(bundles: Bundles, token: string, extra: string[] = []): Promise<AgentProgram> {
    const dataDir = mkdtempSync(join(tmpdir(), 'gateway-archive-agent-'));
    const program = ProgramProcess.start(bundles.agent, [
      '--port',
      '0',
      '--token',
      token,
      '--data-dir',
      dataDir,
      '--screenshots',
      'off',
      '--log-level',
      'info',
      ...extra,
    ]);
    const listening = await program.line('listening');
    return new AgentProgram(program, listening.url as string, listening.session_id as string, token, dataDir);
  }

  /** The DevTools URL of its Chromium (to drive a tab). */
  browserWsUrl(): string {
    const children = readFileSync(`/proc/${this.process.pid}/task/${this.process.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
    for (const pid of children) {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const dir = argv.find((arg) => arg.startsWith('--user-data-dir='))?.slice('--user-data-dir='.length);
      const url = dir ? ChromiumProcess.readActivePort(dir) : undefined;
      if (url) return url;
    }
    throw new Error('no Chromium child of the agent');
  }

  async kill(): Promise<void> {
    await this.process.kill();
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  async stop(): Promise<void> {
    await this.process.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** A gateway process on `storage`, with extra flags. */
export async function startGatewayProgram(
  bundles: Bundles,
  storage: { dataDir: string } | { databaseUrl: string },
  extra: string[] = [],
): Promise<{ process: ProgramProcess; url: string; instance: string }> {
  const flags = 'dataDir' in storage ? ['--data-dir', storage.dataDir] : ['--database-url', storage.databaseUrl];
  const program = ProgramProcess.start(bundles.gateway, ['--port', '0', '--log-level', 'info', ...flags, ...extra]);
  const listening = await program.line('listening');
  return { process: program, url: listening.url as string, instance: listening.instance as string };
}

/** Polls `check` until it returns a value other than undefined. */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
