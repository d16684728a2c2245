// startAgent(options): the programmatic entry. Wires the layers one way:
// Chromium → browser/ → telemetry/ → stream/ → http/.

import pino, { type Logger } from 'pino';
import { BrowserLink, type BrowserLinkListener } from './browser/browser-link.ts';
import type { CdpConnection } from './browser/cdp-connection.ts';
import { ignoredFailures, logIgnoredFailuresTo } from './browser/cdp-errors.ts';
import { TargetManager } from './browser/target-manager.ts';
import { CleanupStack } from './cleanup-stack.ts';
import { ComputerExecutor } from './computer/executor.ts';
import { resolveConfig, type Config, type ConfigOptions } from './config.ts';
import { OtlpExporter, type OtlpExportTiming } from './export/otlp-exporter.ts';
import { listenUrl } from './http/listen.ts';
import { HostPolicy } from './http/host-policy.ts';
import { createHttpServer } from './http/server.ts';
import { EventLog } from './stream/event-log.ts';
import { HistoryReader } from './stream/history.ts';
import { EventStore } from './store/event-store.ts';
import { registerStoreMetrics } from './metrics/store-metrics.ts';
import { StreamHub } from './stream/stream-hub.ts';
import { BrowserClock } from './telemetry/clock.ts';
import { AgentMetrics } from './metrics/agent-metrics.ts';
import { Monitor, type EventSink } from './telemetry/monitor.ts';
import { TelemetryStats } from './telemetry/telemetry-stats.ts';
import { mergeTelemetryConfig, type TelemetryConfig, type TelemetryConfigPatch } from './telemetry/telemetry-config.ts';
import { Telemetry, TelemetryMemory } from './telemetry/telemetry.ts';
import { KmsgReader } from './telemetry/kmsg-reader.ts';
import { OperationalEvents } from './telemetry/operational-events.ts';
import { CdpProxy } from './cdp-proxy/cdp-proxy.ts';
import { ActionSnapshots } from './control/action-snapshots.ts';
import { CauseLinker } from './control/cause-linker.ts';
import { computerActionObserver } from './control/computer-actions.ts';
import { ControlRecorder } from './control/control-recorder.ts';
import { registerCdpProxyMetrics } from './metrics/cdp-proxy-metrics.ts';

/** What start-up opens, in order; a failure at any step closes what the steps before it opened. */
export const START_STEPS = ['store', 'otlp', 'kmsg', 'browser', 'http', 'listen'] as const;
export type StartStep = (typeof START_STEPS)[number];

/** How the agent runs, beside its configuration. */
export interface AgentRuntime {
  /** A pino logger to use instead of one writing JSON lines to stdout. */
  logger?: Logger;
  /** Internal timings, shortened by tests; the defaults are the spec's. */
  timing?: {
    backoffInitialMs?: number;
    backoffMaxMs?: number;
    probeIntervalMs?: number;
    probeTimeoutMs?: number;
    otlp?: OtlpExportTiming;
    /** Bytes that may wait for one CDP proxy client before it is cut (docs/operations.md "CDP endpoint"). */
    cdpClientBufferBytes?: number;
  };
  /** Tests: told before each start-up step (a throw fails it) and of each close done after a failure. */
  startHooks?: { beforeStep?(step: StartStep): void; closed?(step: StartStep): void };
}

export interface StartAgentOptions extends ConfigOptions, Omit<AgentRuntime, 'startHooks'> {}

export interface Agent {
  /** `http://host:port` the agent listens on. */
  readonly url: string;
  readonly sessionId: string;
  /** The effective configuration (tokens included). */
  readonly config: Config;
  /** The browser's DevTools websocket URL of the current connection. */
  readonly browserWsUrl: string;
  /** Embedded mode: the browser's process id (it changes when the browser is relaunched). */
  readonly browserPid: number | undefined;
  readonly cdpConnected: boolean;
  /**
   * Ends the session: every stream gets the events already admitted, then ends; CDP is closed;
   * the embedded browser is stopped. The HTTP server stops too. Idempotent.
   */
  close(): Promise<void>;
}

/** The parts that live exactly as long as one CDP connection. */
interface ConnectionScope {
  connection: CdpConnection;
  telemetry: Telemetry;
  targets: TargetManager;
}

/** Start an agent from options given in code: checked and completed like the command line's. */
export async function startAgent(options: StartAgentOptions = {}): Promise<Agent> {
  const { logger, timing, ...configOptions } = options;
  return startAgentWithConfig(resolveConfig(configOptions), { logger, timing });
}

/**
 * Start an agent from a complete, checked Config (the command line's). Whatever start-up has
 * opened when a step fails is closed again, the last first, before the failure is thrown.
 */
export async function startAgentWithConfig(config: Config, runtime: AgentRuntime = {}): Promise<Agent> {
  const logger = runtime.logger ?? pino({ level: config.logLevel });
  const cleanup = new CleanupStack<StartStep>(
    (step, err) => logger.warn({ err, step }, 'start-up failed; closing what it opened also failed'),
    (step) => runtime.startHooks?.closed?.(step),
  );
  try {
    return await start(config, logger, runtime, cleanup);
  } catch (err) {
    await cleanup.unwind();
    throw err;
  }
}

async function start(config: Config, logger: Logger, runtime: AgentRuntime, cleanup: CleanupStack<StartStep>): Promise<Agent> {
  const { timing } = runtime;
  const step = (name: StartStep): void => runtime.startHooks?.beforeStep?.(name);
  logIgnoredFailuresTo(logger);
  const createdAt = new Date();
  step('store');
  const store =
    config.dataDir === undefined
      ? undefined
      : new EventStore({
          dataDir: config.dataDir,
          sessionId: config.sessionId,
          retainBytes: config.retainBytes,
          retainMs: config.retainHours * 3_600_000,
          log: (level, fields, message) => logger[level](fields, message),
        });
  if (store) cleanup.push('store', () => store.close());
  if (store) logger.info({ data_dir: config.dataDir, resumed_after_seq: store.resumeAfterSeq, log_id: store.logId }, 'event store opened');
  const eventLog = new EventLog({
    maxEvents: config.ringEvents,
    maxBytes: config.ringBytes,
    archive: store,
    paceMs: config.streamPaceMs,
    loadPaceMs: config.streamLoadPaceMs,
  });
  const hub = new StreamHub(eventLog, { keepaliveMs: config.keepaliveMs });
  // OTLP export (docs/export.md): sees every admitted event; converts and sends off the producer's path.
  step('otlp');
  const otlp = config.otlp && new OtlpExporter({ config: config.otlp, sessionId: config.sessionId, logger, timing: timing?.otlp });
  if (otlp) cleanup.push('otlp', () => otlp.close());
  otlp?.follow(eventLog);
  const clock = new BrowserClock();
  const memory = new TelemetryMemory();
  let telemetryConfig: TelemetryConfig = config.telemetry;
  const stats = new TelemetryStats();
  // caused_by (docs/events.md "caused_by"): stamped on the way to the log.
  const linker = new CauseLinker();
  // Every admitted event passes here once: count it by type for /metrics.
  const sink: EventSink = {
    append(event) {
      linker.link(event);
      stats.countAdmitted(event.type);
      return eventLog.append(event);
    },
  };
  const monitor = new Monitor(sink, clock, () => telemetryConfig);
  // Failure signals and live view (docs/events.md "Failure signals").
  const operational = new OperationalEvents(sink, clock, () => telemetryConfig);
  const previousAgent = store?.markRunning(process.pid, isAlive);
  if (previousAgent && store) {
    logger.warn({ pid: previousAgent.pid }, 'the previous agent of this session ended without a clean shutdown');
    operational.emit('service_crashed', {
      service_name: 'browser-telemetry-agent',
      phase: 'running',
      pid: previousAgent.pid,
      last_seq: store.restoredLatestSeq,
    });
  }
  step('kmsg');
  const kmsg = KmsgReader.start({ logger, onOomKill: (kill, ageUs) => operational.emit('system_oom_kill', kill, clock.nowUs() - ageUs) });
  cleanup.push('kmsg', () => kmsg?.close());
  const recorder = new ControlRecorder(sink, clock, () => telemetryConfig, linker);
  // The page before and after each recorded action (docs/events.md "Snapshots").
  const actionSnapshots = new ActionSnapshots({ snapshots: () => scope?.telemetry.snapshots, stats });
  recorder.onActionEnded = (actionId) => actionSnapshots.ended(actionId);
  let reconnects = 0;
  const withStoreMetrics = (metrics: AgentMetrics): AgentMetrics => {
    if (store) registerStoreMetrics(metrics.registry, store);
    registerCdpProxyMetrics(metrics.registry, cdpProxy);
    return metrics;
  };

  let scope: ConnectionScope | undefined;
  // The CDP endpoint for automation clients (docs/operations.md "CDP endpoint").
  // The link is set once it is up; the proxy may ask before that.
  const upstream: { link?: BrowserLink } = {};
  const cdpProxy = new CdpProxy({
    upstream: () => (upstream.link?.isConnected ? upstream.link.browserWsUrl : undefined),
    recorder,
    relayHook: actionSnapshots.relayHook(),
    logger,
    maxClientBufferBytes: timing?.cdpClientBufferBytes,
  });
  const computer = new ComputerExecutor({ targets: () => scope?.targets, logger, observer: computerActionObserver(recorder, actionSnapshots) });
  let terminated = false;

  /** CDP traffic of the connections before the current one (/metrics). */
  const pastTraffic = { messages: 0, reads: 0 };
  const dropScope = () => {
    if (scope) {
      pastTraffic.messages += scope.connection.messages;
      pastTraffic.reads += scope.connection.reads;
    }
    scope?.targets.dispose();
    scope?.telemetry.dispose();
    scope = undefined;
  };

  const listener: BrowserLinkListener = {
    async attached(connection) {
      dropScope();
      // Fresh state machines for every connection; memory (tabs announced, console watermarks)
      // carries over so a reconnect repeats nothing.
      // The screenshot option asks for the active page; the target manager comes after Telemetry.
      const current: { targets?: TargetManager } = {};
      const telemetry = new Telemetry(connection, sink, {
        stats,
        config: telemetryConfig,
        limits: config.limits,
        logger,
        memory,
        clock,
        monitor,
        screenshots: { enabled: config.screenshots, activePage: () => current.targets?.activePage() },
        onTabsLoading: (loading) => {
          eventLog.setLoading(loading);
          connection.setReadRest(loading ? config.loadCdpReadMs : 0);
        },
        hangThresholdMs: config.hangThresholdMs,
        longTaskMs: config.longTaskMs,
      });
      telemetry.start();
      const targets = new TargetManager(connection, telemetry, logger);
      current.targets = targets;
      try {
        await targets.start();
      } catch (err) {
        targets.dispose();
        telemetry.dispose();
        monitor.emit('monitor_init_failed', { step: 'Target.setAutoAttach', error: (err as Error).message });
        throw err;
      }
      scope = { connection, telemetry, targets };
      // May fail (the browser went away): records then lack user_agent.original until the next connection.
      if (otlp)
        void connection.send('Browser.getVersion').then(
          (version) => otlp.setUserAgent(version.userAgent),
          () => undefined,
        );
      // A hidden cursor stays hidden in the tabs of a new connection too.
      void computer.cursor.sync(targets).catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'cursor state sync failed'));
    },
    lost(reason) {
      dropScope();
      // Proxied clients talk to a browser that is gone: they reconnect to the new one.
      cdpProxy.upstreamChanged();
      monitor.emit('monitor_disconnected', { reason });
    },
    reconnected(durationMs) {
      reconnects++;
      monitor.emit('monitor_reconnected', { reconnect_duration_ms: durationMs });
    },
    reconnectFailed(attempts) {
      monitor.emit('monitor_reconnect_failed', { reason: 'reconnect_exhausted', attempts });
    },
    initialConnectFailed(error) {
      monitor.emit('monitor_init_failed', { step: 'connect', error: error.message });
    },
    browserCrashed(crash) {
      operational.emit('service_crashed', {
        service_name: 'chromium',
        phase: crash.phase,
        ...(crash.pid !== undefined && { pid: crash.pid }),
        ...(crash.exitCode !== undefined && { exit_code: crash.exitCode }),
        ...(crash.signal !== undefined && { signal: crash.signal }),
        ...(crash.attempts !== undefined && { attempts: crash.attempts }),
      });
    },
  };

  step('browser');
  const link = await BrowserLink.start(
    {
      cdpUrl: config.cdpUrl,
      chromePath: config.chromePath,
      logger,
      probeIntervalMs: timing?.probeIntervalMs,
      probeTimeoutMs: timing?.probeTimeoutMs,
      backoff: { initialMs: timing?.backoffInitialMs ?? 250, maxMs: timing?.backoffMaxMs ?? 5000 },
    },
    listener,
  );
  cleanup.push('browser', () => link.close(false));

  upstream.link = link;

  /** Terminate the session (DELETE, signal, close()). */
  let terminating: Promise<void> | undefined;
  const terminate = (closeBrowser: boolean): Promise<void> => {
    terminating ??= (async () => {
      terminated = true;
      kmsg?.close();
      actionSnapshots.dispose();
      // The last Web Vitals of every tab's document (docs/events.md "Web Vitals").
      scope?.telemetry.endSession();
      cdpProxy.close(closeBrowser ? 'session_deleted' : 'shutdown');
      // Streams first: every admitted event is flushed, then each response ends.
      await hub.closeAll();
      dropScope();
      await link.close(closeBrowser);
      // Last, so that the events of the session's end go out too.
      await otlp?.close();
      logger.info({ session_id: config.sessionId }, 'session terminated');
    })();
    return terminating;
  };

  step('http');
  const app = createHttpServer({
    sessionId: config.sessionId,
    tokens: config.tokens,
    hub,
    log: eventLog,
    history: new HistoryReader(eventLog, store),
    hosts: new HostPolicy(config.host, config.allowedHosts),
    logId: store?.logId,
    logger,
    metrics: withStoreMetrics(
      new AgentMetrics({
        stats,
        stream: hub,
        otlp,
        cdp: {
          get isConnected() {
            return link.isConnected;
          },
          get reconnects() {
            return reconnects;
          },
          get messages() {
            return pastTraffic.messages + (scope?.connection.messages ?? 0);
          },
          get reads() {
            return pastTraffic.reads + (scope?.connection.reads ?? 0);
          },
          ignoredFailures,
        },
        attachedTargetTypes: function* () {
          if (scope) for (const target of scope.targets.all()) yield target.type;
        },
      }),
    ),
    computer,
    liveView: { opened: (viewerId) => operational.liveViewOpened(viewerId) },
    maxUploadBytes: config.limits.maxUploadBytes,
    cdp: {
      version: async () => {
        if (!scope) throw new Error('the browser is not connected');
        return scope.connection.send('Browser.getVersion');
      },
      targets: async () => {
        if (!scope) throw new Error('the browser is not connected');
        const { targetInfos } = await scope.connection.send('Target.getTargets');
        return targetInfos.filter((t) => t.type !== 'browser' && t.type !== 'tab');
      },
      browserId: () => (link.browserWsUrl === '' ? undefined : link.browserWsUrl.slice(link.browserWsUrl.lastIndexOf('/') + 1)),
      upgrade: (request, socket, head, endpoint) => cdpProxy.handleUpgrade(request, socket, head, endpoint),
    },
    apiCalls: {
      newRequestId: () => recorder.newId('req'),
      activeTarget: () => scope?.targets.activePage()?.targetId,
      begin(targetId) {
        const start = recorder.begin(targetId, false);
        if (start === undefined) return undefined;
        return {
          end: (operationId, requestId, status) =>
            recorder.apiCall(start, { operation_id: operationId, request_id: requestId, status, outcome: status < 400 ? 'ok' : 'error' }),
        };
      },
    },
    fsAllow: config.fsAllow,
    uploadIdleMs: config.uploadIdleMs,
    session: {
      createdAt,
      telemetryConfig: () => telemetryConfig,
      cdpConnected: () => link.isConnected,
      isTerminated: () => terminated,
      updateTelemetry: async (patch: TelemetryConfigPatch) => {
        telemetryConfig = mergeTelemetryConfig(telemetryConfig, patch);
        logger.info({ telemetry: telemetryConfig }, 'telemetry config changed');
        await scope?.telemetry.setConfig(telemetryConfig);
        return telemetryConfig;
      },
      // DELETE /browsers/{id}: in attached mode the browser itself is closed too (docs/decisions.md).
      terminate: () => terminate(true),
    },
  });
  cleanup.push('http', () => app.close());
  step('listen');
  const url = await listenUrl(app, config.host, config.port);
  logger.info({ url, session_id: config.sessionId, mode: link.isEmbedded ? 'embedded' : 'attached' }, 'listening');

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    // A signal or close() leaves an attached browser running: the agent does not own it.
    closing ??= terminate(false)
      .then(() => app.close())
      .finally(() => store?.close());
    return closing;
  };

  return {
    url,
    sessionId: config.sessionId,
    config,
    get browserWsUrl() {
      return link.browserWsUrl;
    },
    get browserPid() {
      return link.browserPid;
    },
    get cdpConnected() {
      return link.isConnected;
    },
    close,
  };
}

/** Whether process `pid` exists (EPERM: it does, owned by another user). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
