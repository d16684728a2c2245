// The telemetry stream through the gateway (docs/gateway.md "Reading"; the agent's stream is
// docs/events.md): where a stream starts decides who serves it.
//
// - An ended session: the archive alone. Frames from the start (Last-Event-ID + 1, or the oldest
//   archived with replay=all) to the newest archived, then the stream ends, as the agent's does
//   when its session ends. Without either, there is nothing new to wait for: it ends at once.
// - A live session, from before the archive's newest seq (a resume from far back, replay=all):
//   the archive up to that seq, then the agent's stream opened with Last-Event-ID at exactly that
//   seq, so nothing is missed or repeated at the switch.
// - A live session otherwise (new events only, or a resume the agent can serve): forwarded.
//
// Filters apply to both parts; the headers are the agent's (X-Log-Id, X-First-Seq, X-Resume).

import type { ServerResponse } from 'node:http';
import type { EventFilter } from 'browser-telemetry-agent/events';
import { resolveStart, type ResumeStatus } from 'browser-telemetry-agent/events';
import type { ArchiveStore, SessionRecord } from './archive-store.ts';
import { eventFrame } from './event-row.ts';

/** The agent's stream headers (src/http/telemetry-routes.ts, docs/events.md "Resuming"). */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'x-sse-content-type': 'application/json',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
} as const;

/** Frames per archive page while streaming. */
const PAGE_EVENTS = 1000;

/** How a stream of a session is served. */
export type StreamPlan =
  | { kind: 'forward' }
  | { kind: 'archive'; startSeq: number; endSeq: number; resume: ResumeStatus | undefined }
  | { kind: 'archive-then-agent'; startSeq: number; switchSeq: number; resume: ResumeStatus | undefined };

/**
 * Where a stream of `session` starts and who serves it. `lastEventId` is the raw header (a bad
 * one throws the agent's 400 invalid_input); it wins over `replayAll`.
 */
export async function planStream(store: ArchiveStore, session: SessionRecord, lastEventId: string | undefined, replayAll: boolean): Promise<StreamPlan> {
  const mark = session.archivedSeq;
  const oldest = mark > 0 ? (await store.oldestSeq(session.sessionKey)) || mark + 1 : mark + 1;
  const { startSeq, resume } = resolveStart({ oldestSeq: oldest, latestSeq: mark }, lastEventId, replayAll);
  if (session.endedAt !== null) return { kind: 'archive', startSeq, endSeq: mark, resume };
  if (startSeq > mark) return { kind: 'forward' };
  // A Last-Event-ID newer than everything archived is the agent's to judge.
  if (resume === 'reset') return { kind: 'forward' };
  return { kind: 'archive-then-agent', startSeq, switchSeq: mark, resume };
}

/** The headers of a stream the archive starts. */
export function archiveStreamHeaders(session: SessionRecord, startSeq: number, resume: ResumeStatus | undefined): Record<string, string> {
  const headers: Record<string, string> = { ...SSE_HEADERS, 'x-first-seq': String(startSeq) };
  if (session.logId !== null) headers['x-log-id'] = session.logId;
  if (resume !== undefined) headers['x-resume'] = resume;
  return headers;
}

/**
 * Writes the archived frames of seq `fromSeq`..`toSeq` matching `filter`, a page at a time,
 * waiting for the client to take each page (backpressure). Stops early when `open()` turns false.
 */
export async function writeArchivedFrames(
  store: ArchiveStore,
  session: SessionRecord,
  fromSeq: number,
  toSeq: number,
  filter: EventFilter | undefined,
  response: ServerResponse,
  open: () => boolean,
): Promise<void> {
  for await (const rows of store.events(session.sessionKey, fromSeq, toSeq, filter, PAGE_EVENTS)) {
    if (!open()) return;
    let text = '';
    for (const row of rows) text += eventFrame(row.seq, row.eventJson);
    if (!response.write(text)) {
      const drained = await new Promise<boolean>((resolve) => {
        const onDrain = () => {
          response.off('close', onClose);
          resolve(true);
        };
        const onClose = () => {
          response.off('drain', onDrain);
          resolve(false);
        };
        response.once('drain', onDrain);
        response.once('close', onClose);
      });
      if (!drained) return;
    }
  }
}
