// Replays kept like the telemetry (docs/replay.md "Retention"): one budget, `--retain-bytes`, for
// the data directory, and one age, `--retain-hours`.
//
// The event store keeps its own events within the budget and knows nothing of videos; replays get
// what the stores leave. A finished replay older than the age limit goes; then, while the event
// stores and the replays together are over the budget, the oldest finished replay goes (of any
// session of the directory). A recording is never removed: what is left of the budget for it is
// its size cap (with --replay-max-bytes), and reaching it ends the recording (`max_size`).

import { storeBytesIn } from '../store/event-store.ts';
import type { ReplayCatalogue, ReplayRecord } from './catalogue.ts';

export interface RetentionOptions {
  catalogue: ReplayCatalogue;
  /** The data directory of the event stores; undefined: none (RAM only), nothing else counts. */
  dataDir: string | undefined;
  retainBytes: number;
  retainMs: number;
  now: number;
  /** Told of each replay removed. */
  removed?: (record: ReplayRecord, why: 'age' | 'size') => void;
}

export interface RetentionResult {
  /** Bytes the recordings in progress may still use together before the budget is reached. */
  leftForRecordings: number;
}

export function enforceReplayRetention(options: RetentionOptions): RetentionResult {
  const { catalogue } = options;
  const records = catalogue.all();
  const cutoff = options.now - options.retainMs;
  const kept: Array<{ record: ReplayRecord; bytes: number }> = [];
  for (const record of records) {
    if (record.state === 'finished' && (record.finished_at_ms ?? record.started_at_ms) < cutoff) {
      catalogue.remove(record);
      options.removed?.(record, 'age');
      continue;
    }
    kept.push({ record, bytes: catalogue.bytesOf(record) });
  }
  const storeBytes = options.dataDir === undefined ? 0 : storeBytesIn(options.dataDir);
  let total = storeBytes + kept.reduce((sum, k) => sum + k.bytes, 0);
  // Oldest finished first (kept is in start order; finishing order is close enough and stable).
  for (const { record, bytes } of kept) {
    if (total <= options.retainBytes) break;
    if (record.state !== 'finished') continue;
    catalogue.remove(record);
    options.removed?.(record, 'size');
    total -= bytes;
  }
  return { leftForRecordings: Math.max(0, options.retainBytes - total) };
}
