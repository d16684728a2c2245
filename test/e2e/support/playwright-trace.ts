// Reading a Playwright trace archive the way its users do (docs/export.md "Playwright trace"):
// Playwright's own command line (`playwright trace …`) and its trace viewer (`show-trace`) in a
// headless Chromium. Shared by the agent's trace tests and the gateway's.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { inflateRawSync } from 'node:zlib';
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

/** The entries of a (non-zip64) zip by name, read through its central directory: a trace's files as they are stored. */
export function unzipEntries(zip: Buffer): Map<string, Buffer> {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  const count = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  const entries = new Map<string, Buffer>();
  for (let i = 0; i < count; i++) {
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const data = zip.subarray(start, start + compressed);
    entries.set(name, method === 8 ? inflateRawSync(data) : Buffer.from(data));
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}
