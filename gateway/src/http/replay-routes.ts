// The replays' reads through the gateway (docs/gateway.md "Replays"): GET /browsers/{id}/replays
// and GET /browsers/{id}/replays/{replay_id}. A live session's are its agent's (forwarded, the
// viewer links put in by the proxy); an ended one's come from the archive (archive/replay-store.ts):
// the list of its archived replays, each with the gateway's own viewer link, and the file with the
// agent's headers and HTTP Range (the agent's own sendVideo), read chunk by chunk from the
// database as the client takes it. Starting and stopping stay forwarded (browser-proxy.ts).

import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { notFound, sendVideo } from 'browser-telemetry-agent/http-kit';
import type { Archive } from '../archive/archive.ts';
import type { ReplayRow, ReplayStore } from '../archive/replay-store.ts';
import { accessibleSession } from './auth.ts';
import type { BrowserProxy } from './browser-proxy.ts';

const listParams = { type: 'object', properties: { id: { type: 'string', minLength: 1 } }, required: ['id'] } as const;
const fileParams = {
  type: 'object',
  properties: { id: { type: 'string', minLength: 1 }, replay_id: { type: 'string', minLength: 1 } },
  required: ['id', 'replay_id'],
} as const;

/** The agent's file extension of a replay's type (docs/replay.md "Formats"). */
const EXTENSIONS: Record<string, string> = { 'video/mp4': 'mp4', 'video/webm': 'webm' };

export function registerReplayReadRoutes(
  app: FastifyInstance,
  archive: Archive,
  proxy: BrowserProxy,
  replayViewUrl: (request: FastifyRequest, sessionId: string, replayId: string) => string,
): void {
  const { store, replayStore } = archive;

  app.get('/browsers/:id/replays', { schema: { params: listParams }, exposeHeadRoute: false }, async (request, reply) => {
    const session = await accessibleSession(store, request);
    if (session.endedAt === null) return proxy.forward(request, reply, session);
    const rows = await replayStore.archived(session.sessionKey);
    return rows.map((row) => ({ ...(JSON.parse(row.object) as object), replay_view_url: replayViewUrl(request, session.sessionId, row.replayId) }));
  });

  // HEAD as well: a <video> may ask for the size first.
  app.get('/browsers/:id/replays/:replay_id', { schema: { params: fileParams } }, async (request, reply) => {
    const session = await accessibleSession(store, request);
    if (session.endedAt === null) {
      // The proxy forwards GET only; a HEAD of a live replay is the agent's GET, its body dropped by fastify.
      return proxy.forward(request, reply, session);
    }
    const { replay_id: replayId } = request.params as { replay_id: string };
    const row = await replayStore.row(session.sessionKey, replayId);
    // Not archived (still being copied, or never finished before the agent went): not here.
    if (row?.archivedAt == null) throw notFound(`replay ${replayId} is not in the archive of session ${session.sessionId}`);
    return sendVideo(request, reply, {
      size: row.sizeBytes,
      type: row.mimeType,
      etag: row.etag,
      filename: `${replayId}.${EXTENSIONS[row.mimeType] ?? 'bin'}`,
      open: (start, end) => archivedBytes(replayStore, row, start, end),
    });
  });
}

/**
 * Bytes `start` to `end` (inclusive) of an archived file, one chunk per read, only as fast as the
 * client takes them (Readable.from pulls the next chunk when its buffer has room).
 */
function archivedBytes(replays: ReplayStore, row: ReplayRow, start: number, end: number): Readable {
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let chunk = Math.floor(start / row.chunkBytes); chunk * row.chunkBytes <= end; chunk++) {
      const data = await replays.chunk(row.sessionKey, row.replayId, chunk);
      // Removed by retention while being read: the response ends short, as a cut connection would.
      if (data === undefined) throw new Error(`chunk ${chunk} of replay ${row.replayId} is gone`);
      const at = chunk * row.chunkBytes;
      const from = Math.max(0, start - at);
      const to = Math.min(data.length, end - at + 1);
      yield Buffer.from(data.buffer, data.byteOffset + from, to - from);
    }
  }
  return Readable.from(chunks(), { objectMode: false, highWaterMark: 1 });
}
