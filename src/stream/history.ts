// The history read (GET /browsers/{id}/telemetry/events, docs/events.md "History"): one page of
// envelopes, oldest or newest first, filtered, from the durable store when there is one, else
// from the RAM ring. Pages are addressed by seq (`offset` is the seq to continue from), so they
// never shift when old events are evicted.

import { matches, type EventFilter } from './event-filter.ts';
import type { EventLog } from './event-log.ts';
import { envelopeJsonOf } from './sse-frame.ts';

/** A stored event: its seq and the envelope JSON exactly as the stream sends it. */
export interface StoredEnvelope {
  seq: number;
  json: string;
}

/** One page of the durable store's history read. */
export interface HistoryQuery {
  filter: EventFilter | undefined;
  order: 'asc' | 'desc';
  /** asc: seq ≥ fromSeq; desc: seq ≤ fromSeq. */
  fromSeq?: number;
  /** Event ts (Unix µs) window: sinceTs inclusive, untilTs exclusive. */
  sinceTs?: number;
  untilTs?: number;
  limit: number;
}

/** What the history read needs of the durable store (src/store/event-store.ts implements it). */
export interface HistoryStore {
  /** False while the store cannot write (a failed disk): reads come from the RAM ring. */
  readonly isPersisting: boolean;
  stats(): { bytes: number };
  query(query: HistoryQuery): StoredEnvelope[];
}

export interface HistoryRequest {
  filter: EventFilter | undefined;
  order: 'asc' | 'desc';
  offset: number | undefined;
  /** Unix µs, inclusive. Ignored when offset is set. */
  sinceTs: number | undefined;
  /** Unix µs, exclusive. */
  untilTs: number | undefined;
  limit: number;
}

export interface HistoryPage {
  /** Envelope JSON texts, in the page's order. */
  items: string[];
  hasMore: boolean;
  /** asc: the seq after the page (or after the newest event); desc: the seq before it, 0 at the start. */
  nextOffset: number;
}

export class HistoryReader {
  constructor(
    private readonly log: EventLog,
    private readonly store: HistoryStore | undefined,
  ) {}

  /**
   * An upper bound of the bytes any read can return: the durable store's size on disk; undefined
   * when reading from the RAM ring.
   */
  storedBytes(): number | undefined {
    return this.store !== undefined && this.store.isPersisting ? this.store.stats().bytes : undefined;
  }

  read(request: HistoryRequest): HistoryPage {
    const sinceTs = request.offset === undefined ? request.sinceTs : undefined;
    const rows =
      this.store !== undefined && this.store.isPersisting
        ? this.store.query({
            filter: request.filter,
            order: request.order,
            fromSeq: request.offset,
            sinceTs,
            untilTs: request.untilTs,
            limit: request.limit + 1,
          })
        : this.fromRing(request, sinceTs);
    const hasMore = rows.length > request.limit;
    const page = hasMore ? rows.slice(0, request.limit) : rows;
    const last = page[page.length - 1];
    let nextOffset: number;
    if (request.order === 'asc') nextOffset = hasMore && last ? last.seq + 1 : this.log.latestSeq + 1;
    else nextOffset = hasMore && last ? last.seq - 1 : 0;
    return { items: page.map((row) => row.json), hasMore, nextOffset };
  }

  private fromRing(request: HistoryRequest, sinceTs: number | undefined): Array<{ seq: number; json: string }> {
    const rows: Array<{ seq: number; json: string }> = [];
    const oldest = this.log.ringOldestSeq;
    const latest = this.log.latestSeq;
    const want = request.limit + 1;
    const accept = (seq: number): boolean => {
      const meta = this.log.meta(seq);
      if (meta === undefined) return false;
      if (sinceTs !== undefined && meta.ts < sinceTs) return false;
      if (request.untilTs !== undefined && meta.ts >= request.untilTs) return false;
      return matches(request.filter, meta);
    };
    const push = (seq: number) => {
      rows.push({ seq, json: envelopeJsonOf(this.log.frame(seq)!) });
    };
    if (request.order === 'asc') {
      for (let seq = Math.max(oldest, request.offset ?? oldest); seq <= latest && rows.length < want; seq++) if (accept(seq)) push(seq);
    } else {
      for (let seq = Math.min(latest, request.offset ?? latest); seq >= oldest && rows.length < want; seq--) if (accept(seq)) push(seq);
    }
    return rows;
  }
}

/** `since`/`until`: an RFC 3339 time, or a duration (`90s`, `5m`, `2h`, `1d`) meaning that long ago; Unix µs. */
export function parseTimeBound(text: string, nowMs: number): number | undefined {
  const duration = /^(\d{1,9})(ms|s|m|h|d)$/.exec(text);
  if (duration) {
    const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[duration[2] as 'ms' | 's' | 'm' | 'h' | 'd'];
    return (nowMs - Number(duration[1]) * unit) * 1000;
  }
  if (!/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/.test(text)) return undefined;
  const ms = Date.parse(text.replace(' ', 'T'));
  if (Number.isNaN(ms)) return undefined;
  // Sub-millisecond digits are kept: events carry microseconds.
  const fraction = /\.(\d+)/.exec(text)?.[1] ?? '';
  const micros = fraction.length > 3 ? Number(fraction.slice(3, 6).padEnd(3, '0')) : 0;
  return ms * 1000 + micros;
}
