// The Playwright trace of an ended session, from the archive (docs/gateway.md "Reading"; the
// archive is the agent's, docs/export.md "Playwright trace"): the archived events as the trace's
// event source, read a page at a time in seq order up to what was archived.

import type { EventFilter, TelemetryEvent, TraceEventSource, TraceRow } from 'browser-telemetry-agent/events';
import type { ArchiveStore, SessionRecord } from './archive-store.ts';

export function archiveTraceSource(store: ArchiveStore, session: SessionRecord, sinceTs: number | undefined, untilTs: number | undefined): TraceEventSource {
  return {
    async *pages(filter: EventFilter | undefined, pageSize: number): AsyncGenerator<TraceRow[]> {
      let next = 1;
      for (;;) {
        const rows = await store.page({
          sessionKey: session.sessionKey,
          filter,
          order: 'asc',
          minSeq: next,
          maxSeq: session.archivedSeq,
          sinceTs,
          untilTs,
          limit: pageSize,
        });
        if (rows.length > 0) yield rows.map((row) => ({ seq: row.seq, text: row.eventJson }));
        if (rows.length < pageSize) return;
        next = rows[rows.length - 1]!.seq + 1;
      }
    },
    event(row: TraceRow): TelemetryEvent {
      return JSON.parse(row.text) as TelemetryEvent;
    },
  };
}
