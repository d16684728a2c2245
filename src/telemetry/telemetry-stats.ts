// Plain counters of the telemetry layer, read by the metrics endpoint when it is scraped. Cheap
// on the hot path: an increment of a field.

import type { EventType } from '../../injected/schema.ts';

export type DropReason = 'category_off' | 'rate_limit' | 'invalid_report';
export type BodyFetchOutcome = 'fetched' | 'failed' | 'evicted' | 'skipped_for_size';
/** page_snapshot outcomes (docs/events.md "Snapshots"): `skipped`, a deadline passed before it was taken (the control layer's). */
export type SnapshotOutcome = 'taken' | 'failed' | 'too_large' | 'skipped';

export class TelemetryStats {
  /** Events admitted to the log, by type. */
  readonly admitted: Partial<Record<EventType, number>> = {};
  readonly dropped: Record<DropReason, number> = { category_off: 0, rate_limit: 0, invalid_report: 0 };
  readonly bodyFetches: Record<BodyFetchOutcome, number> = { fetched: 0, failed: 0, evicted: 0, skipped_for_size: 0 };
  readonly snapshots: Record<SnapshotOutcome, number> = { taken: 0, failed: 0, too_large: 0, skipped: 0 };

  countAdmitted(type: EventType): void {
    this.admitted[type] = (this.admitted[type] ?? 0) + 1;
  }
}
