// Helper process: the automation-driven browser's client, (p) in the page-load section. Real
// Playwright (playwright-core, `chromium.connectOverCDP`), as a user driving the browser with it
// would connect: on every page and iframe it enables Page, Runtime, Log and Network, turns
// lifecycle events on, adds its utility world, auto-attaches with waitForDebuggerOnStart
// (dedicated workers get Runtime and Network, service workers Runtime and Network from the
// browser session), and then follows every event. It drives nothing: the bench's pages navigate
// themselves, as in every mode, so that only following costs the page. The process exits without
// `browser.close()`, which leaves the browser and its tabs as they are (only the connection closes).
//
// argv[2]: JSON of PlaywrightClientOptions.

import { chromium } from 'playwright-core';
import { pushEvent, serveIpc } from '../lib/ipc.ts';

export interface PlaywrightClientOptions {
  /** The browser's `ws://.../devtools/browser/<id>`, or the agent's URL (its CDP endpoint). */
  wsUrl: string;
  /** Sent with the connection: the agent's `Authorization` when connecting through it. */
  headers?: Record<string, string>;
}

export interface PlaywrightStats {
  /** Pages Playwright knows of (every tab, in the browser's default context). */
  pages: number;
  /** Requests and console messages Playwright reported to this process's listeners. */
  requests: number;
  console: number;
}

const options = JSON.parse(process.argv[2] ?? '{}') as PlaywrightClientOptions;
const browser = await chromium.connectOverCDP(options.wsUrl, options.headers ? { headers: options.headers } : {});
const stats: PlaywrightStats = { pages: 0, requests: 0, console: 0 };
// Listeners as a test or a scraper has them: each request and console message becomes an object
// in this process, as in a user's. (Playwright builds them whether or not anyone listens.)
const context = browser.contexts()[0];
if (context === undefined) throw new Error('connectOverCDP: no default context');
context.on('request', () => stats.requests++);
context.on('console', () => stats.console++);

serveIpc({
  stats(): PlaywrightStats {
    return { ...stats, pages: context.pages().length };
  },
  close(): void {
    // Only the connection goes: browser.close() is not called (see the header).
    setTimeout(() => process.exit(0), 20);
  },
});

pushEvent({ event: 'ready' });
