// A recording's chapters from the session's steps (docs/replay.md "Chapters"): every `step` event
// (docs/events.md "Steps") between the recording's start and end is a chapter titled with the
// step's name, read from the history (the durable store, else the RAM ring) when the recording is
// finalized, so a recording an earlier agent left behind gets its chapters too.

import type { HistoryReader } from '../stream/history.ts';
import type { Chapter, ChapterProvider } from './recording.ts';

/** Chapters kept at most (MP4 players list them all). */
const MAX_CHAPTERS = 1000;
const STEP_TYPES = new Set(['step'] as const);

export function stepChapters(history: HistoryReader): ChapterProvider {
  return ({ fromUs, untilUs }) => {
    const chapters: Chapter[] = [];
    let offset: number | undefined;
    while (chapters.length < MAX_CHAPTERS) {
      const page = history.read({ filter: { types: STEP_TYPES }, order: 'asc', offset, sinceTs: fromUs, untilTs: untilUs, limit: MAX_CHAPTERS });
      for (const json of page.items) {
        const { event } = JSON.parse(json) as { event: { ts: number; data?: { name?: unknown } } };
        if (typeof event.data?.name === 'string') chapters.push({ title: event.data.name, startUs: event.ts });
      }
      if (!page.hasMore) break;
      offset = page.nextOffset;
    }
    return chapters.slice(0, MAX_CHAPTERS);
  };
}
