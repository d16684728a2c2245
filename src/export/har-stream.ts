// A HAR document read out of the event history page by page (docs/export.md "HAR"): pieces of
// JSON of bounded size, so a session of any size is exported without one giant string. The
// events the history holds at the start are exported; later ones are left for the next export.

import { parseFilter } from '../stream/event-filter.ts';
import type { HistoryReader } from '../stream/history.ts';
import type { Envelope } from '../../injected/schema.ts';
import { HAR_EVENT_TYPES, HarBuilder, type HarOptions } from './har.ts';

export interface HarRead {
  /** Only events of these targets (data.target_id). */
  targetIds?: string[];
  /** Unix µs, inclusive. */
  sinceTs?: number;
  /** Unix µs, exclusive. */
  untilTs?: number;
  /** The newest seq to export (the log's latest when the export began). */
  lastSeq: number;
}

/**
 * Events per history page. Small, because an event of a request with large headers is tens of
 * kilobytes and a page is held as text and as parsed objects at once (docs/export.md "HAR").
 */
const PAGE_EVENTS = 100;
/** A piece is handed over once it is this long (UTF-16 units): one socket write's worth. */
const PIECE_CHARS = 1 << 16;

/** The document in pieces, in order; each is at most about PIECE_CHARS plus one entry. */
export function* harPieces(history: HistoryReader, read: HarRead, options: HarOptions): Generator<string, void, undefined> {
  const builder = new HarBuilder(options);
  const filter = parseFilter({ type: [...HAR_EVENT_TYPES], target_id: read.targetIds });
  let piece = builder.begin();
  let offset: number | undefined;
  for (;;) {
    const page = history.read({ filter, order: 'asc', offset, sinceTs: read.sinceTs, untilTs: read.untilTs, limit: PAGE_EVENTS });
    let done = !page.hasMore;
    for (const text of page.items) {
      const envelope = JSON.parse(text) as Envelope;
      if (envelope.seq > read.lastSeq) {
        done = true;
        break;
      }
      piece += builder.add(envelope.event);
      if (piece.length >= PIECE_CHARS) {
        yield piece;
        piece = '';
      }
    }
    if (done) break;
    offset = page.nextOffset;
  }
  yield piece + builder.end();
}
