// The session's telemetry across the browser's connections. Some of it lives as long as the
// session: the clock, the memory of what was already announced (a reconnect repeats nothing), the
// counters of /metrics, the telemetry config, and the events the agent emits itself (monitor_*,
// service_crashed, system_oom_kill, live_view_*). The rest lives as long as one CDP connection: a
// Telemetry and a TargetManager, made fresh for every connection and dropped when it is lost
// (docs/events.md#telemetry-config-lifecycle-and-monitor-events). It is the browser link's
// listener; the parts above telemetry (the CDP proxy, the computer, the OTLP export) follow the
// connections through `follow`.

import type { Logger } from 'pino';
import type { SystemOomKillData } from '../../injected/schema.ts';
import type { BrowserCrash, BrowserLinkListener, DisconnectReason } from '../browser/browser-link.ts';
import type { CdpConnection } from '../browser/cdp-connection.ts';
import type { Heartbeats } from '../heartbeat.ts';
import { TargetManager } from '../browser/target-manager.ts';
import type { CdpCuts } from './cdp-cuts.ts';
import { BrowserClock } from './clock.ts';
import { Monitor, type EventSink } from './monitor.ts';
import { OperationalEvents } from './operational-events.ts';
import type { TabSnapshots } from './snapshot-family.ts';
import { mergeTelemetryConfig, type TelemetryConfig, type TelemetryConfigPatch } from './telemetry-config.ts';
import { TelemetryStats } from './telemetry-stats.ts';
import { Telemetry, TelemetryMemory, type TelemetryOptions } from './telemetry.ts';

/** A part above telemetry that follows the browser's connections. */
export interface ConnectionFollower {
  /** A connection is up and its targets are followed. */
  attached?(connection: CdpConnection, targets: TargetManager): void;
  /** The connection was lost; told before monitor_disconnected is emitted. */
  lost?(): void;
}

/** What the session's telemetry reads of the agent's settings (Config has them). */
export interface TelemetrySettings extends Pick<TelemetryOptions, 'limits' | 'hangThresholdMs' | 'longTaskMs'> {
  /** The telemetry config at start (`PATCH` changes it: updateConfig). */
  telemetry: TelemetryConfig;
  /** monitor_screenshot capture (`--screenshots`). */
  screenshots: boolean;
  /** While a tab loads, how long the connection rests between socket reads (`--load-cdp-read-ms`). */
  loadCdpReadMs: number;
}

export interface SessionTelemetryOptions {
  logger: Logger;
  /** The agent's beats (the hang probe of every connection runs on one). */
  heartbeats: Heartbeats;
  /** Told when the first tab starts loading (true) and when none is loading any more (false). */
  onTabsLoading?(loading: boolean): void;
  /** The bench's changes to the CDP cuts (cdp-cuts.ts); absent: the agent's own. */
  cuts?: Partial<CdpCuts>;
}

/** The parts that live exactly as long as one CDP connection. */
interface ConnectionScope {
  connection: CdpConnection;
  telemetry: Telemetry;
  targets: TargetManager;
}

export class SessionTelemetry implements BrowserLinkListener {
  readonly clock = new BrowserClock();
  /** Counters shared across connections (read by /metrics). */
  readonly stats = new TelemetryStats();
  /** Where every event of the session goes: counted by type (/metrics), then to the next sink. */
  readonly sink: EventSink;
  readonly monitor: Monitor;
  /** Failure signals and live view (docs/events.md "Failure signals"). */
  readonly operational: OperationalEvents;
  private readonly memory = new TelemetryMemory();
  private currentConfig: TelemetryConfig;
  private scope: ConnectionScope | undefined;
  private readonly followers: ConnectionFollower[] = [];

  constructor(
    next: EventSink,
    private readonly settings: TelemetrySettings,
    private readonly options: SessionTelemetryOptions,
  ) {
    this.currentConfig = settings.telemetry;
    const stats = this.stats;
    this.sink = {
      append(event) {
        stats.countAdmitted(event.type);
        return next.append(event);
      },
    };
    const config = () => this.currentConfig;
    this.monitor = new Monitor(this.sink, this.clock, config);
    this.operational = new OperationalEvents(this.sink, this.clock, config);
  }

  get config(): TelemetryConfig {
    return this.currentConfig;
  }

  /** Merge a validated patch into the config and apply it to every target; resolves once in effect. */
  async updateConfig(patch: TelemetryConfigPatch): Promise<TelemetryConfig> {
    this.currentConfig = mergeTelemetryConfig(this.currentConfig, patch);
    this.options.logger.info({ telemetry: this.currentConfig }, 'telemetry config changed');
    await this.scope?.telemetry.setConfig(this.currentConfig);
    return this.currentConfig;
  }

  /** The current connection's targets; undefined while the browser is disconnected. */
  get targets(): TargetManager | undefined {
    return this.scope?.targets;
  }

  /** The current connection's DOM snapshots (docs/events.md "Snapshots"); undefined while the browser is disconnected. */
  get snapshots(): TabSnapshots | undefined {
    return this.scope?.telemetry.snapshots;
  }

  /** A client of the agent's CDP endpoint answers the dialog of `targetId` (docs/events.md "Dialogs and file choosers"). */
  dialogAnswered(targetId: string): void {
    this.scope?.telemetry.dialogAnswered(targetId);
  }

  /** Types of the targets attached right now (/metrics). */
  *attachedTargetTypes(): Iterable<string> {
    if (this.scope) for (const target of this.scope.targets.all()) yield target.type;
  }

  follow(follower: ConnectionFollower): void {
    this.followers.push(follower);
  }

  /** The previous agent of this session ended without a clean shutdown (the store's mark said so). */
  previousAgentCrashed(pid: number, lastSeq: number): void {
    this.operational.emit('service_crashed', { service_name: 'browser-telemetry-agent', phase: 'running', pid, last_seq: lastSeq });
  }

  /** The kernel killed a process for memory; `ageUs`: how long ago it logged the kill. */
  oomKilled(kill: SystemOomKillData, ageUs: number): void {
    this.operational.emit('system_oom_kill', kill, this.clock.nowUs() - ageUs);
  }

  /** The session ends: the last Web Vitals of every tab's document (docs/events.md "Web Vitals"). */
  endSession(): void {
    this.scope?.telemetry.endSession();
  }

  /** Drops the current connection's parts (the session ended, or the connection was lost or replaced). */
  private dropConnection(): void {
    this.scope?.targets.dispose();
    this.scope?.telemetry.dispose();
    this.scope = undefined;
  }

  // ---- BrowserLinkListener ------------------------------------------------------------------------

  async attached(connection: CdpConnection): Promise<void> {
    this.dropConnection();
    const { settings, options } = this;
    // Fresh state machines for every connection; memory (tabs announced, console watermarks)
    // carries over so a reconnect repeats nothing.
    // The screenshot option asks for the active page; the target manager comes after Telemetry.
    const current: { targets?: TargetManager } = {};
    const telemetry = new Telemetry(connection, this.sink, {
      stats: this.stats,
      config: this.currentConfig,
      limits: settings.limits,
      logger: options.logger,
      memory: this.memory,
      clock: this.clock,
      monitor: this.monitor,
      screenshots: { enabled: settings.screenshots, activePage: () => current.targets?.activePage() },
      onTabsLoading: (loading) => {
        options.onTabsLoading?.(loading);
        connection.setReadRest(loading ? settings.loadCdpReadMs : 0);
      },
      hangThresholdMs: settings.hangThresholdMs,
      longTaskMs: settings.longTaskMs,
      heartbeats: options.heartbeats,
      cuts: options.cuts,
    });
    telemetry.start();
    const targets = new TargetManager(connection, telemetry, options.logger);
    current.targets = targets;
    try {
      await targets.start();
    } catch (err) {
      targets.dispose();
      telemetry.dispose();
      this.monitor.emit('monitor_init_failed', { step: 'Target.setAutoAttach', error: (err as Error).message });
      throw err;
    }
    this.scope = { connection, telemetry, targets };
    for (const follower of this.followers) follower.attached?.(connection, targets);
  }

  lost(reason: DisconnectReason): void {
    this.dropConnection();
    for (const follower of this.followers) follower.lost?.();
    this.monitor.emit('monitor_disconnected', { reason });
  }

  closed(): void {
    this.dropConnection();
  }

  reconnected(durationMs: number): void {
    this.monitor.emit('monitor_reconnected', { reconnect_duration_ms: durationMs });
  }

  reconnectFailed(attempts: number): void {
    this.monitor.emit('monitor_reconnect_failed', { reason: 'reconnect_exhausted', attempts });
  }

  initialConnectFailed(error: Error): void {
    this.monitor.emit('monitor_init_failed', { step: 'connect', error: error.message });
  }

  browserCrashed(crash: BrowserCrash): void {
    this.operational.emit('service_crashed', {
      service_name: 'chromium',
      phase: crash.phase,
      ...(crash.pid !== undefined && { pid: crash.pid }),
      ...(crash.exitCode !== undefined && { exit_code: crash.exitCode }),
      ...(crash.signal !== undefined && { signal: crash.signal }),
      ...(crash.attempts !== undefined && { attempts: crash.attempts }),
    });
  }
}
