// The command line end to end (SPEC §2): `node dist/main.js` as a user runs it: flag errors,
// --help/--version, the start-up banner and log line, signals, embedded and attached mode.

import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChromiumProcess, findChromium } from '../../src/browser/chromium-launcher.ts';
import { consoleText, Driver, SseClient, TOKEN, type Tab } from './harness.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = 'dist/main.js';
const PACKAGE_VERSION = (JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string }).version;

/** Every variable the agent reads, so the caller's environment cannot leak into a test. */
const AGENT_ENV_VARS = [
  'CDP_URL', 'CHROME_PATH', 'HOST', 'PORT', 'SESSION_ID', 'AGENT_TOKEN', 'AGENT_TOKENS_FILE', 'TELEMETRY',
  'RING_EVENTS', 'RING_BYTES', 'KEEPALIVE_MS', 'LOG_LEVEL', 'SCREENSHOTS', 'MAX_BODY_BYTES', 'MAX_BODY_FETCH_BYTES',
  'MAX_POST_DATA_BYTES', 'MAX_CONSOLE_TEXT_BYTES', 'MAX_CONSOLE_ARGS', 'MAX_HEADER_VALUE_BYTES', 'MAX_STACK_FRAMES',
  'MAX_EVENT_DATA_BYTES', 'MAX_UPLOAD_BYTES',
];

function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of AGENT_ENV_VARS) delete env[name];
  return { ...env, ...extra };
}

const SHUTDOWN_LIMIT_MS = 5_000;

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running `node dist/main.js`, with its output collected. */
class AgentProcess {
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

  static start(args: string[], env: NodeJS.ProcessEnv = cleanEnv()): AgentProcess {
    return new AgentProcess(spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }));
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
  listening(): Promise<{ url: string; session_id: string }> {
    return this.waitFor(
      () => this.logLines.find((line) => line.msg === 'listening') as { url: string; session_id: string } | undefined,
      'the listening log line',
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
function childrenOf(pid: number): Array<{ pid: number; args: string }> {
  const result = spawnSync('ps', ['--ppid', String(pid), '-o', 'pid=,args='], { encoding: 'utf8' });
  return result.stdout
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), args: m[2]! }));
}

/** `pid` and every process below it. */
function processTree(pid: number): number[] {
  return [pid, ...childrenOf(pid).flatMap((child) => processTree(child.pid))];
}

/** True while `pid` exists and is not a zombie. */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 3, after the parenthesised command name (which may contain spaces).
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

async function waitUntil(condition: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The Chromium the agent launched (embedded mode) and its DevTools URL. */
async function embeddedChromium(agent: AgentProcess): Promise<{ pid: number; browserWsUrl: string }> {
  const chromium = childrenOf(agent.pid).find((child) => /chrom/i.test(child.args));
  if (!chromium) throw new Error(`no Chromium child of the agent: ${JSON.stringify(childrenOf(agent.pid))}`);
  const argv = readFileSync(`/proc/${chromium.pid}/cmdline`, 'utf8').split('\0');
  const userDataDir = argv.find((arg) => arg.startsWith('--user-data-dir='))!.slice('--user-data-dir='.length);
  const browserWsUrl = ChromiumProcess.readActivePort(userDataDir);
  if (!browserWsUrl) throw new Error(`no DevToolsActivePort in ${userDataDir}`);
  return { pid: chromium.pid, browserWsUrl };
}

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
    'cdp-url', 'chrome-path', 'host', 'port', 'session-id', 'token', 'tokens-file', 'telemetry', 'ring-events',
    'ring-bytes', 'keepalive-ms', 'log-level', 'screenshots', 'max-body-bytes', 'max-body-fetch-bytes',
    'max-post-data-bytes', 'max-console-text-bytes', 'max-console-args', 'max-header-value-bytes', 'max-stack-frames',
    'max-event-data-bytes', 'max-upload-bytes', 'help', 'version',
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
    browser = await ChromiumProcess.launch({ executablePath: findChromium() });
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
