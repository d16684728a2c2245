// The contract between the telemetry core (telemetry.ts) and the event families (console, page,
// network, interaction). A family owns its CDP handlers, its per-target setup and its per-tab
// machines; the core owns targets, context, configuration and emission.

import type { Protocol } from 'devtools-protocol';
import type { Logger } from 'pino';
import type { EventDataByType, EventSource, EventType, TelemetryEvent } from '../../injected/schema.ts';
import type { CdpConnection, EventName, EventParams } from '../browser/cdp-connection.ts';
import type { AttachedTarget } from '../browser/target-manager.ts';
import type { Limits } from '../limits.ts';
import type { BrowserClock } from './clock.ts';
import type { EventContextTracker, TargetState } from './event-context.ts';
import type { GatingCategory, TelemetryConfig } from './telemetry-config.ts';
import type { TelemetryStats } from './telemetry-stats.ts';

export type StateHandler<E extends EventName> = (params: EventParams<E>, state: TargetState) => void;

/** How an emitted event came about. */
export interface EmitOptions {
  /** The data was cut to the limits (the event's `truncated` flag). */
  truncated?: boolean;
  /** The CDP method that caused the event; absent: an agent event (source kind `agent`). */
  method?: string;
  /** The source metadata: the target's (its state), or an explicit block. */
  origin?: TargetState | EventSource['metadata'];
}

/** What the core offers every family. */
export interface FamilyHost {
  readonly connection: CdpConnection;
  readonly tracker: EventContextTracker;
  readonly clock: BrowserClock;
  readonly limits: Limits;
  readonly logger: Logger;
  readonly config: TelemetryConfig;
  /** Register a CDP event handler; it runs only for events of attached targets. */
  handle<E extends EventName>(event: E, handler: StateHandler<E>): void;
  isOn(category: GatingCategory): boolean;
  /**
   * At event time: is the category on? When not, the event that would have been produced is
   * counted as dropped (category_off) and must not be built.
   */
  admits(category: GatingCategory): boolean;
  /** Counters read by /metrics. */
  readonly stats: TelemetryStats;
  /** Which tabs are loading, and the end of each load. */
  readonly loadingTabs: LoadingTabs;
  /** Admit an event to the log. */
  emit<T extends EventType>(type: T, ts: number, data: EventDataByType[T], options?: EmitOptions): void;
  /** Wrap a setup command: a failure that loses telemetry becomes monitor_init_failed. */
  setUpStep<T>(target: AttachedTarget, step: string, command: Promise<T>): Promise<T | undefined>;
}

export interface TelemetryFamily {
  /** Register CDP handlers (called once). */
  start(host: FamilyHost): void;
  /**
   * Commands for a freshly attached target, sent now and not awaited (the target is resumed
   * right after). Page and Runtime are enabled by the core before these.
   */
  setUpTarget?(state: TargetState): Array<Promise<unknown>>;
  targetDetached?(state: TargetState): void;
  /**
   * The telemetry config changed (PATCH): start or stop this family's CDP work on an attached
   * target, without reconnecting. `host.config` is already `next`.
   */
  reconfigure?(state: TargetState, previous: TelemetryConfig, next: TelemetryConfig): Array<Promise<unknown>>;
  /**
   * A frame of `state`'s target committed a new document (reported once per frame and loader).
   * When `isTabMainFrame`, the tab's nav_seq was just incremented: reset per-tab machines.
   */
  frameNavigated?(state: TargetState, frame: Protocol.Page.Frame, isTabMainFrame: boolean): void;
  /** The session ends (before the streams close): what waits for an end is reported now. */
  endSession?(): void;
  /** Release timers and listeners. */
  dispose(): void;
}

export type { TelemetryEvent };

/** Which tabs are loading (loading-tabs-family.ts), as the other families read it. */
export interface LoadingTabs {
  isLoading(tabSessionId: string): boolean;
  /** Called at every end of a tab's load (its load event, or its main frame stopping loading). */
  onLoadEnd(listener: (tabSessionId: string) => void): void;
}
