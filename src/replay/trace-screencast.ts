// A replay's frames as the Playwright trace's screencast (docs/export.md "Screencast"): JPEG
// pictures of the recordings that overlap the export's window, at their moments, which the trace
// archive stores as `resources/<name>` with a `screencast-frame` line each, as Playwright's own
// traces do, so the trace viewer's film strip shows the page at any moment. For the agent (its
// replay files) and the gateway (an archived replay written to a temporary file first).
//
// The pictures are decoded by the ffmpeg that recorded them (frames.ts), one window of
// WINDOW_FRAMES at a time, so memory holds one window's pictures whatever the recording's length.

import type { ScreencastPicture } from '../export/trace-archive.ts';
import { extractFrames } from './frames.ts';
import { jpegSize } from './jpeg.ts';

/** One recording to take pictures from. Times are unix ms. */
export interface ScreencastReplay {
  replayId: string;
  /** The video file (a finished one, or a part file still being written). */
  path: string;
  /** Video time 0. */
  startedAtMs: number;
  /** The end of the video (now, for one still recording). */
  endMs: number;
  /** Its recording's frame rate: never more pictures per second than it has. */
  framerate: number;
}

/** Pictures per second at most (Playwright's film strip needs no more to show a moment). */
export const SCREENCAST_MAX_RATE = 4;
/** Pictures per trace at most: a longer window gets fewer per second. */
export const SCREENCAST_MAX_FRAMES = 1800;
/** The box the pictures are shrunk to fit (Playwright's own screencast size). */
export const SCREENCAST_MAX_WIDTH = 800;
export const SCREENCAST_MAX_HEIGHT = 600;
/** ffmpeg's JPEG quality (2 best … 31). */
const JPEG_QUALITY = 5;
/** Pictures decoded per ffmpeg run. */
const WINDOW_FRAMES = 40;

/**
 * The pictures of `replays` inside [sinceTs, untilTs] (unix µs; undefined: unbounded), oldest
 * first per replay, every 1/rate s from each overlap's start, where rate is SCREENCAST_MAX_RATE
 * (or the recording's own, when lower) and lower still when the overlaps together would give
 * more than SCREENCAST_MAX_FRAMES.
 */
export async function* replayScreencast(
  replays: readonly ScreencastReplay[],
  window: { sinceTs?: number; untilTs?: number },
  ffmpegPath?: string,
): AsyncGenerator<ScreencastPicture> {
  const spans = replays
    .map((replay) => ({
      replay,
      fromMs: Math.max(replay.startedAtMs, window.sinceTs === undefined ? -Infinity : window.sinceTs / 1000),
      toMs: Math.min(replay.endMs, window.untilTs === undefined ? Infinity : window.untilTs / 1000),
    }))
    .filter((span) => span.toMs > span.fromMs);
  const totalS = spans.reduce((sum, span) => sum + (span.toMs - span.fromMs) / 1000, 0);
  if (totalS === 0) return;
  const budgetRate = SCREENCAST_MAX_FRAMES / totalS;
  for (const { replay, fromMs, toMs } of spans) {
    const rate = Math.min(SCREENCAST_MAX_RATE, replay.framerate, budgetRate);
    const stepMs = 1000 / rate;
    for (let atMs = fromMs - replay.startedAtMs; atMs < toMs - replay.startedAtMs; atMs += WINDOW_FRAMES * stepMs) {
      const count = Math.min(WINDOW_FRAMES, Math.ceil((toMs - replay.startedAtMs - atMs) / stepMs));
      const frames = await extractFrames(replay.path, {
        rate,
        fromMs: atMs,
        maxFrames: count,
        image: 'jpeg',
        jpegQuality: JPEG_QUALITY,
        maxWidth: SCREENCAST_MAX_WIDTH,
        maxHeight: SCREENCAST_MAX_HEIGHT,
        ...(ffmpegPath === undefined ? {} : { ffmpegPath }),
      });
      for (const frame of frames) {
        const size = jpegSize(frame.data);
        if (size === undefined) continue;
        const ms = Math.round(frame.timeMs);
        yield { name: `replay-${replay.replayId}-${ms}.jpeg`, ts: Math.round((replay.startedAtMs + frame.timeMs) * 1000), ...size, data: frame.data };
      }
      // Past the end of the video (a recording shorter than its record says): nothing more to read.
      if (frames.length < count) break;
    }
  }
}
