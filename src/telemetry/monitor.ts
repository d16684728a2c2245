// monitor_* events (docs/events.md#telemetry-config-lifecycle-and-monitor-events): emitted by the agent whenever telemetry is enabled, whatever the
// categories, also while no CDP connection exists (so they outlive any one Telemetry instance).

import type { EventSource, MonitorData, TelemetryEvent } from '../../injected/schema.ts';
import type { BrowserClock } from './clock.ts';
import type { TelemetryConfig } from './telemetry-config.ts';

export interface EventSink {
  append(event: TelemetryEvent): number;
}

/** The `source` of every event the agent itself causes (frozen, shared: serialized once). */
export const AGENT_SOURCE: EventSource = Object.freeze({ kind: 'agent' });

export type MonitorType = 'monitor_disconnected' | 'monitor_reconnected' | 'monitor_reconnect_failed' | 'monitor_init_failed' | 'monitor_screenshot';

export class Monitor {
  constructor(
    private readonly sink: EventSink,
    private readonly clock: BrowserClock,
    private readonly config: () => TelemetryConfig,
  ) {}

  emit(type: MonitorType, data: MonitorData): void {
    if (!this.config().enabled) return;
    this.sink.append({ ts: this.clock.nowUs(), type, source: AGENT_SOURCE, data });
  }
}
