// Archiving a replay resumes where an interrupted copy stopped (docs/gateway.md "Replays"), on a
// real SQLite store: an agent that dies mid-file (its connection cut after 300 KB, a fault a real
// agent cannot be made to produce on cue, so a small HTTP server plays it) leaves the chunks stored
// so far and no visible replay; the next sync asks for the rest with Range and If-Range, and the
// archived file is byte for byte the agent's.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient } from '../../src/archive/agent-client.ts';
import { CHUNK_BYTES, ReplayArchive } from '../../src/archive/replay-archive.ts';
import { ReplayStore } from '../../src/archive/replay-store.ts';
import { openStore, type OpenedStore } from '../../src/storage/open-store.ts';

const FILE = randomBytes(CHUNK_BYTES * 2 + 12_345);
const ETAG = `"rp_resume-${FILE.length}"`;
const CUT_AFTER = 300_000;
const REPLAY = {
  replay_id: 'rp_resume',
  started_at: new Date(Date.now() - 10_000).toISOString(),
  finished_at: new Date(Date.now() - 5_000).toISOString(),
  state: 'finished',
  framerate: 10,
};

describe('a replay copy cut mid-file', () => {
  let dir: string;
  let opened: OpenedStore;
  let server: Server;
  let agentUrl: string;
  const ranges: Array<{ range?: string; ifRange?: string }> = [];
  let store: ReplayStore;
  let archive: ReplayArchive;
  const session = { sessionKey: 7, sessionId: 's1', agentToken: 't' } as { sessionKey: number; sessionId: string; agentToken: string; agentUrl: string };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'btg-replay-resume-'));
    opened = await openStore({ kind: 'sqlite', dataDir: dir });
    server = createServer((request, response) => {
      if (request.url === '/browsers/s1/replays') {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify([REPLAY]));
        return;
      }
      ranges.push({ range: request.headers.range, ifRange: request.headers['if-range'] as string | undefined });
      const match = /^bytes=(\d+)-$/.exec(request.headers.range ?? '');
      if (match && request.headers['if-range'] === ETAG) {
        const start = Number(match[1]);
        response.writeHead(206, {
          'content-type': 'video/mp4',
          etag: ETAG,
          'content-length': String(FILE.length - start),
          'content-range': `bytes ${start}-${FILE.length - 1}/${FILE.length}`,
        });
        response.end(FILE.subarray(start));
        return;
      }
      // The first answer: the head and 300 KB, then the agent is gone.
      response.writeHead(200, { 'content-type': 'video/mp4', etag: ETAG, 'content-length': String(FILE.length) });
      response.write(FILE.subarray(0, CUT_AFTER), () => response.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    agentUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    session.agentUrl = agentUrl;
    store = new ReplayStore(opened.store.db);
    archive = new ReplayArchive(store, new AgentClient({ connectMs: 2000, responseMs: 2000, streamHeadMs: 2000 }), {
      log: pino({ level: 'silent' }),
      retainMs: 86_400_000,
    });
    await archive.sync(session);
  });

  afterAll(async () => {
    await archive?.close();
    await new Promise((resolve) => server?.close(resolve));
    await opened?.store.db.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the whole chunks it stored and shows no replay', async () => {
    const row = await store.row(session.sessionKey, REPLAY.replay_id);
    expect([row?.storedBytes, row?.archivedAt, (await store.archived(session.sessionKey)).length]).toEqual([CHUNK_BYTES, null, 0]);
  });

  it('asks for the rest with Range and If-Range on the next sync, then shows the replay, byte for byte', async () => {
    await archive.sync(session);
    const row = (await store.archived(session.sessionKey))[0]!;
    const chunks: Uint8Array[] = [];
    for (let chunk = 0; chunk * row.chunkBytes < row.sizeBytes; chunk++) chunks.push((await store.chunk(session.sessionKey, row.replayId, chunk))!);
    expect([ranges.at(-1), Buffer.concat(chunks).equals(FILE), row.etag, row.mimeType]).toEqual([
      { range: `bytes=${CHUNK_BYTES}-`, ifRange: ETAG },
      true,
      ETAG,
      'video/mp4',
    ]);
  });
});
