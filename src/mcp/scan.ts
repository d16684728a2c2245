// Reading a session's events for the tools page by page (docs/mcp.md "Budgets"): each read is one
// history page of the source, and the event loop gets a turn between pages, so a long scan (a
// digest of an hour) never holds the agent's CDP traffic or other clients for more than one page.

import type { EventPage, EventRead, SessionSource } from './source.ts';

export interface ScanRequest extends Omit<EventRead, 'limit'> {
  /** Events per read. */
  chunk: number;
}

/** One read: its envelopes and where the next read starts. */
export interface ScanBatch extends EventPage {
  /** The offset this read started from (undefined: the window's start). */
  from: number | undefined;
}

/**
 * The session's events matching the request, one read per batch, until the source has no more;
 * the caller stops whenever it has enough.
 */
export async function* scanEvents(session: SessionSource, request: ScanRequest): AsyncGenerator<ScanBatch> {
  let offset = request.offset;
  for (;;) {
    const page = await session.read({ ...request, offset, limit: request.chunk });
    yield { ...page, from: offset };
    if (!page.hasMore || page.items.length === 0) return;
    // desc ends at 0 (the start of the log).
    if (request.order === 'desc' && page.nextOffset < 1) return;
    offset = page.nextOffset;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const SEQ_PREFIX = /^\{"seq":(\d+),/;

/** The seq of an envelope's JSON text, read off its start (every envelope begins with it). */
export function seqOf(envelopeJson: string): number {
  const match = SEQ_PREFIX.exec(envelopeJson);
  if (match) return Number(match[1]);
  return (JSON.parse(envelopeJson) as { seq: number }).seq;
}
