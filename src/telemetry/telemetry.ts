// CDP → telemetry events: the core. Sets up each attached target for the enabled categories,
// keeps the event context (frames, execution contexts, nav_seq), routes CDP events to the
// families (console, page, ...), and hands finished events to the sink (the event log). Events of
// a category that is off are never built.

import type { Protocol } from 'devtools-protocol';
import type { Logger } from 'pino';
import type { Category, EventDataByType, EventSource, EventType, MonitorData } from '../../injected/schema.ts';
import { eventOf } from '../event-data.ts';
import type { CdpConnection, EventName } from '../browser/cdp-connection.ts';
import { isTargetGone } from '../browser/cdp-errors.ts';
import type { AttachedTarget, TargetObserver } from '../browser/target-manager.ts';
import { Heartbeats } from '../heartbeat.ts';
import type { Limits } from '../limits.ts';
import { BrowserClock } from './clock.ts';
import { cdpCuts, type CdpCuts } from './cdp-cuts.ts';
import { ConsoleFamily } from './console-family.ts';
import { EventContextTracker, isTabMainFrame, TargetState } from './event-context.ts';
import type { EmitOptions, FamilyHost, StateHandler, TelemetryFamily } from './family.ts';
import { LoadingTabsFamily } from './loading-tabs-family.ts';
import { NetworkFamily } from './network-family.ts';
import { PageFamily } from './page-family.ts';
import { PageScriptFamily } from './page-script-family.ts';
import { DialogFamily } from './dialog-family.ts';
import { DownloadFamily } from './download-family.ts';
import { SocketFamily } from './socket-family.ts';
import { ScreenshotFamily, type ScreenshotOptions } from './screenshot-family.ts';
import { SnapshotFamily, type TabSnapshots } from './snapshot-family.ts';
import { HangFamily } from './hang-family.ts';
import { TabCrashFamily } from './tab-crash-family.ts';
import { AGENT_SOURCE, Monitor, type EventSink, type MonitorType } from './monitor.ts';
import { isCategoryOn, type GatingCategory, type TelemetryConfig } from './telemetry-config.ts';
import { TelemetryStats } from './telemetry-stats.ts';

export type { EventSink } from './monitor.ts';

/**
 * State that outlives one CDP connection, so that a reconnect neither repeats page_tab_opened nor
 * replays console history that was already reported. Entries live as long as their target: a
 * sidecar runs for days and sees targets come and go.
 */
export class TelemetryMemory {
  /** Tabs already announced with page_tab_opened. */
  readonly announcedTabs = new Set<string>();
  /** Per target id: timestamp (epoch ms) of the newest console message or exception reported. */
  readonly consoleWatermarks = new Map<string, number>();

  /** The target was destroyed: its id is never attached again. */
  forget(targetId: string): void {
    this.announcedTabs.delete(targetId);
    this.consoleWatermarks.delete(targetId);
  }

  get size(): number {
    return this.announcedTabs.size + this.consoleWatermarks.size;
  }
}

export interface TelemetryOptions {
  config: TelemetryConfig;
  limits: Limits;
  logger: Logger;
  memory?: TelemetryMemory;
  clock?: BrowserClock;
  /** Shared with the agent, which emits the connection-level monitor events. */
  monitor?: Monitor;
  /** Counters shared across connections (read by /metrics). */
  stats?: TelemetryStats;
  /** monitor_screenshot capture; absent = none. */
  screenshots?: Omit<ScreenshotOptions, 'monitor'>;
  /** Told when the first tab starts loading (true) and when none is loading any more (false). */
  onTabsLoading?: (loading: boolean) => void;
  /** page_unresponsive threshold in ms (`--hang-threshold-ms`); 0 or absent: no hang detection. */
  hangThresholdMs?: number;
  /** page_long_task threshold in ms (`--long-task-ms`); 0 or absent: none. */
  longTaskMs?: number;
  /** The agent's beats (the hang probe runs on one); a fresh set when absent. */
  heartbeats?: Heartbeats;
  /** The bench's changes to the CDP cuts (cdp-cuts.ts); absent: the agent's own. */
  cuts?: Partial<CdpCuts>;
}

/** Categories whose work needs the Runtime domain (console events; the page script's binding and world). */
const RUNTIME_CATEGORIES: readonly Category[] = ['console', 'page', 'interaction', 'snapshot'];
/** The same on targets other than pages and iframes, which run no page script. */
const WORKER_RUNTIME_CATEGORIES: readonly Category[] = ['console'];

export class Telemetry implements TargetObserver, FamilyHost {
  readonly tracker = new EventContextTracker();
  readonly clock: BrowserClock;
  readonly limits: Limits;
  readonly logger: Logger;
  readonly stats: TelemetryStats;
  readonly loadingTabs: LoadingTabsFamily;
  private currentConfig: TelemetryConfig;
  private readonly memory: TelemetryMemory;
  private readonly monitor: Monitor;
  private readonly disposers: Array<() => void> = [];
  /** Last loader id announced per frame: the parent and the OOPIF session can both report it. */
  private readonly announcedLoaders = new Map<string, string>();
  private readonly pageFamily: PageFamily;
  private readonly dialogs = new DialogFamily();
  private readonly pageScript: PageScriptFamily;
  private readonly snapshotFamily: SnapshotFamily;
  private readonly families: TelemetryFamily[];
  /** The CDP cuts (cdp-cuts.ts). */
  private readonly cuts: CdpCuts;

  constructor(
    readonly connection: CdpConnection,
    private readonly sink: EventSink,
    options: TelemetryOptions,
  ) {
    this.currentConfig = options.config;
    this.cuts = cdpCuts(options.cuts);
    this.limits = options.limits;
    this.logger = options.logger;
    this.memory = options.memory ?? new TelemetryMemory();
    this.clock = options.clock ?? new BrowserClock();
    this.stats = options.stats ?? new TelemetryStats();
    this.monitor = options.monitor ?? new Monitor(sink, this.clock, () => this.currentConfig);
    this.loadingTabs = new LoadingTabsFamily(options.onTabsLoading);
    const pageScript = new PageScriptFamily((state) => this.pageFamily.layoutShift(state), undefined, options.longTaskMs ?? 0);
    // DOM snapshots (docs/events.md "Snapshots"), taken in the page script's world.
    this.snapshotFamily = new SnapshotFamily(pageScript.worldName);
    this.pageFamily = new PageFamily(this.memory.announcedTabs, undefined, (tab) => this.snapshotFamily.navigationSettled(tab));
    const heartbeats = options.heartbeats ?? new Heartbeats((err) => options.logger.warn({ err }, 'a periodic job failed'));
    const hangs = new HangFamily(options.hangThresholdMs ?? 0, heartbeats);
    const crashes = new TabCrashFamily((state) => hangs.tabCrashed(state));
    this.pageScript = pageScript;
    // The tracker first: its handlers run before the families' for the same event.
    this.families = [
      this.loadingTabs,
      new ConsoleFamily(this.memory.consoleWatermarks),
      this.pageFamily,
      pageScript,
      new NetworkFamily({ smallRendererBuffers: this.cuts.rendererBodyBuffers }),
      crashes,
      hangs,
    ];
    // Dialogs, downloads, WebSockets and EventSource (docs/events.md).
    this.families.push(this.dialogs, new DownloadFamily(), new SocketFamily(), this.snapshotFamily);
    if (options.screenshots) this.families.push(new ScreenshotFamily({ ...options.screenshots, monitor: this.monitor }));
  }

  get config(): TelemetryConfig {
    return this.currentConfig;
  }

  /** The tabs' DOM snapshots, for the control layer's before and after of each action. */
  get snapshots(): TabSnapshots {
    return this.snapshotFamily;
  }

  /** A client of the agent's CDP endpoint answers the dialog of `targetId` (docs/events.md "Dialogs and file choosers"). */
  dialogAnswered(targetId: string): void {
    this.dialogs.answered(targetId);
  }

  start(): void {
    this.handle('Runtime.executionContextCreated', (p, s) => this.tracker.recordExecutionContext(s, p.context));
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- contexts are keyed by executionContextId, which Chromium still sends
    this.handle('Runtime.executionContextDestroyed', (p, s) => s.contextFrames.delete(p.executionContextId));
    this.handle('Runtime.executionContextsCleared', (_p, s) => s.contextFrames.clear());
    this.handle('Page.frameNavigated', (p, s) => this.onFrameNavigated(p.frame, s));
    this.handle('Page.navigatedWithinDocument', (p, s) => this.tracker.recordSameDocumentNavigation(s, p.frameId, p.url));
    this.handle('Page.frameDetached', (p, s) => {
      s.frames.delete(p.frameId);
      // A swap moves the frame to another process; it keeps its loader.
      if (p.reason !== 'swap') this.announcedLoaders.delete(p.frameId);
    });
    for (const family of this.families) family.start(this);
  }

  /** The session ends (before the streams close): events that wait for an end go out now (page_web_vitals, network_websocket_closed). */
  endSession(): void {
    for (const family of this.families) family.endSession?.();
  }

  dispose(): void {
    for (const dispose of this.disposers.splice(0)) dispose();
    for (const family of this.families) family.dispose();
  }

  // ---- TargetObserver -------------------------------------------------------------------------

  setUpTarget(target: AttachedTarget): Array<Promise<unknown>> {
    const state = this.tracker.add(target);
    const commands = this.applyDomains(state, true);
    if (!this.currentConfig.enabled) return commands;
    for (const family of this.families) {
      const more = family.setUpTarget?.(state);
      if (more) commands.push(...more);
    }
    return commands;
  }

  /**
   * Apply a new telemetry config to every attached target without reconnecting: domains and
   * family work are started or stopped; targets attached later are set up with it directly.
   */
  setConfig(next: TelemetryConfig): Promise<void> {
    const previous = this.currentConfig;
    this.currentConfig = next;
    const commands: Array<Promise<unknown>> = [];
    for (const state of this.tracker.all()) {
      commands.push(...this.applyDomains(state, false));
      for (const family of this.families) {
        const more = family.reconfigure?.(state, previous, next);
        if (more) commands.push(...more);
      }
    }
    // Resolves once every target runs with the new config (a hung target does not hold it up).
    return settleWithin(commands, RECONFIGURE_WAIT_MS);
  }

  /**
   * Enable or disable Page and Runtime on a target to match the config. Page feeds the context
   * (frame URLs, loader ids, nav_seq) of every category; Runtime serves the categories that need
   * it. `initial`: the target was just attached (its history is reported per the watermark).
   */
  private applyDomains(state: TargetState, initial: boolean): Array<Promise<unknown>> {
    const target = state.target;
    const commands: Array<Promise<unknown>> = [];
    const enabled = this.currentConfig.enabled;
    const wantPage = enabled && (target.type === 'page' || target.type === 'iframe');
    const wantRuntime = enabled && this.runtimeCategoriesOf(target.type).some((c) => this.isOn(c));
    if (wantPage && !state.pageEnabled) {
      state.pageEnabled = true;
      // File choosers are reported without intercepting them (dialog-family.ts).
      commands.push(this.setUpStep(target, 'Page.enable', target.send('Page.enable', { enableFileChooserOpenedEvent: true })));
      if (!initial || !target.wasWaiting) {
        // A document that existed before the agent (or Page) looked: learn its frames now.
        commands.push(target.mayFail(target.send('Page.getFrameTree').then(({ frameTree }) => this.seedFrames(state, frameTree))));
      }
    } else if (!wantPage && state.pageEnabled) {
      state.pageEnabled = false;
      commands.push(target.sendMayFail('Page.disable'));
    }
    if (wantRuntime && !state.runtimeEnabled) {
      state.runtimeEnabled = true;
      state.runtimeReplaying = true;
      state.dropReplayedHistory = !initial;
      const enable = target.send('Runtime.enable').finally(() => {
        state.runtimeReplaying = false;
        state.dropReplayedHistory = false;
      });
      commands.push(this.setUpStep(target, 'Runtime.enable', enable));
    } else if (!wantRuntime && state.runtimeEnabled) {
      state.runtimeEnabled = false;
      state.contextFrames.clear();
      commands.push(target.sendMayFail('Runtime.disable'));
    }
    return commands;
  }

  /**
   * The categories whose events need Runtime on a target of this type (docs/chromium.md "Domains
   * by target type"): the page script (page, interaction) runs in pages and iframes only; other
   * targets (workers, worklets) report their console only. With the cut off (cdp-cuts.ts), every
   * type as a page.
   */
  private runtimeCategoriesOf(type: string): readonly Category[] {
    if (type === 'page' || type === 'iframe' || !this.cuts.domainsByTargetType) return RUNTIME_CATEGORIES;
    return WORKER_RUNTIME_CATEGORIES;
  }

  /** Seed frames from a frame tree; a main-frame document we did not see commit is a navigation. */
  private seedFrames(state: TargetState, tree: Protocol.Page.FrameTree): void {
    const target = state.target;
    if (target.type === 'page' && tree.frame.id === target.targetId) {
      const known = state.frames.get(tree.frame.id);
      if (known && known.loaderId !== tree.frame.loaderId) state.navSeq++;
      this.announcedLoaders.set(tree.frame.id, tree.frame.loaderId);
    }
    this.tracker.seedFrameTree(state, tree);
  }

  targetDetached(target: AttachedTarget): void {
    const state = this.tracker.get(target.sessionId);
    if (!state) return;
    for (const family of this.families) family.targetDetached?.(state);
    // A tab's frames are announced by its own session only; an OOPIF's frame stays known to its
    // parent (a process swap moves it), which forgets it on Page.frameDetached.
    if (target.type === 'page') for (const frameId of state.frames.keys()) this.announcedLoaders.delete(frameId);
    this.tracker.remove(target);
  }

  targetCreated(info: Protocol.Target.TargetInfo): void {
    this.pageFamily.targetCreated(info);
  }

  targetDestroyed(targetId: string): void {
    this.memory.forget(targetId);
  }

  /** Frames whose current loader was announced (per connection; for tests of its bound). */
  get announcedFrameCount(): number {
    return this.announcedLoaders.size;
  }

  setupFailed(target: AttachedTarget, step: string, error: Error): void {
    this.logger.warn({ target_id: target.targetId, target_type: target.type, step, err: error.message }, 'target setup failed');
    this.emitMonitor('monitor_init_failed', { step, error: error.message });
  }

  // ---- FamilyHost -----------------------------------------------------------------------------

  handle<E extends EventName>(event: E, handler: StateHandler<E>): void {
    this.disposers.push(
      this.connection.on(event, (params, sessionId) => {
        const state = this.tracker.get(sessionId);
        if (state) handler(params, state);
      }),
    );
  }

  isOn(category: GatingCategory): boolean {
    return isCategoryOn(this.currentConfig, category);
  }

  admits(category: GatingCategory): boolean {
    if (isCategoryOn(this.currentConfig, category)) return true;
    this.stats.dropped.category_off++;
    return false;
  }

  emit<T extends EventType>(type: T, ts: number, data: EventDataByType[T], options: EmitOptions = NO_OPTIONS): void {
    const { truncated, method, origin } = options;
    let source: EventSource;
    if (method === undefined) source = AGENT_SOURCE;
    else if (origin instanceof TargetState) source = origin.sourceOf(method);
    else source = origin === undefined ? { kind: 'cdp', event: method } : { kind: 'cdp', event: method, metadata: origin };
    this.sink.append(eventOf<T>(truncated ? { ts, type, source, data, truncated } : { ts, type, source, data }));
  }

  setUpStep<T>(target: AttachedTarget, step: string, command: Promise<T>): Promise<T | undefined> {
    return command.catch((err: unknown) => {
      // A target that went away during setup loses nothing (its detach event may come later).
      if (!isTargetGone(err, target)) this.setupFailed(target, step, err as Error);
      return undefined;
    });
  }

  /** monitor_* events: emitted whenever telemetry is enabled, whatever the categories. */
  emitMonitor(type: MonitorType, data: MonitorData): void {
    this.monitor.emit(type, data);
  }

  // ---- context --------------------------------------------------------------------------------

  private onFrameNavigated(frame: Protocol.Page.Frame, state: TargetState): void {
    this.tracker.recordFrame(state, frame);
    if (this.announcedLoaders.get(frame.id) === frame.loaderId) return;
    this.announcedLoaders.set(frame.id, frame.loaderId);
    const target = state.target;
    // A committed cross-document navigation of the tab's main frame starts a new epoch.
    const tabMainFrame = isTabMainFrame(target, frame.id);
    if (tabMainFrame) state.navSeq++;
    for (const family of this.families) family.frameNavigated?.(state, frame, tabMainFrame);
  }
}

/** The options of an agent event, allocated once (emit is on the hot path). */
const NO_OPTIONS: EmitOptions = {};

/** How long a config change waits for the targets to apply it before answering anyway. */
const RECONFIGURE_WAIT_MS = 3000;

function settleWithin(commands: Array<Promise<unknown>>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  return Promise.race([Promise.allSettled(commands).then(() => undefined), timeout]).finally(() => clearTimeout(timer));
}
