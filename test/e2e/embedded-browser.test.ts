// The browser a fresh machine gets (docs/operations.md "Which browser"): with no Chromium on PATH
// and no --chrome-path, the built agent extracts the Chromium shipped in the @sparticuz/chromium
// npm package, runs it, and its telemetry flows. Also: the browser never outlives the agent
// (kill -9 included), and a dead agent's profile is removed by the next one.

import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledChromium, defaultCacheRoot } from '../../src/browser/bundled-chromium.ts';
import { ChromiumProcess, findSystemChromium, locateChromium, removeStaleProfiles } from '../../src/browser/chromium-launcher.ts';
import { consoleText, Driver, FixtureServer, SseClient, TOKEN } from './support/harness.ts';
import { AgentProcess, cleanEnv, embeddedChromium, isRunning, waitUntil } from './support/agent-process.ts';

/** A PATH that holds node and nothing else: no browser to find. */
function pathWithoutBrowser(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bta-path-'));
  symlinkSync(process.execPath, join(dir, 'node'));
  return dir;
}

let pages: FixtureServer;
let emptyPath: string;

beforeAll(async () => {
  pages = await new FixtureServer().start();
  pages.route('/hello.html', '<!doctype html><title>hello</title><script>console.log("hello from the bundled browser")</script>');
  emptyPath = pathWithoutBrowser();
});

afterAll(async () => {
  await pages?.close();
  rmSync(emptyPath, { recursive: true, force: true });
});

describe('choosing the browser', () => {
  it('finds no system browser on a PATH without one', () => {
    expect(findSystemChromium(undefined, emptyPath)).toBeUndefined();
  });

  it('falls back to the bundled browser, extracted into the cache and verified', async () => {
    const binary = await locateChromium({ pathEnv: emptyPath });
    expect(binary.source).toBe('bundled');
    expect(binary.path.startsWith(defaultCacheRoot())).toBe(true);
    expect(binary.headlessFlag).toBe('--headless=shell');
    expect(existsSync(join(binary.path, '..', 'manifest.json'))).toBe(true);
  }, 120_000);

  it('re-extracts a damaged copy instead of running it', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'bta-cache-'));
    try {
      const first = await bundledChromium(cache);
      const size = statSync(first.path).size;
      truncateSync(first.path, 1000);
      // A new process would verify again; a fresh module-level cache key (another root spelling)
      // stands in for it here.
      const again = await bundledChromium(`${cache}/.`);
      expect(statSync(again.path).size).toBe(size);
      expect(readdirSync(cache).filter((name) => name.includes('partial'))).toEqual([]);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('where the bundled browser is extracted', () => {
  it('uses $XDG_CACHE_HOME, else ~/.cache, else the temp directory when the home is not writable', () => {
    const base = mkdtempSync(join(tmpdir(), 'bta-cacheroot-'));
    try {
      expect(defaultCacheRoot({ XDG_CACHE_HOME: join(base, 'xdg'), HOME: join(base, 'home') })).toBe(join(base, 'xdg', 'browser-telemetry-agent'));
      expect(defaultCacheRoot({ HOME: join(base, 'home') })).toBe(join(base, 'home', '.cache', 'browser-telemetry-agent'));
      // A home that cannot hold a directory (a file stands where it would be).
      writeFileSync(join(base, 'file-home'), '');
      const fallback = defaultCacheRoot({ HOME: join(base, 'file-home') });
      expect(fallback.startsWith(tmpdir())).toBe(true);
      expect(statSync(fallback).isDirectory()).toBe(true);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});

describe('the built agent on a machine without a browser', () => {
  let agent: AgentProcess | undefined;

  afterAll(async () => {
    await agent?.stop();
  });

  it('starts with no flags, logs the bundled browser, and streams its console line', async () => {
    agent = AgentProcess.start(['--port', '0', '--token', TOKEN], cleanEnv({ PATH: emptyPath }));
    const listening = await agent.listening();
    const started = await agent.waitFor(() => agent!.logLines.find((line) => line.msg === 'embedded browser started'), 'the embedded browser log line', 60_000);
    expect(started).toMatchObject({ source: 'bundled' });
    expect(String(started.version)).toMatch(/Chrome\/\d+/);
    expect(String(started.browser)).toContain('chromium-');

    const client = await SseClient.open(`${listening.url}/browsers/${listening.session_id}/telemetry`, TOKEN);
    try {
      const { browserWsUrl } = await embeddedChromium(agent);
      const driver = await Driver.connect(browserWsUrl);
      try {
        const tab = await driver.firstPage();
        await tab.navigate(pages.url('/hello.html'));
        await client.waitFor((c) => c.ofType('console_log').some((e) => consoleText(e) === 'hello from the bundled browser'), 'the console line', 20_000);
      } finally {
        await driver.close();
      }
    } finally {
      client.close();
    }
  }, 120_000);
});

describe('the browser dies with the agent', () => {
  it("kill -9 of the agent ends its Chromium, and the next agent removes the dead one's profile", async () => {
    // The agent's profiles go under a temp directory of this test's own (the launcher makes them in
    // os.tmpdir(), which follows TMPDIR): no other test file's agent sees them, so none can remove
    // the dead agent's profile before this test's removeStaleProfiles does.
    const profileRoot = mkdtempSync(join(tmpdir(), 'bta-profiles-'));
    const agent = AgentProcess.start(['--port', '0', '--token', TOKEN], cleanEnv({ TMPDIR: profileRoot }));
    let chromiumPid: number | undefined;
    try {
      await agent.listening();
      const chromium = await embeddedChromium(agent);
      chromiumPid = chromium.pid;
      const profiles = readdirSync(profileRoot).filter((name) => name.startsWith(`bta-chromium-${agent.pid}-`));
      expect(profiles).toHaveLength(1);
      agent.child.kill('SIGKILL');
      await agent.waitForExit(5_000);
      await waitUntil(() => !isRunning(chromium.pid), 'the orphaned Chromium exits', 10_000);
      // The dead agent could not remove its profile; the next launch does.
      const profile = join(profileRoot, profiles[0]!);
      expect(existsSync(profile)).toBe(true);
      expect(removeStaleProfiles(profileRoot)).toContain(profile);
      expect(existsSync(profile)).toBe(false);
    } finally {
      if (chromiumPid !== undefined && isRunning(chromiumPid)) process.kill(chromiumPid, 'SIGKILL');
      await agent.stop();
      rmSync(profileRoot, { recursive: true, force: true });
    }
  }, 60_000);

  it('a launched ChromiumProcess keeps the profile of a live launcher', async () => {
    const own = join(tmpdir(), `bta-chromium-${process.pid}-keep`);
    mkdirSync(own, { recursive: true });
    const chromium = await ChromiumProcess.launch();
    try {
      expect(existsSync(own)).toBe(true);
    } finally {
      await chromium.close();
      rmSync(own, { recursive: true, force: true });
    }
  }, 60_000);
});
