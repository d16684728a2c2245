// The command line end to end (docs/configuration.md): `node dist/main.js` as a user runs it: flag errors,
// --help/--version, the start-up banner and log line, signals, embedded and attached mode.

import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChromiumProcess } from '../../src/browser/chromium-launcher.ts';
import { consoleText, Driver, SseClient, TOKEN, type Tab } from './support/harness.ts';
import {
  AgentProcess,
  cleanEnv,
  embeddedChromium,
  type Exit,
  isRunning,
  MAIN,
  processTree,
  ROOT,
  SHUTDOWN_LIMIT_MS,
  waitUntil,
} from './support/agent-process.ts';

const PACKAGE_VERSION = (JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string }).version;

async function logLines(tab: Tab, prefix: string, count: number, padding = 0): Promise<void> {
  const extra = padding > 0 ? `, 'x'.repeat(${padding})` : '';
  await tab.evaluate(`for (let i = 0; i < ${count}; i++) console.log(${JSON.stringify(prefix)} + i${extra})`);
}

async function waitForLine(client: SseClient, text: string, timeoutMs?: number): Promise<void> {
  await client.waitFor((c) => c.ofType('console_log').some((e) => consoleText(e) === text), `console line ${text}`, timeoutMs);
}

async function latestSeq(url: string, sessionId: string, token: string): Promise<number> {
  const response = await fetch(`${url}/browsers/${sessionId}`, { headers: { authorization: `Bearer ${token}` } });
  return ((await response.json()) as { seq: number }).seq;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

beforeAll(() => {
  // Tests run the CLI as shipped: bundle the current sources first.
  execFileSync(process.execPath, ['build.mjs', '--no-typecheck'], { cwd: ROOT, stdio: 'pipe' });
}, 60_000);

describe('invalid configuration', () => {
  const cases: Array<{ name: string; args: string[]; env?: Record<string, string>; names: string }> = [
    { name: '--port abc', args: ['--port', 'abc'], names: '--port' },
    { name: '--ring-events 0', args: ['--ring-events', '0'], names: '--ring-events' },
    { name: `--telemetry '{"nope":1}'`, args: ['--telemetry', '{"nope":1}'], names: '--telemetry' },
    { name: 'PORT=abc in the environment', args: [], env: { PORT: 'abc' }, names: 'PORT' },
    { name: 'an unknown flag', args: ['--no-such-flag', '1'], names: '--no-such-flag' },
  ];

  it.each(cases)('exits with status 2 and one stderr line naming the setting for $name', ({ args, env, names }) => {
    const result = spawnSync(process.execPath, [MAIN, ...args], { cwd: ROOT, env: cleanEnv(env), encoding: 'utf8', timeout: 10_000 });
    expect(result.status).toBe(2);
    const lines = result.stderr.split('\n').filter((line) => line !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(names);
  });
});

describe('--help and --version', () => {
  const FLAGS = [
    'cdp-url',
    'chrome-path',
    'host',
    'port',
    'session-id',
    'token',
    'tokens-file',
    'telemetry',
    'ring-events',
    'ring-bytes',
    'keepalive-ms',
    'log-level',
    'screenshots',
    'max-body-bytes',
    'max-body-fetch-bytes',
    'max-post-data-bytes',
    'max-console-text-bytes',
    'max-console-args',
    'max-header-value-bytes',
    'max-stack-frames',
    'max-event-data-bytes',
    'max-upload-bytes',
    'help',
    'version',
  ];

  it('--help lists every flag and exits 0', () => {
    const result = spawnSync(process.execPath, [MAIN, '--help'], { cwd: ROOT, env: cleanEnv(), encoding: 'utf8', timeout: 10_000 });
    expect(result.status).toBe(0);
    const missing = FLAGS.filter((flag) => !new RegExp(`(^|[\\s,])--${flag}(?![\\w-])`, 'm').test(result.stdout));
    expect(missing).toEqual([]);
  });

  it('--version prints the package version and exits 0', () => {
    const result = spawnSync(process.execPath, [MAIN, '--version'], { cwd: ROOT, env: cleanEnv(), encoding: 'utf8', timeout: 10_000 });
    expect(result.status).toBe(0);
    expect(result.stdout.trim()).toBe(PACKAGE_VERSION);
  });
});

describe('embedded mode start-up', () => {
  let agent: AgentProcess;
  let chromiumPid: number | undefined;
  let listening: { url: string; session_id: string };
  let curl: { token: string; url: string };
  const clients: SseClient[] = [];

  beforeAll(async () => {
    agent = AgentProcess.start(['--port', '0']);
    listening = await agent.listening();
    curl = await agent.waitFor(() => {
      const match = /curl -N -H 'Authorization: Bearer (\S+)' (\S+)\n/.exec(agent.stderr);
      return match ? { token: match[1]!, url: match[2]! } : undefined;
    }, 'the curl command on stderr');
    chromiumPid = (await embeddedChromium(agent)).pid;
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await agent?.stop(chromiumPid);
  });

  it('logs a listening line with url and session_id as JSON on stdout', () => {
    expect(listening.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(listening.session_id).toMatch(/^[A-Za-z0-9_-]{16,}$/);
  });

  it('writes only JSON lines to stdout', () => {
    for (const line of agent.stdout.split('\n').filter((l) => l !== '')) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('prints the listening URL on stderr', () => {
    expect(agent.stderr).toContain(`listening on ${listening.url}`);
  });

  it('prints the session id on stderr', () => {
    expect(agent.stderr).toMatch(new RegExp(`session id:\\s+${listening.session_id}\\n`));
  });

  it('prints the generated token on stderr', () => {
    const token = /token:\s+(\S+)\n/.exec(agent.stderr)?.[1];
    expect(token).toBe(curl.token);
    expect(token!.length).toBeGreaterThanOrEqual(32);
  });

  it('prints a curl -N command for the stream URL', () => {
    expect(curl.url).toBe(`${listening.url}/browsers/${listening.session_id}/telemetry`);
  });

  it('the printed token and URL open the stream', async () => {
    const client = await SseClient.open(curl.url, curl.token);
    clients.push(client);
    expect(client.status).toBe(200);
    expect(client.headers['content-type']).toBe('text/event-stream');
  });
});

describe('SIGTERM in embedded mode', () => {
  const LINES = 3000;
  const PADDING = 2000;
  let agent: AgentProcess;
  let chromium: { pid: number; browserWsUrl: string };
  let chromiumTree: number[];
  let driver: Driver | undefined;
  let client: SseClient;
  let latestAtSignal: number;
  let exit: Exit;
  let exitMs: number;

  beforeAll(async () => {
    agent = AgentProcess.start(['--port', '0', '--token', TOKEN]);
    const { url, session_id: sessionId } = await agent.listening();
    chromium = await embeddedChromium(agent);
    driver = await Driver.connect(chromium.browserWsUrl);
    const tab = await driver.firstPage();
    const streamUrl = `${url}/browsers/${sessionId}/telemetry`;
    const observer = await SseClient.open(`${streamUrl}?replay=all`, TOKEN);
    client = await SseClient.open(streamUrl, TOKEN);
    await tab.ready(observer);
    // Paused, so frames are still waiting in the agent when the signal arrives.
    client.pause();
    await logLines(tab, 'before-signal-', LINES, PADDING);
    await waitForLine(observer, `before-signal-${LINES - 1}`, 30_000);
    latestAtSignal = await latestSeq(url, sessionId, TOKEN);
    chromiumTree = processTree(chromium.pid);

    const signalledAt = Date.now();
    agent.child.kill('SIGTERM');
    client.resume();
    exit = await agent.waitForExit(SHUTDOWN_LIMIT_MS + 5_000);
    exitMs = Date.now() - signalledAt;
    await client.waitForEnd(5_000);
    observer.close();
  }, 60_000);
  afterAll(async () => {
    client?.close();
    await driver?.close().catch(() => undefined);
    await agent?.stop(chromium?.pid);
  });

  it('delivers every event logged before the signal, then ends the stream', () => {
    expect(client.ended).toBe(true);
    expect(client.frameIds).toEqual(range(client.frameIds[0]!, latestAtSignal));
  });

  it('exits with code 0 within 5 s', () => {
    expect(exit).toEqual({ code: 0, signal: null });
    expect(exitMs).toBeLessThan(SHUTDOWN_LIMIT_MS);
  });

  it('ends the Chromium it launched', () => {
    expect(isRunning(chromium.pid)).toBe(false);
  });

  it('leaves no Chromium helper process behind', async () => {
    await waitUntil(() => chromiumTree.every((pid) => !isRunning(pid)), 'every Chromium process is gone', 5_000);
  });
});

describe('SIGINT in embedded mode', () => {
  let agent: AgentProcess;
  let chromiumPid: number | undefined;
  let client: SseClient;
  let exit: Exit;

  beforeAll(async () => {
    agent = AgentProcess.start(['--port', '0', '--token', TOKEN]);
    const { url, session_id: sessionId } = await agent.listening();
    chromiumPid = (await embeddedChromium(agent)).pid;
    client = await SseClient.open(`${url}/browsers/${sessionId}/telemetry?replay=all`, TOKEN);
    agent.child.kill('SIGINT');
    exit = await agent.waitForExit(SHUTDOWN_LIMIT_MS + 5_000);
    await client.waitForEnd(5_000);
  }, 60_000);
  afterAll(async () => {
    client?.close();
    await agent?.stop(chromiumPid);
  });

  it('exits with code 0, ending the open stream', () => {
    expect(exit).toEqual({ code: 0, signal: null });
    expect(client.ended).toBe(true);
  });

  it('ends the Chromium it launched', () => {
    expect(isRunning(chromiumPid!)).toBe(false);
  });
});

describe('attached mode (--cdp-url)', () => {
  const SESSION_ID = 'attached-session-for-cli-test';
  let browser: ChromiumProcess;
  let agent: AgentProcess;
  let driver: Driver;
  let tab: Tab;
  let stream: SseClient;

  beforeAll(async () => {
    browser = await ChromiumProcess.launch();
    const httpEndpoint = browser.browserWsUrl.replace(/^ws:\/\/([^/]+)\/.*$/, 'http://$1');
    agent = AgentProcess.start(['--port', '0', '--token', TOKEN, '--session-id', SESSION_ID, '--cdp-url', httpEndpoint]);
    const { url } = await agent.listening();
    stream = await SseClient.open(`${url}/browsers/${SESSION_ID}/telemetry?replay=all`, TOKEN);
    driver = await Driver.connect(browser.browserWsUrl);
    tab = await driver.firstPage();
    await tab.ready(stream);
  }, 60_000);
  afterAll(async () => {
    stream?.close();
    await agent?.stop();
    await driver?.close().catch(() => undefined);
    await browser?.close();
  });

  it('streams console lines of the external browser', async () => {
    await logLines(tab, 'attached-', 1);
    await waitForLine(stream, 'attached-0');
    expect(stream.problems).toEqual([]);
  });

  it('leaves the external browser running on SIGTERM, and exits 0', async () => {
    agent.child.kill('SIGTERM');
    const exit = await agent.waitForExit(SHUTDOWN_LIMIT_MS + 5_000);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(browser.hasExited).toBe(false);
    const { product } = (await driver.send('Browser.getVersion')) as { product: string };
    expect(product).toMatch(/Chrom/);
  });
});
