// Events the agent itself produces outside any CDP connection (docs/events.md "Failure signals"):
// service_crashed and system_oom_kill (category `system`), live_view_connect and
// live_view_disconnect (category `connection`). Gated by their category at event time, like every
// event, and emitted whether or not a browser is connected.

import { EVENT_CATEGORY, type EventDataByType } from '../../injected/schema.ts';
import { eventOf } from '../event-data.ts';
import type { BrowserClock } from './clock.ts';
import type { EventSink } from './monitor.ts';
import { isCategoryOn, type TelemetryConfig } from './telemetry-config.ts';

export type OperationalType = 'service_crashed' | 'system_oom_kill' | 'live_view_connect' | 'live_view_disconnect';

/** `source.event` of each type: what the agent observed. */
const SOURCE_EVENT: Record<OperationalType, string> = {
  service_crashed: 'process_exit',
  system_oom_kill: '/dev/kmsg',
  live_view_connect: 'viewer_stream_open',
  live_view_disconnect: 'viewer_stream_close',
};

export class OperationalEvents {
  constructor(
    private readonly sink: EventSink,
    private readonly clock: BrowserClock,
    private readonly config: () => TelemetryConfig,
  ) {}

  emit<T extends OperationalType>(type: T, data: EventDataByType[T], ts = this.clock.nowUs()): void {
    const category = EVENT_CATEGORY[type];
    if (category === null || !isCategoryOn(this.config(), category)) return;
    this.sink.append(eventOf<T>({ ts, type, source: { kind: 'agent', event: SOURCE_EVENT[type] }, data }));
  }

  /** A viewer's stream opened: live_view_connect now; the returned function emits its disconnect. */
  liveViewOpened(viewerId: string): () => void {
    const opened = performance.now();
    this.emit('live_view_connect', { session_id: viewerId });
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      this.emit('live_view_disconnect', { session_id: viewerId, duration_ms: Math.round(performance.now() - opened) });
    };
  }
}
