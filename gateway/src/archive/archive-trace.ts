// The Playwright trace of an ended session, from the archive (docs/gateway.md "Reading"; the
// archive is the agent's, docs/export.md "Playwright trace"): the archived events as the trace's
// event source, read a page at a time in seq order up to what was archived.

import type { EventFilter, TelemetryEvent, TraceEventSource, TraceRow } from 'browser-telemetry-agent/events';
import type { ArchiveStore, SessionRecord } from './archive-store.ts';

export function archiveTraceSource(store: ArchiveStore, session: SessionRecord, sinceTs: number | undefined, untilTs: number | undefined): TraceEventSource {
  return {
    sinceTs,
    async *pages(filter: EventFilter | undefined, pageSize: number, fromStart = false): AsyncGenerator<TraceRow[]> {
      for await (const rows of store.events(session.sessionKey, 1, session.archivedSeq, filter, pageSize, {
        sinceTs: fromStart ? undefined : sinceTs,
        untilTs,
      })) {
        yield rows.map((row) => ({ seq: row.seq, text: row.eventJson }));
      }
    },
    event(row: TraceRow): TelemetryEvent {
      return JSON.parse(row.text) as TelemetryEvent;
    },
  };
}
