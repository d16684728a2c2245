// The agent's link to its browser (docs/events.md#telemetry-config-lifecycle-and-monitor-events): the CDP connection, its health probe, the
// embedded Chromium it owns, and reconnection when any of them is lost. It tells its listener when
// a connection is up (to follow its targets) and when it is lost; the agent never exits because
// the browser went away.

import type { Protocol } from 'devtools-protocol';
import type { Logger } from 'pino';
import { CdpConnection, resolveBrowserWsUrl, type CommandResult } from './cdp-connection.ts';
import { IgnoredFailures } from './cdp-errors.ts';
import { ChromiumProcess, ChromiumStartupExitError, locateChromium, type ChromiumBinary } from './chromium-launcher.ts';
import { Reconnector, type Backoff } from './reconnector.ts';
import type { StartScope } from '../cleanup-stack.ts';
import { Heartbeats } from '../heartbeat.ts';

export type DisconnectReason = 'browser_closed' | 'socket_closed' | 'unresponsive';

export interface BrowserLinkListener {
  /** A connection is up: follow its targets. A rejection fails this (re)connect attempt. */
  attached(connection: CdpConnection): Promise<void>;
  /** The connection was lost: drop everything that belonged to it. */
  lost(reason: DisconnectReason): void;
  /** The link was closed for good (the session ended, or start-up failed): the same, silently. */
  closed(): void;
  reconnected(durationMs: number): void;
  reconnectFailed(attempts: number): void;
  /** Attached mode only: the browser was not reachable at start-up (attempts go on). */
  initialConnectFailed(error: Error): void;
  /**
   * Embedded mode: the browser exited unexpectedly (docs/events.md "Failure signals"): at start-up
   * (before it printed its DevTools URL), while running (not stopped by the agent, and not a
   * clean exit with code 0), or its relaunch attempts were exhausted (`gave_up`; they go on).
   */
  browserCrashed?(crash: BrowserCrash): void;
}

export interface BrowserCrash {
  phase: 'startup' | 'running' | 'gave_up';
  pid?: number;
  exitCode?: number;
  signal?: string;
  attempts?: number;
}

export interface BrowserLinkOptions {
  /** Attached mode endpoint; undefined = embedded mode. */
  cdpUrl?: string;
  chromePath?: string;
  /** Where the bundled browser is extracted when the machine has none (default: XDG cache). */
  cacheRoot?: string;
  logger: Logger;
  /**
   * Health probe period and timeout: 1 s and 2 s by default, so a frozen browser is detected
   * within 3 s (docs/operations.md "Health").
   */
  probeIntervalMs?: number;
  probeTimeoutMs?: number;
  /** Reconnect backoff; docs/events.md#telemetry-config-lifecycle-and-monitor-events's 250 ms → 5 s unless a test shortens it. */
  backoff?: Backoff;
  /** The agent's count of best-effort failures, given to every connection (a fresh one by default). */
  failures?: IgnoredFailures;
  /** The agent's beats: the health probe runs on the one of its interval (a fresh set by default). */
  heartbeats?: Heartbeats;
}

export const PROBE_INTERVAL_MS = 1000;
export const PROBE_TIMEOUT_MS = 2000;

/** In embedded mode, how long a socket close waits for the process exit that explains it. */
const EXIT_GRACE_MS = 300;

export class BrowserLink {
  private current: CdpConnection | undefined;
  private chromium: ChromiumProcess | undefined;
  private stopProbeBeat: (() => void) | undefined;
  private readonly reconnector: Reconnector;
  private closed = false;
  private wsUrl = '';
  private binary: ChromiumBinary | undefined;
  private reconnectCount = 0;
  /** While start() runs: its step's scope (fault points). */
  private startScope: StartScope | undefined;
  /** CDP traffic of the connections before the current one (/metrics). */
  private readonly pastTraffic = { messages: 0, reads: 0 };
  private readonly failures: IgnoredFailures;
  private readonly heartbeats: Heartbeats;

  constructor(
    private readonly options: BrowserLinkOptions,
    private readonly listener: BrowserLinkListener,
  ) {
    this.failures = options.failures ?? new IgnoredFailures(options.logger);
    this.heartbeats = options.heartbeats ?? new Heartbeats((err) => options.logger.warn({ err }, 'a periodic job failed'));
    this.reconnector = new Reconnector(
      () => this.connect(),
      {
        reconnected: (ms) => {
          this.reconnectCount++;
          options.logger.info({ reconnect_duration_ms: ms }, 'CDP reconnected');
          listener.reconnected(ms);
        },
        exhausted: (attempts) => {
          options.logger.warn({ attempts }, 'CDP reconnect attempts exhausted; still trying');
          listener.reconnectFailed(attempts);
          if (this.isEmbedded) listener.browserCrashed?.({ phase: 'gave_up', attempts });
        },
        attemptFailed: (attempt, err) => options.logger.debug({ attempt, err: err.message }, 'CDP reconnect attempt failed'),
      },
      undefined,
      options.backoff,
    );
  }

  /**
   * Start-up's browser step: connect for the first time. Embedded mode: a browser that cannot be
   * launched is an error. Attached mode: an unreachable browser is reported and attempts go on in
   * the background.
   */
  async start(scope?: StartScope): Promise<void> {
    const { options } = this;
    // Before anything is launched: a failure at any later point (the checks after the launch
    // included) closes the browser and its profile (docs/operations.md "Which browser").
    scope?.opened(() => this.close(false));
    this.startScope = scope;
    try {
      if (options.cdpUrl === undefined) {
        const binary = await locateChromium({ chromePath: options.chromePath, cacheRoot: options.cacheRoot });
        this.binary = binary;
        await this.connect();
        const version = this.current === undefined ? undefined : await this.failures.mayFail(this.current.send('Browser.getVersion'));
        options.logger.info({ browser: binary.path, source: binary.source, version: version?.product }, 'embedded browser started');
        return;
      }
      try {
        await this.connect();
      } catch (err) {
        options.logger.warn({ err: (err as Error).message }, 'browser not reachable at start-up; retrying');
        this.listener.initialConnectFailed(err as Error);
        this.reconnector.start();
      }
    } finally {
      this.startScope = undefined;
    }
  }

  get connection(): CdpConnection | undefined {
    return this.current;
  }

  get isConnected(): boolean {
    return this.current?.isConnected ?? false;
  }

  /** The browser's DevTools websocket URL of the current (or last) connection. */
  get browserWsUrl(): string {
    return this.wsUrl;
  }

  /** Embedded mode: the browser process id. */
  get browserPid(): number | undefined {
    return this.chromium?.pid;
  }

  get isEmbedded(): boolean {
    return this.options.cdpUrl === undefined;
  }

  /** Successful reconnections (/metrics). */
  get reconnects(): number {
    return this.reconnectCount;
  }

  /** CDP messages received over every connection (/metrics). */
  get messages(): number {
    return this.pastTraffic.messages + (this.current?.messages ?? 0);
  }

  /** The socket reads those messages came in, over every connection (/metrics). */
  get reads(): number {
    return this.pastTraffic.reads + (this.current?.reads ?? 0);
  }

  /** Failures of best-effort commands let pass (/metrics). */
  get ignoredFailures(): { readonly gone: number; readonly other: number } {
    return this.failures;
  }

  /** The id in the browser's own WebSocket path; undefined before the first connection. */
  get browserId(): string | undefined {
    return this.wsUrl === '' ? undefined : this.wsUrl.slice(this.wsUrl.lastIndexOf('/') + 1);
  }

  /** `Browser.getVersion` on the current connection (the CDP endpoint's discovery). */
  version(): Promise<CommandResult<'Browser.getVersion'>> {
    return this.connected().send('Browser.getVersion');
  }

  /** The targets a CDP client can open: pages, iframes and workers, not the browser or its tabs. */
  async pageTargets(): Promise<Protocol.Target.TargetInfo[]> {
    const { targetInfos } = await this.connected().send('Target.getTargets');
    return targetInfos.filter((t) => t.type !== 'browser' && t.type !== 'tab');
  }

  private connected(): CdpConnection {
    if (!this.current) throw new Error('the browser is not connected');
    return this.current;
  }

  /**
   * Stop for good. `closeBrowser`: in attached mode send `Browser.close` (session deletion); the
   * embedded browser is always stopped.
   */
  async close(closeBrowser: boolean): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listener.closed();
    this.reconnector.stop();
    this.stopProbe();
    const connection = this.current;
    this.retire();
    if (connection && closeBrowser && !this.isEmbedded) {
      await this.failures.mayFail(withTimeout(connection.send('Browser.close'), 2000));
    }
    await connection?.close();
    await this.chromium?.close();
  }

  /** One connect attempt: (re)launch or resolve the browser, connect, let the listener attach. */
  private async connect(): Promise<void> {
    if (this.closed) throw new Error('closed');
    let wsUrl: string;
    if (this.isEmbedded) {
      if (!this.chromium || this.chromium.hasExited) {
        await this.chromium?.close();
        this.chromium = await ChromiumProcess.launch({ binary: this.binary! }).catch((err: unknown) => {
          if (err instanceof ChromiumStartupExitError) this.listener.browserCrashed?.({ phase: 'startup', ...exitFields(err.pid, err.exitCode, err.signal) });
          throw err;
        });
        this.watchProcess(this.chromium);
        this.startScope?.reached('launched');
      }
      wsUrl = this.chromium.browserWsUrl;
    } else {
      // Resolved again on every attempt: a browser restarted on the same port has a new URL.
      wsUrl = await resolveBrowserWsUrl(this.options.cdpUrl!);
    }
    const connection = await CdpConnection.connect(wsUrl, this.failures);
    if (this.closed) {
      await connection.close();
      throw new Error('closed');
    }
    try {
      await this.listener.attached(connection);
    } catch (err) {
      await connection.close();
      throw err;
    }
    this.wsUrl = wsUrl;
    this.current = connection;
    connection.onDisconnect(() => void this.onSocketClosed(connection));
    this.startProbe(connection);
  }

  /** The current connection is no longer current: its traffic joins the past connections'. */
  private retire(): void {
    if (this.current) {
      this.pastTraffic.messages += this.current.messages;
      this.pastTraffic.reads += this.current.reads;
    }
    this.current = undefined;
  }

  private watchProcess(chromium: ChromiumProcess): void {
    void chromium.waitForExit().then(() => {
      const status = chromium.exitStatus;
      // A clean exit (code 0: Browser.close from a client, the last window closed) is no crash.
      const crashed = !chromium.stopping && !this.closed && status !== undefined && (status.signal !== null || status.code !== 0);
      if (crashed) {
        this.options.logger.warn({ pid: chromium.pid, exit_code: status.code, signal: status.signal }, 'browser exited unexpectedly');
        this.listener.browserCrashed?.({ phase: 'running', ...exitFields(chromium.pid, status.code, status.signal) });
      }
      if (this.chromium === chromium && this.current && !this.closed) this.lose(this.current, 'browser_closed');
    });
  }

  private async onSocketClosed(connection: CdpConnection): Promise<void> {
    if (this.current !== connection || this.closed) return;
    let reason: DisconnectReason = 'socket_closed';
    if (this.isEmbedded) {
      const chromium = this.chromium!;
      const exited = await Promise.race([chromium.waitForExit().then(() => true), delay(EXIT_GRACE_MS).then(() => false)]);
      if (exited) reason = 'browser_closed';
    } else if (!/^wss?:/i.test(this.options.cdpUrl!)) {
      const reachable = await resolveBrowserWsUrl(this.options.cdpUrl!, 1000).then(
        () => true,
        () => false,
      );
      if (!reachable) reason = 'browser_closed';
    }
    this.lose(connection, reason);
  }

  private lose(connection: CdpConnection, reason: DisconnectReason): void {
    if (this.current !== connection || this.closed) return;
    this.retire();
    this.stopProbe();
    this.options.logger.warn({ reason }, 'CDP connection lost');
    void connection.close();
    if (reason === 'unresponsive' && this.chromium && !this.chromium.hasExited) {
      // A hung embedded browser is replaced, not waited for (the agent's kill: no service_crashed).
      this.chromium.stopping = true;
      this.chromium.child.kill('SIGKILL');
    }
    this.listener.lost(reason);
    this.reconnector.start();
  }

  /**
   * Probes on the agent's shared beat (src/heartbeat.ts), so the kernel log's poll and the hang
   * probe wake the agent in the same wake-up. A beat while the last probe waits for its answer
   * sends nothing; the timeout is counted in beats too (2 s: the second beat after the probe), so
   * a probe costs no timer of its own. A freeze right after an answer is seen one interval plus
   * the timeout later (docs/operations.md "Health").
   */
  private startProbe(connection: CdpConnection): void {
    const interval = this.options.probeIntervalMs ?? PROBE_INTERVAL_MS;
    const timeoutBeats = Math.max(1, Math.ceil((this.options.probeTimeoutMs ?? PROBE_TIMEOUT_MS) / interval));
    let beats = 0;
    /** The beat the unanswered probe was sent at. */
    let sentAt: number | undefined;
    const answered = () => {
      sentAt = undefined;
    };
    const onBeat = () => {
      if (this.current !== connection) return;
      beats++;
      if (sentAt === undefined) {
        sentAt = beats;
        // An error answer (not a timeout) is an answer: the browser's thread is alive.
        connection.send('Browser.getVersion').then(answered, answered);
      } else if (beats - sentAt >= timeoutBeats) {
        this.lose(connection, 'unresponsive');
      }
    };
    this.stopProbe();
    this.stopProbeBeat = this.heartbeats.of(interval).every(1, onBeat);
  }

  private stopProbe(): void {
    this.stopProbeBeat?.();
    this.stopProbeBeat = undefined;
  }
}

function exitFields(pid: number | undefined, code: number | null, signal: string | null): Omit<BrowserCrash, 'phase'> {
  const fields: Omit<BrowserCrash, 'phase'> = {};
  if (pid !== undefined) fields.pid = pid;
  if (code !== null) fields.exitCode = code;
  if (signal !== null) fields.signal = signal;
  return fields;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
