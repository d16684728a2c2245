// Reading a Playwright trace archive the way its users do (docs/export.md "Playwright trace"):
// Playwright's own command line (`playwright trace …`) and its trace viewer (`show-trace`) in a
// headless Chromium. Shared by the agent's trace tests and the gateway's.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CHROMIUM_FLAGS, locateChromium } from '../../../src/browser/chromium-launcher.ts';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../../node_modules/playwright-core/cli.js', import.meta.url));

/** `playwright trace <args>` run in `cwd` (where `trace open` keeps the opened trace); its output. */
export async function traceCli(cwd: string, ...args: string[]): Promise<string> {
  return (await run(process.execPath, [CLI, 'trace', ...args], { cwd })).stdout;
}

/** `trace open` on `zip` in `cwd`, then the listings: `open`, `actions`, `requests`, `console`, `errors`. */
export async function readTraceListings(cwd: string, zip: string): Promise<Record<string, string>> {
  const out: Record<string, string> = { open: await traceCli(cwd, 'open', zip) };
  for (const name of ['actions', 'requests', 'console', 'errors']) out[name] = await traceCli(cwd, name);
  return out;
}

export interface TraceViewer {
  /** The `show-trace` server; kill it when done. */
  process: ChildProcess;
  /** The headless Chromium showing it; close it when done. */
  browser: Browser;
  /** The viewer's page, loaded. */
  page: Page;
}

/** Playwright's trace viewer on `zip` (started in `cwd`), opened in a headless Chromium. */
export async function openTraceViewer(zip: string, cwd: string): Promise<TraceViewer> {
  const viewer = spawn(process.execPath, [CLI, 'show-trace', '--port', '0', '--host', '127.0.0.1', zip], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`show-trace printed no URL: ${out}`)), 20_000);
      viewer.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const match = /https?:\/\/\S+/.exec(out);
        if (match) {
          clearTimeout(timer);
          resolve(match[0]);
        }
      });
    });
    const binary = await locateChromium();
    // The binary's own headless flag (Playwright's `headless: true` adds plain --headless).
    const headless = binary.headlessFlag === '--headless';
    const args = [...CHROMIUM_FLAGS, ...(headless ? [] : [binary.headlessFlag])];
    const browser = await chromium.launch({ executablePath: binary.path, env: { ...process.env, ...binary.env }, args, headless, timeout: 30_000 });
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(url);
      return { process: viewer, browser, page };
    } catch (err) {
      await browser.close();
      throw err;
    }
  } catch (err) {
    viewer.kill();
    throw err;
  }
}
