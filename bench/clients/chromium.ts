// A headless Chromium for the bench, opened directly on a start URL (no CDP client needed to get
// the first tab going), with the agent's own flags (docs/chromium.md "Launching").

import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHROMIUM_FLAGS, locateChromium } from '../../src/browser/chromium-launcher.ts';
import { ownDir, removeDir, signalGroup, sleep, spawnOwned, stopChild } from '../lib/processes.ts';

export class BenchBrowser {
  private constructor(
    private readonly child: ChildProcess,
    private readonly userDataDir: string,
    /** `ws://127.0.0.1:<port>/devtools/browser/<id>` */
    readonly wsUrl: string,
  ) {}

  /** `http://127.0.0.1:<port>`: what `--cdp-url` is given. */
  get httpUrl(): string {
    return `http://${new URL(this.wsUrl).host}`;
  }

  get pid(): number {
    return this.child.pid!;
  }

  static async launch(startUrl: string): Promise<BenchBrowser> {
    const binary = await locateChromium({ chromePath: process.env.CHROME_PATH });
    const userDataDir = mkdtempSync(join(tmpdir(), 'bta-bench-chromium-'));
    ownDir(userDataDir);
    const args = [binary.headlessFlag, ...CHROMIUM_FLAGS, '--remote-debugging-port=0', `--user-data-dir=${userDataDir}`, '--window-size=1280,720', startUrl];
    const child = spawnOwned(binary.path, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...binary.env } });
    try {
      const wsUrl = await new Promise<string>((resolve, reject) => {
        let buffered = '';
        const timer = setTimeout(() => reject(new Error('Chromium did not print its DevTools URL within 30 s')), 30_000);
        child.once('exit', (code, signal) => {
          clearTimeout(timer);
          reject(new Error(`Chromium exited during start-up (code ${code}, signal ${signal}): ${buffered.slice(-400)}`));
        });
        // Keep draining stderr for the process's whole life, or Chromium blocks on a full pipe.
        child.stderr!.setEncoding('utf8');
        child.stderr!.on('data', (chunk: string) => {
          if (buffered.length < 64 * 1024) buffered += chunk;
          const match = /DevTools listening on (ws:\/\/\S+)/.exec(buffered);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]!);
          }
        });
      });
      return new BenchBrowser(child, userDataDir, wsUrl);
    } catch (err) {
      signalGroup(child, 'SIGKILL');
      removeDir(userDataDir);
      throw err;
    }
  }

  /** One more tab on `url`, through the DevTools HTTP endpoint (no CDP client involved). */
  async openTab(url: string): Promise<void> {
    const response = await fetch(`${this.httpUrl}/json/new?${url}`, { method: 'PUT' });
    if (!response.ok) throw new Error(`/json/new answered ${response.status}`);
  }

  async close(): Promise<void> {
    await stopChild(this.child, 3000);
    // Removing the profile right after exit can hit ENOTEMPTY while helpers finish.
    for (let attempt = 0; attempt < 10; attempt++) {
      if (removeDir(this.userDataDir)) return;
      await sleep(100 * (attempt + 1));
    }
  }
}
