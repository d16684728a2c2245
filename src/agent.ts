// startAgent(options): the programmatic entry and the composition root. `start` wires the layers
// one way (Chromium → browser/ → telemetry/ → stream/ → http/) as a sequence of named steps, each
// in the module that owns it. A step that opens something registers how to close it with the
// step's scope, so that a failure later in start-up closes it again (docs/architecture.md
// "Recipes": add a component).

import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { BrowserLink, type BrowserLinkOptions } from './browser/browser-link.ts';
import { IgnoredFailures } from './browser/cdp-errors.ts';
import { CleanupStack, type StartScope } from './cleanup-stack.ts';
import { Heartbeats } from './heartbeat.ts';
import { ComputerExecutor } from './computer/executor.ts';
import { resolveConfig, type Config, type ConfigOptions } from './config.ts';
import { startOtlpExport, type OtlpExporter, type OtlpExportTiming } from './export/otlp-exporter.ts';
import type { HttpDeps } from './http/http-deps.ts';
import { listenUrl } from './http/listen.ts';
import { HostPolicy } from './http/host-policy.ts';
import { createHttpServer } from './http/server.ts';
import { EventLog } from './stream/event-log.ts';
import { HistoryReader } from './stream/history.ts';
import { openEventStore, type EventStore } from './store/event-store.ts';
import { StreamHub } from './stream/stream-hub.ts';
import { AgentMetrics } from './metrics/agent-metrics.ts';
import { SessionTelemetry } from './telemetry/session-telemetry.ts';
import type { CdpCuts } from './telemetry/cdp-cuts.ts';
import { KmsgReader } from './telemetry/kmsg-reader.ts';
import { CdpProxy } from './cdp-proxy/cdp-proxy.ts';
import { ActionSnapshots } from './control/action-snapshots.ts';
import { apiCalls } from './control/api-calls.ts';
import { CauseLinker } from './control/cause-linker.ts';
import { computerActionObserver } from './control/computer-actions.ts';
import { ControlRecorder } from './control/control-recorder.ts';
import { Steps } from './control/steps.ts';
import { ReplayService } from './replay/replay-service.ts';
import { stepChapters } from './replay/step-chapters.ts';
import { AGENT_SOURCE } from './telemetry/monitor.ts';
import { eventOf } from './event-data.ts';

/** What start-up opens, in order; a failure at any step closes what the steps before it opened. */
export const START_STEPS = ['store', 'otlp', 'kmsg', 'replay', 'browser', 'http', 'listen'] as const;
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
  /**
   * Tests: told before each start-up step and at each point inside one (`StartScope.reached`; a
   * throw fails start-up there), and of each close done after a failure.
   */
  startHooks?: { beforeStep?(step: StartStep): void; reached?(step: StartStep, point: string): void; closed?(step: StartStep): void };
  /**
   * The bench only: a CDP cut changed, to measure the agent without it (src/telemetry/cdp-cuts.ts).
   * Not a setting, so not among startAgent's options.
   */
  cdpCuts?: Partial<CdpCuts>;
}

export interface StartAgentOptions extends ConfigOptions, Omit<AgentRuntime, 'startHooks' | 'cdpCuts'> {}

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
  const step = (name: StartStep): StartScope => {
    runtime.startHooks?.beforeStep?.(name);
    return cleanup.scope(name, (point) => runtime.startHooks?.reached?.(name, point));
  };
  const createdAt = new Date();
  // This agent's own, never shared with another agent in the process: the count of best-effort
  // CDP failures let pass, and the beats its periodic work runs on.
  const failures = new IgnoredFailures(logger);
  const heartbeats = new Heartbeats((err) => logger.warn({ err }, 'a periodic job failed'));
  const store = openEventStore(config, logger, step('store'));
  const eventLog = new EventLog({
    maxEvents: config.ringEvents,
    maxBytes: config.ringBytes,
    archive: store,
    paceMs: config.streamPaceMs,
    loadPaceMs: config.streamLoadPaceMs,
  });
  const hub = new StreamHub(eventLog, { keepaliveMs: config.keepaliveMs });
  const otlp = await startOtlpExport(config.otlp, { sessionId: config.sessionId, logger, timing: timing?.otlp }, eventLog, step('otlp'));
  // caused_by (docs/events.md "caused_by"): stamped on the way to the log.
  const linker = new CauseLinker();
  const telemetry = new SessionTelemetry(linker.linking(eventLog), config, {
    logger,
    heartbeats,
    onTabsLoading: (loading) => eventLog.setLoading(loading),
    cuts: runtime.cdpCuts,
  });
  reportUncleanEnd(store, telemetry, logger);
  const kmsg = KmsgReader.start({ logger, heartbeats, onOomKill: (kill, ageUs) => telemetry.oomKilled(kill, ageUs) }, step('kmsg'));
  const history = new HistoryReader(eventLog, store);
  const replays = startReplays(config, logger, { heartbeats, failures }, telemetry, history, step('replay'));
  // What clients make the browser do, recorded as control events (docs/events.md "Control events"):
  // the CDP endpoint (docs/operations.md "CDP endpoint") and the computer API.
  const recorder = new ControlRecorder(telemetry.sink, telemetry.clock, () => telemetry.config, linker);
  // Steps (docs/events.md "Steps"): marked over HTTP, CDP (the proxy) and MCP.
  const steps = new Steps(recorder);
  const link = new BrowserLink({ ...browserLinkOptions(config, logger, timing), failures, heartbeats }, telemetry);
  const upstream = () => (link.isConnected ? link.browserWsUrl : undefined);
  // The page before and after each recorded action (docs/events.md "Snapshots").
  const snapshots = new ActionSnapshots({ snapshots: () => telemetry.snapshots, stats: telemetry.stats });
  recorder.onActionEnded = (actionId) => snapshots.ended(actionId);
  const relayHook = snapshots.relayHook();
  const cdpProxy = new CdpProxy({
    upstream,
    recorder,
    steps,
    relayHook,
    logger,
    maxClientBufferBytes: timing?.cdpClientBufferBytes,
    onActivate: (targetId) => telemetry.targets?.activate(targetId),
    onDialogAnswer: (targetId) => telemetry.dialogAnswered(targetId),
  });
  const computer = new ComputerExecutor({ targets: () => telemetry.targets, logger, failures, observer: computerActionObserver(recorder, snapshots) });
  telemetry.follow({
    attached(connection, targets) {
      otlp?.learnUserAgent(connection);
      replays.bind({ connection, targets });
      // A hidden cursor stays hidden in the tabs of a new connection too.
      void computer.cursor.sync(targets).catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'cursor state sync failed'));
    },
    // Proxied clients talk to a browser that is gone: they reconnect to the new one.
    lost: () => {
      replays.bind(undefined);
      cdpProxy.upstreamChanged();
    },
  });
  await link.start(step('browser'));
  const session = new SessionEnd({ sessionId: config.sessionId, logger, kmsg, replays, telemetry, cdpProxy, hub, link, otlp, store, snapshots });
  const parts: AgentParts = { logger, store, eventLog, history, hub, otlp, telemetry, link, recorder, steps, cdpProxy, computer, replays, session, createdAt };
  const app = createHttpServer(httpDeps(config, parts), step('http'));
  const listening = step('listen');
  const url = await listenUrl(app, config.host, config.port);
  listening.reached('listening');
  logger.info({ url, session_id: config.sessionId, mode: link.isEmbedded ? 'embedded' : 'attached' }, 'listening');
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
    close: () => session.close(app),
  };
}

function browserLinkOptions(config: Config, logger: Logger, timing: AgentRuntime['timing']): BrowserLinkOptions {
  return {
    cdpUrl: config.cdpUrl,
    chromePath: config.chromePath,
    logger,
    probeIntervalMs: timing?.probeIntervalMs,
    probeTimeoutMs: timing?.probeTimeoutMs,
    backoff: { initialMs: timing?.backoffInitialMs ?? 250, maxMs: timing?.backoffMaxMs ?? 5000 },
  };
}

/**
 * Replays (docs/replay.md): the screen of the tab in front, recorded on request; its events are
 * monitor events (emitted whenever telemetry is on); the session's steps are its chapters.
 */
function startReplays(
  config: Config,
  logger: Logger,
  agent: { heartbeats: Heartbeats; failures: IgnoredFailures },
  telemetry: SessionTelemetry,
  history: HistoryReader,
  scope: StartScope,
): ReplayService {
  const replays = new ReplayService({
    sessionId: config.sessionId,
    dataDir: config.dataDir,
    retainBytes: config.retainBytes,
    retainMs: config.retainHours * 3_600_000,
    maxBytes: config.replayMaxBytes,
    ffmpegPath: config.ffmpegPath,
    logger,
    ...agent,
    emit: (event) => {
      if (telemetry.config.enabled) telemetry.sink.append(eventOf({ ts: event.tsUs, type: event.type, source: AGENT_SOURCE, data: event.data }));
    },
    chapters: stepChapters(history),
  });
  scope.opened(() => replays.close('shutdown'));
  return replays;
}

/** The previous agent of this session ended without a clean shutdown: service_crashed (docs/events.md "Failure signals"). */
function reportUncleanEnd(store: EventStore | undefined, telemetry: SessionTelemetry, logger: Logger): void {
  const previousAgent = store?.markRunning(process.pid);
  if (!previousAgent || !store) return;
  logger.warn({ pid: previousAgent.pid }, 'the previous agent of this session ended without a clean shutdown');
  telemetry.previousAgentCrashed(previousAgent.pid, store.restoredLatestSeq);
}

/** What start-up made that the HTTP layer and the session's end use. */
interface AgentParts {
  logger: Logger;
  store: EventStore | undefined;
  eventLog: EventLog;
  history: HistoryReader;
  hub: StreamHub;
  otlp: OtlpExporter | undefined;
  telemetry: SessionTelemetry;
  link: BrowserLink;
  recorder: ControlRecorder;
  steps: Steps;
  cdpProxy: CdpProxy;
  computer: ComputerExecutor;
  replays: ReplayService;
  session: SessionEnd;
  createdAt: Date;
}

/** What the routes are given: views of the parts, never the parts' internals (src/http/http-deps.ts). */
function httpDeps(
  config: Config,
  { logger, store, eventLog, history, hub, otlp, telemetry, link, recorder, steps, cdpProxy, computer, replays, session, createdAt }: AgentParts,
): HttpDeps {
  const metrics = new AgentMetrics({
    stats: telemetry.stats,
    stream: hub,
    otlp,
    cdp: link,
    attachedTargetTypes: () => telemetry.attachedTargetTypes(),
    store,
    cdpProxy,
  });
  return {
    sessionId: config.sessionId,
    tokens: config.tokens,
    hub,
    log: eventLog,
    history,
    hosts: new HostPolicy(config.host, config.allowedHosts),
    logId: store?.logId,
    logger,
    metrics,
    computer,
    liveView: { opened: (viewerId) => telemetry.operational.liveViewOpened(viewerId) },
    maxUploadBytes: config.limits.maxUploadBytes,
    cdp: {
      version: () => link.version(),
      targets: () => link.pageTargets(),
      browserId: () => link.browserId,
      upgrade: (request, socket, head, endpoint) => cdpProxy.handleUpgrade(request, socket, head, endpoint),
      upgradeFailed: () => metrics.countUpgradeError(),
    },
    apiCalls: apiCalls(recorder, () => telemetry.targets?.activePage()?.targetId),
    steps,
    fsAllow: config.fsAllow,
    uploadIdleMs: config.uploadIdleMs,
    headersTimeoutMs: config.headersTimeoutMs,
    replays,
    session: {
      createdAt,
      telemetryConfig: () => telemetry.config,
      cdpConnected: () => link.isConnected,
      isTerminated: () => session.terminated,
      updateTelemetry: (patch) => telemetry.updateConfig(patch),
      // DELETE /browsers/{id}: in attached mode the browser itself is closed too (docs/decisions.md).
      terminate: () => session.terminate(true),
    },
  };
}

/** How the session ends, each part in its turn. */
class SessionEnd {
  /** True once the session was deleted or the agent is shutting down. */
  terminated = false;
  private terminating: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly parts: Pick<AgentParts, 'logger' | 'telemetry' | 'cdpProxy' | 'hub' | 'link' | 'otlp' | 'store' | 'replays'> & {
      sessionId: string;
      kmsg: KmsgReader | undefined;
      snapshots: ActionSnapshots;
    },
  ) {}

  /** Terminate the session (DELETE, signal, close()). Idempotent. */
  terminate(closeBrowser: boolean): Promise<void> {
    const { logger, kmsg, replays, telemetry, cdpProxy, hub, link, otlp } = this.parts;
    this.terminating ??= (async () => {
      this.terminated = true;
      kmsg?.close();
      this.parts.snapshots.dispose();
      // A recording ends with the session and is kept (replay_stopped goes out with the streams).
      await replays.close(closeBrowser ? 'session_deleted' : 'shutdown');
      telemetry.endSession();
      cdpProxy.close(closeBrowser ? 'session_deleted' : 'shutdown');
      // Streams first: every admitted event is flushed, then each response ends.
      await hub.closeAll();
      // Drops the connection's telemetry, then closes it (and the embedded browser).
      await link.close(closeBrowser);
      // Last, so that the events of the session's end go out too.
      await otlp?.close();
      logger.info({ session_id: this.parts.sessionId }, 'session terminated');
    })();
    return this.terminating;
  }

  /** Agent.close(): a signal or close() leaves an attached browser running: the agent does not own it. */
  close(app: FastifyInstance): Promise<void> {
    this.closing ??= this.terminate(false)
      .then(() => app.close())
      .finally(() => this.parts.store?.close());
    return this.closing;
  }
}
