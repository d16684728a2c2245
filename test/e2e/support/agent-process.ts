// A running `node dist/main.js` as a user runs it, and the process-tree helpers the command-line
// tests use to see what it launched.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ChromiumProcess } from '../../../src/browser/chromium-launcher.ts';
import { AGENT_ENV_VARS } from '../../../src/config.ts';

export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
export const MAIN = 'dist/main.js';

/** One data directory for the agents this test process starts, removed at exit. */
const DATA_DIR = mkdtempSync(join(tmpdir(), 'bta-cli-data-'));
process.once('exit', () => rmSync(DATA_DIR, { recursive: true, force: true }));

export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  // Every variable the agent reads goes, so the caller's environment cannot leak into a test.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_') && !AGENT_ENV_VARS.includes(name)));
  return { ...env, DATA_DIR, ...extra };
}

export const SHUTDOWN_LIMIT_MS = 5_000;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running `node dist/main.js`, with its output collected. */
export class AgentProcess {
  stdout = '';
  stderr = '';
  exited: Exit | undefined;
  private readonly exitPromise: Promise<Exit>;
  private waiters: Array<() => void> = [];

  private constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stdout += chunk;
      this.notify();
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
      this.notify();
    });
    this.exitPromise = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exited = { code, signal };
        this.notify();
        resolve(this.exited);
      });
    });
  }

  /**
   * The built agent as `npm start` and the deploy files run it: `--max-semi-space-size=4` and
   * `MALLOC_ARENA_MAX=1`, `MALLOC_MMAP_THRESHOLD_=65536` (docs/operations.md "Running it"), so memory bounds are measured as deployed.
   */
  static start(args: string[], env: NodeJS.ProcessEnv = cleanEnv()): AgentProcess {
    const child = spawn(process.execPath, ['--max-semi-space-size=4', MAIN, ...args], {
      cwd: ROOT,
      env: { MALLOC_ARENA_MAX: '1', MALLOC_MMAP_THRESHOLD_: '65536', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new AgentProcess(child);
  }

  /**
   * The built agent started the plain way, as the `browser-telemetry-agent` bin and `node
   * dist/main.js` run it: no Node flags and no malloc variables (docs/operations.md "Running it").
   */
  static startPlain(args: string[], env: NodeJS.ProcessEnv = cleanEnv()): AgentProcess {
    const plainEnv = Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('MALLOC_') && name !== 'NODE_OPTIONS'));
    const child = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env: plainEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    return new AgentProcess(child);
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** The JSON log lines written to stdout so far. */
  get logLines(): Array<Record<string, unknown>> {
    return this.stdout
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  /** Waits until `condition` holds over the output; fails early if the process exits. */
  async waitFor<T>(condition: () => T | undefined, what: string, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = condition();
      if (value !== undefined) return value;
      if (this.exited) throw new Error(`agent exited (${JSON.stringify(this.exited)}) while waiting for ${what}; stderr: ${this.stderr}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; stderr: ${this.stderr}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The `listening` log line, once written. */
  listening(timeoutMs?: number): Promise<{ url: string; session_id: string }> {
    return this.waitFor(
      () => this.logLines.find((line) => line.msg === 'listening') as { url: string; session_id: string } | undefined,
      'the listening log line',
      timeoutMs,
    );
  }

  async waitForExit(timeoutMs: number): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`agent did not exit within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return await Promise.race([this.exitPromise, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Clean-up after a test: SIGTERM, then SIGKILL (and the Chromium it owns) if it hangs. */
  async stop(chromiumPid?: number): Promise<void> {
    if (this.exited) return;
    this.child.kill('SIGTERM');
    try {
      await this.waitForExit(SHUTDOWN_LIMIT_MS + 1_000);
    } catch {
      this.child.kill('SIGKILL');
      if (chromiumPid !== undefined && isRunning(chromiumPid)) process.kill(chromiumPid, 'SIGKILL');
      await this.exitPromise;
    }
  }

  private notify(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

/** Direct children of `pid` as [pid, command line]. */
export function childrenOf(pid: number): Array<{ pid: number; args: string }> {
  const result = spawnSync('ps', ['--ppid', String(pid), '-o', 'pid=,args='], { encoding: 'utf8' });
  return result.stdout
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), args: m[2]! }));
}

/** `pid` and every process below it. */
export function processTree(pid: number): number[] {
  return [pid, ...childrenOf(pid).flatMap((child) => processTree(child.pid))];
}

/** True while `pid` exists and is not a zombie. */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 3, after the parenthesised command name (which may contain spaces).
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

export async function waitUntil(condition: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The Chromium the agent launched (embedded mode) and its DevTools URL. */
export async function embeddedChromium(agent: AgentProcess): Promise<{ pid: number; browserWsUrl: string }> {
  const chromium = childrenOf(agent.pid).find((child) => /chrom/i.test(child.args));
  if (!chromium) throw new Error(`no Chromium child of the agent: ${JSON.stringify(childrenOf(agent.pid))}`);
  const argv = readFileSync(`/proc/${chromium.pid}/cmdline`, 'utf8').split('\0');
  const userDataDir = argv.find((arg) => arg.startsWith('--user-data-dir='))!.slice('--user-data-dir='.length);
  const browserWsUrl = ChromiumProcess.readActivePort(userDataDir);
  if (!browserWsUrl) throw new Error(`no DevToolsActivePort in ${userDataDir}`);
  return { pid: chromium.pid, browserWsUrl };
}
