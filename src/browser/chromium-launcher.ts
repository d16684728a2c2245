// Embedded mode: launch and own a headless Chromium (recipe in CHROMIUM-NOTES.md "Launching").

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, readFileSync, accessSync, constants } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

export class ChromiumNotFoundError extends Error {
  override name = 'ChromiumNotFoundError';
}

const CANDIDATES = ['chromium', 'chromium-browser', 'google-chrome'];

/**
 * The Chromium binary to run: the explicit path, else the first candidate on PATH. Debian's
 * `/usr/bin/chromium` is a shell wrapper that adds flags from /etc/chromium.d and prints errors on
 * some machines, so its real binary `/usr/lib/chromium/chromium` is preferred when it exists.
 */
export function findChromium(explicitPath?: string, pathEnv = process.env.PATH ?? ''): string {
  if (explicitPath) {
    if (!isExecutable(explicitPath)) throw new ChromiumNotFoundError(`--chrome-path: ${explicitPath} is not an executable file`);
    return explicitPath;
  }
  for (const name of CANDIDATES) {
    for (const dir of pathEnv.split(delimiter)) {
      if (!dir) continue;
      const candidate = join(dir, name);
      if (!isExecutable(candidate)) continue;
      if (name === 'chromium' && isExecutable('/usr/lib/chromium/chromium')) return '/usr/lib/chromium/chromium';
      return candidate;
    }
  }
  if (isExecutable('/usr/lib/chromium/chromium')) return '/usr/lib/chromium/chromium';
  throw new ChromiumNotFoundError(
    `no Chromium found on PATH (looked for ${CANDIDATES.join(', ')}); install it with "apt-get install -y chromium" or pass --chrome-path`,
  );
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

export interface LaunchOptions {
  executablePath: string;
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

  private constructor(
    readonly child: ChildProcess,
    readonly userDataDir: string,
    readonly browserWsUrl: string,
  ) {
    this.exitPromise = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        this.exited = true;
        resolve();
      } else
        child.once('exit', () => {
          this.exited = true;
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

  static async launch(options: LaunchOptions): Promise<ChromiumProcess> {
    const userDataDir = mkdtempSync(join(tmpdir(), 'bta-chromium-'));
    const args = [...CHROMIUM_FLAGS, `--remote-debugging-port=${options.port ?? 0}`, `--user-data-dir=${userDataDir}`, ...(options.extraArgs ?? []), 'about:blank'];
    const child = spawn(options.executablePath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    const timeoutMs = options.timeoutMs ?? 20_000;
    try {
      const wsUrl = await new Promise<string>((resolve, reject) => {
        let buffered = '';
        let found = false;
        const timer = setTimeout(() => reject(new Error(`Chromium did not print its DevTools URL within ${timeoutMs} ms`)), timeoutMs);
        const onExit = (code: number | null, signal: string | null) => {
          clearTimeout(timer);
          reject(new Error(`Chromium exited during start-up (code ${code}, signal ${signal}): ${buffered.slice(-500).trim()}`));
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
      return new ChromiumProcess(child, userDataDir, wsUrl);
    } catch (err) {
      child.kill('SIGKILL');
      removeDirWithRetry(userDataDir);
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
    if (!this.exited) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
      await this.exitPromise;
      clearTimeout(timer);
    }
    this.child.stderr?.destroy();
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
