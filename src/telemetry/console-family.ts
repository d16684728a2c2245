// Console family (docs/events.md#types): console API calls and uncaught exceptions.

import type { Protocol } from 'devtools-protocol';
import { translateConsoleApiCalled, translateExceptionThrown } from './console.ts';
import type { TargetState } from './event-context.ts';
import type { FamilyHost, TelemetryFamily } from './family.ts';

/** How long console argument objects stay pinned in the page before being released. */
const CONSOLE_OBJECT_RELEASE_MS = 2000;

export class ConsoleFamily implements TelemetryFamily {
  private host!: FamilyHost;
  private readonly sessionsWithObjects = new Set<string>();
  private releaseTimer: NodeJS.Timeout | undefined;

  /** Per target id: timestamp (epoch ms) of the newest message or exception reported. */
  constructor(private readonly watermarks: Map<string, number>) {}

  start(host: FamilyHost): void {
    this.host = host;
    host.handle('Runtime.consoleAPICalled', this.onConsoleApiCalled);
    host.handle('Runtime.exceptionThrown', this.onExceptionThrown);
  }

  targetDetached(state: TargetState): void {
    this.sessionsWithObjects.delete(state.target.sessionId);
  }

  dispose(): void {
    if (this.releaseTimer) clearTimeout(this.releaseTimer);
    this.releaseTimer = undefined;
    this.sessionsWithObjects.clear();
  }

  private readonly onConsoleApiCalled = (params: Protocol.Runtime.ConsoleAPICalledEvent, state: TargetState): void => {
    if (!this.host.admits('console') || this.isReplayed(state, params.timestamp)) return;
    const ctx = this.host.tracker.contextOfExecutionContext(state, params.executionContextId);
    const t = translateConsoleApiCalled(params, ctx, this.host.limits);
    this.host.emit(t.type, t.ts, t.data, { truncated: t.truncated, method: 'Runtime.consoleAPICalled', origin: state });
    for (const arg of params.args) {
      if (arg.objectId !== undefined) {
        this.scheduleObjectRelease(state.target.sessionId);
        break;
      }
    }
  };

  private readonly onExceptionThrown = (params: Protocol.Runtime.ExceptionThrownEvent, state: TargetState): void => {
    if (!this.host.admits('console') || this.isReplayed(state, params.timestamp)) return;
    const ctx = this.host.tracker.contextOfExecutionContext(state, params.exceptionDetails.executionContextId);
    const t = translateExceptionThrown(params, ctx, this.host.limits);
    this.host.emit(t.type, t.ts, t.data, { truncated: t.truncated, method: 'Runtime.exceptionThrown', origin: state });
  };

  /**
   * `Runtime.enable` replays the target's stored console messages and exceptions. What this agent
   * already reported (up to the target's watermark) is dropped; anything newer (logged while the
   * agent was disconnected, or before it first attached) is reported once.
   */
  private isReplayed(state: TargetState, timestampMs: number): boolean {
    const targetId = state.target.targetId;
    const watermark = this.watermarks.get(targetId);
    if (state.runtimeReplaying && state.dropReplayedHistory) return true;
    if (state.runtimeReplaying && watermark !== undefined && timestampMs <= watermark) return true;
    if (watermark === undefined || timestampMs > watermark) this.watermarks.set(targetId, timestampMs);
    return false;
  }

  /** Console arguments pin their objects in the page until released (docs/chromium.md). */
  private scheduleObjectRelease(sessionId: string): void {
    this.sessionsWithObjects.add(sessionId);
    if (this.releaseTimer) return;
    this.releaseTimer = setTimeout(() => {
      this.releaseTimer = undefined;
      for (const sid of this.sessionsWithObjects) {
        void this.host.connection.failures.mayFail(this.host.connection.send('Runtime.releaseObjectGroup', { objectGroup: 'console' }, sid));
      }
      this.sessionsWithObjects.clear();
    }, CONSOLE_OBJECT_RELEASE_MS);
    this.releaseTimer.unref();
  }
}
