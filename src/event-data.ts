// Reading and building events whatever their type. `TelemetryEvent` is a union tagged by `type`
// (injected/schema.ts): a switch on the type gives each branch its own data's shape, and a switch
// that must handle every type ends in assertNever or skipUnknown (src/assert-never.ts). What reads
// every event alike (the log's index, the filters, caused_by, an export's tab) takes the event
// context through contextOf (docs/events.md "The event context").

import type { EventContext, EventOfType, EventType, TelemetryEvent } from '../injected/schema.ts';

/**
 * The event context an event's data carries (each field only when known); undefined for the types
 * whose data has none. A type whose data shares no field with the context does not compile in
 * the default branch: it must be listed here.
 */
export function contextOf(event: TelemetryEvent): EventContext | undefined {
  switch (event.type) {
    // The agent's own connection and screenshots: of no target.
    case 'monitor_screenshot':
    case 'monitor_disconnected':
    case 'monitor_reconnected':
    case 'monitor_reconnect_failed':
    case 'monitor_init_failed':
    case 'replay_started':
    case 'replay_stopped':
      return undefined;
    // Processes and the machine.
    case 'service_crashed':
    case 'system_oom_kill':
      return undefined;
    // Viewers and clients (live_view's session_id is the viewer's, not a CDP session).
    case 'live_view_connect':
    case 'live_view_disconnect':
    case 'cdp_disconnect':
      return undefined;
    default:
      return event.data;
  }
}

/**
 * An event of a type known only as a type parameter, as a member of the union. TypeScript does
 * not correlate `type: T` with `data: EventDataByType[T]` in an object it builds, so the generic
 * emitters (one per producer) build their event through this one place.
 */
export function eventOf<T extends EventType>(event: EventOfType<T>): TelemetryEvent<T> {
  return event as TelemetryEvent<T>;
}
