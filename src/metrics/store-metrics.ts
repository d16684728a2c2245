// The durable store's metrics (docs/storage.md "Metrics"): what is on disk, how far behind the
// writes are, and what failed. Read from the store when /metrics is scraped.

import { Gauge, type Registry } from 'prom-client';
import type { EventStore } from '../store/event-store.ts';
import { mirroredCounter } from './mirrored-counter.ts';

export function registerStoreMetrics(registry: Registry, store: EventStore): void {
  const registers = [registry];
  new Gauge({
    name: 'bta_store_events',
    help: 'Events of this session in the durable store.',
    registers,
    collect() {
      this.set(store.stats().events);
    },
  });
  new Gauge({
    name: 'bta_store_bytes',
    help: "Bytes of the session's store database in use (pages holding data).",
    registers,
    collect() {
      this.set(store.stats().bytes);
    },
  });
  new Gauge({
    name: 'bta_store_oldest_seq',
    help: 'Seq of the oldest event retained in the store (0 when empty).',
    registers,
    collect() {
      this.set(store.stats().oldestSeq);
    },
  });
  new Gauge({
    name: 'bta_store_pending_events',
    help: 'Events admitted and not yet written to the store.',
    registers,
    collect() {
      this.set(store.pendingCount);
    },
  });
  new Gauge({
    name: 'bta_store_persist_lag_seconds',
    help: 'Time from admission to write of the oldest event of the last batch written.',
    registers,
    collect() {
      this.set(store.lastPersistLagMs / 1000);
    },
  });
  new Gauge({
    name: 'bta_store_persisting',
    help: '1 while events are written to the store, 0 while persisting is stopped (a failed write, e.g. a full disk).',
    registers,
    collect() {
      this.set(store.isPersisting ? 1 : 0);
    },
  });
  const mirrored = (name: string, help: string, read: () => number) => mirroredCounter(registers, name, help, read);
  mirrored('bta_store_persist_errors_total', 'Failed writes to the store (each stops persisting for a few seconds).', () => store.persistErrors);
  mirrored('bta_store_dropped_events_total', 'Events streamed live but never written to the store (persisting was stopped).', () => store.droppedEvents);
}
