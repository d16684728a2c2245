// The HAR of an ended session, from the archive (docs/gateway.md "Reading"; the document is the
// agent's, docs/export.md "HAR"): the archived network and page events, read a page at a time in
// seq order, through the agent's own builder (src/export/har.ts), handed out in pieces of about
// 64 KiB so that a session of any size is streamed with bounded memory (docs/export.md "HAR").

import { HAR_EVENT_TYPES, HarBuilder } from 'browser-telemetry-agent/events';
import { parseFilter } from 'browser-telemetry-agent/events';
import type { TelemetryEvent } from 'browser-telemetry-agent/events';
import type { ArchiveStore, SessionRecord } from './archive-store.ts';

export interface ArchiveHarRead {
  targetIds?: ReadonlySet<string>;
  navSeqs?: ReadonlySet<number>;
  /** Unix µs, inclusive. */
  sinceTs?: number;
  /** Unix µs, exclusive. */
  untilTs?: number;
}

/** Small: an event of a request with large headers is tens of kilobytes, held as text and parsed. */
const PAGE_EVENTS = 100;
const PIECE_CHARS = 1 << 16;

export async function* archiveHarPieces(
  store: ArchiveStore,
  session: SessionRecord,
  read: ArchiveHarRead,
  creator: { name: string; version: string },
): AsyncGenerator<string, void, undefined> {
  const builder = new HarBuilder({ creator, navSeqs: read.navSeqs });
  const filter = parseFilter({ type: [...HAR_EVENT_TYPES], target_id: read.targetIds ? [...read.targetIds] : undefined });
  let piece = builder.begin();
  const window = { sinceTs: read.sinceTs, untilTs: read.untilTs };
  for await (const rows of store.events(session.sessionKey, 1, session.archivedSeq, filter, PAGE_EVENTS, window)) {
    for (const row of rows) {
      piece += builder.add(JSON.parse(row.eventJson) as TelemetryEvent);
      if (piece.length >= PIECE_CHARS) {
        yield piece;
        piece = '';
      }
    }
  }
  yield piece + builder.end();
}
