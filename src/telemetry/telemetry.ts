// CDP → telemetry events. Sets up each attached target for the enabled categories, routes its CDP
// events through a handler table to the per-family translators, and hands finished events to the
// sink (the event log). Events of a category that is off are never built.

import type { Protocol } from 'devtools-protocol';
import type { Logger } from 'pino';
import type { Category, EventDataByType, EventType, MonitorData, TelemetryEvent } from '../../injected/schema.ts';
import type { CdpConnection, EventName, EventParams } from '../browser/cdp-connection.ts';
import type { AttachedTarget, TargetObserver } from '../browser/target-manager.ts';
import type { Limits } from '../limits.ts';
import { BrowserClock } from './clock.ts';
import { translateConsoleApiCalled, translateExceptionThrown } from './console.ts';
import { EventContextTracker, type TargetState } from './event-context.ts';
import { translateFrameNavigated, translatePageTiming, translateTabOpened } from './page.ts';
import { isCategoryOn, type TelemetryConfig } from './telemetry-config.ts';

export interface EventSink {
  append(event: TelemetryEvent): number;
}

/**
 * State that outlives one CDP connection, so that a reconnect neither repeats page_tab_opened nor
 * replays console history that was already reported.
 */
export class TelemetryMemory {
  /** Tabs already announced with page_tab_opened (for the agent's lifetime). */
  readonly announcedTabs = new Set<string>();
  /** Per target id: timestamp (epoch ms) of the newest console message or exception reported. */
  readonly consoleWatermarks = new Map<string, number>();
}

export interface TelemetryOptions {
  config: TelemetryConfig;
  limits: Limits;
  logger: Logger;
  memory?: TelemetryMemory;
  clock?: BrowserClock;
}

type Handler<E extends EventName> = (params: EventParams<E>, state: TargetState) => void;

/** How long console argument objects stay pinned in the page before being released. */
const CONSOLE_OBJECT_RELEASE_MS = 2000;

export class Telemetry implements TargetObserver {
  private readonly tracker = new EventContextTracker();
  private readonly memory: TelemetryMemory;
  private readonly clock: BrowserClock;
  private readonly limits: Limits;
  private readonly logger: Logger;
  private config: TelemetryConfig;
  private readonly disposers: Array<() => void> = [];
  /** Targets whose `Runtime.enable` has not answered yet: what arrives now is replayed history. */
  private readonly replaying = new Set<string>();
  /** Last loader id announced per frame: the parent and the OOPIF session can both report it. */
  private readonly announcedLoaders = new Map<string, string>();
  private readonly sessionsWithConsoleObjects = new Set<string>();
  private releaseTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly connection: CdpConnection,
    private readonly sink: EventSink,
    options: TelemetryOptions,
  ) {
    this.config = options.config;
    this.limits = options.limits;
    this.logger = options.logger;
    this.memory = options.memory ?? new TelemetryMemory();
    this.clock = options.clock ?? new BrowserClock();
  }

  start(): void {
    this.handle('Runtime.consoleAPICalled', this.onConsoleApiCalled);
    this.handle('Runtime.exceptionThrown', this.onExceptionThrown);
    this.handle('Runtime.executionContextCreated', (p, s) => this.tracker.recordExecutionContext(s, p.context));
    this.handle('Runtime.executionContextDestroyed', (p, s) => s.contextFrames.delete(p.executionContextId));
    this.handle('Runtime.executionContextsCleared', (_p, s) => s.contextFrames.clear());
    this.handle('Page.frameNavigated', this.onFrameNavigated);
    this.handle('Page.navigatedWithinDocument', (p, s) => this.tracker.recordSameDocumentNavigation(s, p.frameId, p.url));
    this.handle('Page.frameDetached', (p, s) => {
      s.frames.delete(p.frameId);
      if (p.reason !== 'swap') this.announcedLoaders.delete(p.frameId);
    });
    this.handle('Page.domContentEventFired', (p, s) => this.onPageTiming('page_dom_content_loaded', 'Page.domContentEventFired', p.timestamp, s));
    this.handle('Page.loadEventFired', (p, s) => this.onPageTiming('page_load', 'Page.loadEventFired', p.timestamp, s));
  }

  dispose(): void {
    for (const dispose of this.disposers.splice(0)) dispose();
    if (this.releaseTimer) clearTimeout(this.releaseTimer);
    this.releaseTimer = undefined;
    this.sessionsWithConsoleObjects.clear();
  }

  get currentConfig(): TelemetryConfig {
    return this.config;
  }

  // ---- TargetObserver -------------------------------------------------------------------------

  setUpTarget(target: AttachedTarget): Array<Promise<unknown>> {
    const state = this.tracker.add(target);
    const commands: Array<Promise<unknown>> = [];
    if (!this.config.enabled) return commands;
    const isDocument = target.type === 'page' || target.type === 'iframe';
    if (isDocument) {
      // Page events feed the context (frame URLs, loader ids, nav_seq) of every category.
      commands.push(this.setUpStep(target, 'Page.enable', target.send('Page.enable')));
      if (!target.wasWaiting) {
        // A document that existed before the agent attached: learn its frames now.
        commands.push(
          target
            .send('Page.getFrameTree')
            .then(({ frameTree }) => this.tracker.seedFrameTree(state, frameTree))
            .catch(() => undefined),
        );
      }
    }
    if (this.isOn('console')) {
      this.replaying.add(target.sessionId);
      const enable = target.send('Runtime.enable').finally(() => this.replaying.delete(target.sessionId));
      commands.push(this.setUpStep(target, 'Runtime.enable', enable));
    }
    return commands;
  }

  targetDetached(target: AttachedTarget): void {
    this.tracker.remove(target);
    this.replaying.delete(target.sessionId);
    this.sessionsWithConsoleObjects.delete(target.sessionId);
  }

  targetCreated(info: Protocol.Target.TargetInfo): void {
    if (info.type !== 'page' || this.memory.announcedTabs.has(info.targetId)) return;
    this.memory.announcedTabs.add(info.targetId);
    if (!this.isOn('page')) return;
    this.emit('page_tab_opened', this.clock.nowUs(), translateTabOpened(info), false, 'Target.targetCreated', {
      target_id: info.targetId,
      target_type: info.type,
    });
  }

  setupFailed(target: AttachedTarget, step: string, error: Error): void {
    this.logger.warn({ target_id: target.targetId, target_type: target.type, step, err: error.message }, 'target setup failed');
    this.emitMonitor('monitor_init_failed', { step, error: error.message });
  }

  /** monitor_* events: emitted whenever telemetry is enabled, whatever the categories. */
  emitMonitor(type: 'monitor_disconnected' | 'monitor_reconnected' | 'monitor_reconnect_failed' | 'monitor_init_failed' | 'monitor_screenshot', data: MonitorData): void {
    if (!this.config.enabled) return;
    this.emit(type, this.clock.nowUs(), data, false, undefined, undefined);
  }

  // ---- handlers -------------------------------------------------------------------------------

  private onConsoleApiCalled = (params: Protocol.Runtime.ConsoleAPICalledEvent, state: TargetState): void => {
    if (!this.isOn('console') || this.isReplayedConsole(state, params.timestamp)) return;
    const ctx = this.tracker.contextOfExecutionContext(state, params.executionContextId);
    const t = translateConsoleApiCalled(params, ctx, this.limits);
    this.emit(t.type, t.ts, t.data, t.truncated, 'Runtime.consoleAPICalled', state.sourceMetadata);
    if (params.args.some((arg) => arg.objectId !== undefined)) this.scheduleConsoleObjectRelease(state.target.sessionId);
  };

  private onExceptionThrown = (params: Protocol.Runtime.ExceptionThrownEvent, state: TargetState): void => {
    if (!this.isOn('console') || this.isReplayedConsole(state, params.timestamp)) return;
    const ctx = this.tracker.contextOfExecutionContext(state, params.exceptionDetails.executionContextId);
    const t = translateExceptionThrown(params, ctx, this.limits);
    this.emit(t.type, t.ts, t.data, t.truncated, 'Runtime.exceptionThrown', state.sourceMetadata);
  };

  private onFrameNavigated = (params: Protocol.Page.FrameNavigatedEvent, state: TargetState): void => {
    const frame = params.frame;
    this.tracker.recordFrame(state, frame);
    const target = state.target;
    if (this.announcedLoaders.get(frame.id) === frame.loaderId) return;
    this.announcedLoaders.set(frame.id, frame.loaderId);
    // A committed cross-document navigation of the tab's main frame starts a new epoch.
    if (target.type === 'page' && frame.id === target.targetId && !frame.parentId) state.navSeq++;
    if (!this.isOn('page')) return;
    this.emit('page_navigation', this.clock.nowUs(), translateFrameNavigated(frame, target), false, 'Page.frameNavigated', state.sourceMetadata);
  };

  private onPageTiming(type: 'page_dom_content_loaded' | 'page_load', method: string, timestamp: number, state: TargetState): void {
    if (!this.isOn('page')) return;
    const data = translatePageTiming(timestamp, this.tracker.contextOf(state));
    this.emit(type, this.clock.fromMonotonicSeconds(timestamp), data, false, method, state.sourceMetadata);
  }

  // ---- plumbing -------------------------------------------------------------------------------

  private handle<E extends EventName>(event: E, handler: Handler<E>): void {
    this.disposers.push(
      this.connection.on(event, (params, sessionId) => {
        const state = this.tracker.get(sessionId);
        if (state) handler.call(this, params, state);
      }),
    );
  }

  private isOn(category: Category): boolean {
    return isCategoryOn(this.config, category);
  }

  /**
   * `Runtime.enable` replays the target's stored console messages and exceptions. What this agent
   * already reported (up to the target's watermark) is dropped; anything newer (logged while the
   * agent was disconnected, or before it first attached) is reported once.
   */
  private isReplayedConsole(state: TargetState, timestampMs: number): boolean {
    const targetId = state.target.targetId;
    const watermark = this.memory.consoleWatermarks.get(targetId);
    if (this.replaying.has(state.target.sessionId) && watermark !== undefined && timestampMs <= watermark) return true;
    if (watermark === undefined || timestampMs > watermark) this.memory.consoleWatermarks.set(targetId, timestampMs);
    return false;
  }

  /** Console arguments pin their objects in the page until released (CHROMIUM-NOTES). */
  private scheduleConsoleObjectRelease(sessionId: string): void {
    this.sessionsWithConsoleObjects.add(sessionId);
    if (this.releaseTimer) return;
    this.releaseTimer = setTimeout(() => {
      this.releaseTimer = undefined;
      for (const sid of this.sessionsWithConsoleObjects) {
        this.connection.send('Runtime.releaseObjectGroup', { objectGroup: 'console' }, sid).catch(() => undefined);
      }
      this.sessionsWithConsoleObjects.clear();
    }, CONSOLE_OBJECT_RELEASE_MS);
    this.releaseTimer.unref();
  }

  private setUpStep<T>(target: AttachedTarget, step: string, command: Promise<T>): Promise<T | undefined> {
    return command.catch((err: Error) => {
      // A target that went away during setup loses nothing (its detach event may come later).
      if (!target.isDetached && !isTargetGone(err)) this.setupFailed(target, step, err);
      return undefined;
    });
  }

  private emit<T extends EventType>(
    type: T,
    ts: number,
    data: EventDataByType[T],
    truncated: boolean,
    method: string | undefined,
    metadata: TelemetryEvent['source']['metadata'] | undefined,
  ): void {
    const source: TelemetryEvent['source'] = method === undefined ? { kind: 'agent' } : { kind: 'cdp', event: method };
    if (metadata && method !== undefined) source.metadata = metadata;
    const event: TelemetryEvent = { ts, type, source, data };
    if (truncated) event.truncated = true;
    this.sink.append(event);
  }
}

/** Errors CDP gives for a command whose target closed or detached meanwhile. */
export function isTargetGone(err: Error): boolean {
  return /session with given id not found|target closed|no target with given id|websocket connection closed|cdp connection closed/i.test(err.message);
}
