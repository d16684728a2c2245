// An ended session's archived replays as its Playwright trace's screencast (docs/gateway.md
// "Replays"; the pictures are the agent's, docs/export.md "Screencast"). ffmpeg reads files, so the
// replays that overlap the export window are first written to a private temporary directory
// (one chunk in memory at a time), removed once the pictures are taken or the export ends.

import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { replayScreencast, type ScreencastReplay } from 'browser-telemetry-agent/replay';
import type { ScreencastPicture } from 'browser-telemetry-agent/events';
import type { ReplayStore } from './replay-store.ts';

export async function* archivedScreencast(
  replays: ReplayStore,
  sessionKey: number,
  window: { sinceTs?: number; untilTs?: number },
): AsyncGenerator<ScreencastPicture> {
  const rows = (await replays.archived(sessionKey)).filter(
    (row) =>
      (window.untilTs === undefined || row.startedAt * 1000 <= window.untilTs) && (window.sinceTs === undefined || row.finishedAt * 1000 >= window.sinceTs),
  );
  if (rows.length === 0) return;
  const dir = await mkdtemp(join(tmpdir(), 'btg-trace-replays-'));
  try {
    const files: ScreencastReplay[] = [];
    for (const row of rows) {
      const path = join(dir, `${row.replayId}.${row.mimeType === 'video/webm' ? 'webm' : 'mp4'}`);
      const out = createWriteStream(path, { mode: 0o600 });
      try {
        for (let chunk = 0; chunk * row.chunkBytes < row.sizeBytes; chunk++) {
          const data = await replays.chunk(sessionKey, row.replayId, chunk);
          if (data === undefined) throw new Error(`chunk ${chunk} of replay ${row.replayId} is gone`);
          if (!out.write(data)) await once(out, 'drain');
        }
      } finally {
        out.end();
        await once(out, 'close');
      }
      const object = JSON.parse(row.object) as { framerate?: unknown };
      files.push({
        replayId: row.replayId,
        path,
        startedAtMs: row.startedAt,
        endMs: row.finishedAt,
        framerate: typeof object.framerate === 'number' ? object.framerate : 10,
      });
    }
    yield* replayScreencast(files, window);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
