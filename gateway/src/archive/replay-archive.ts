// Archiving a session's replays (docs/gateway.md "Replays"): the finished replays the agent lists
// are copied into the gateway's database, chunk by chunk, so their downloads outlive the VM. A sync
// asks the agent for its list and copies what the archive lacks; it runs when a follower starts
// following (what a restarted gateway missed), when the stream brings a `replay_stopped` (a file
// just became final), and after a DELETE (the recording the DELETE stopped). One sync per session
// at a time in this instance; a request during one runs another after it. Two instances syncing
// the same session store the same bytes once (each chunk is a key).
//
// Memory: one chunk (CHUNK_BYTES) and the response's own buffers per replay being copied; the
// agent's body is read only as fast as the database takes the chunks. An interrupted copy (the
// gateway killed, the agent gone mid-file) resumes at the bytes stored, with a Range request that
// holds only while the file keeps its ETag.

import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { AgentAnswered, type AgentAddress, type AgentClient } from './agent-client.ts';
import type { ReplayRow, ReplayStore } from './replay-store.ts';

/** Bytes per stored chunk: a Range request reads one or two; a seek costs one query per chunk. */
export const CHUNK_BYTES = 256 * 1024;

/** A session whose replays are archived: its agent and its key in the archive. */
export interface ReplaySession extends AgentAddress {
  sessionKey: number;
}

/** The fields of the agent's replay object the archive reads (docs/replay.md "API"). */
interface AgentReplay {
  replay_id: string;
  started_at: string;
  finished_at: string | null;
  state?: string;
}

export interface ReplayArchiveOptions {
  log: Logger;
  /** Replays that finished longer ago than this are not archived (retention would remove them). */
  retainMs: number;
  now?: () => number;
}

export class ReplayArchive {
  private readonly syncs = new Map<number, { running: Promise<void>; again: boolean }>();
  private readonly now: () => number;
  private closed = false;

  constructor(
    private readonly store: ReplayStore,
    private readonly client: AgentClient,
    private readonly options: ReplayArchiveOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Copies every finished replay of the session that the archive lacks; resolves when done (with
   * the run a call during another one asked for). Never rejects: failures are logged, and the
   * next sync tries again.
   */
  sync(session: ReplaySession): Promise<void> {
    const current = this.syncs.get(session.sessionKey);
    if (current) {
      current.again = true;
      return current.running;
    }
    const entry = { running: Promise.resolve(), again: false };
    entry.running = (async () => {
      do {
        entry.again = false;
        await this.syncOnce(session).catch((err: unknown) =>
          this.options.log.warn({ err, session_id: session.sessionId }, 'replay archive: the sync failed; the next one tries again'),
        );
      } while (entry.again && !this.closed);
      this.syncs.delete(session.sessionKey);
    })();
    this.syncs.set(session.sessionKey, entry);
    return entry.running;
  }

  /** Waits for the syncs under way; later ones are not started again. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.syncs.values()].map((entry) => entry.running));
  }

  private async syncOnce(session: ReplaySession): Promise<void> {
    let listed: unknown[];
    try {
      listed = await this.client.replays(session);
    } catch (err) {
      // An agent without replays (404: an older agent) or whose token lacks the `replay` scope.
      if (err instanceof AgentAnswered) {
        this.options.log.debug({ session_id: session.sessionId, status: err.status }, 'replay archive: the agent lists no replays');
        return;
      }
      throw err;
    }
    const cutoff = this.now() - this.options.retainMs;
    for (const item of listed) {
      if (this.closed) return;
      const replay = finishedReplay(item);
      if (replay === undefined || replay.finishedAt < cutoff) continue;
      const row = await this.store.row(session.sessionKey, replay.id);
      if (row?.archivedAt != null) continue;
      try {
        await this.copy(session, replay, item, row);
      } catch (err) {
        this.options.log.warn({ err, session_id: session.sessionId, replay_id: replay.id }, 'replay archive: copying a replay failed');
      }
    }
  }

  /** Copies one replay's file into the archive, from what an earlier copy stored. */
  private async copy(session: ReplaySession, replay: FinishedReplay, object: unknown, row: ReplayRow | undefined): Promise<void> {
    if (row !== undefined && row.storedBytes >= row.sizeBytes) {
      // Every byte stored, the mark not set (interrupted between the last chunk and it).
      await this.store.complete(session.sessionKey, replay.id, this.now());
      return;
    }
    const from = row !== undefined && row.storedBytes > 0 ? { offset: row.storedBytes, etag: row.etag } : undefined;
    const response = await this.client.replayFile(session, replay.id, from);
    const status = response.statusCode ?? 0;
    if (status !== 200 && status !== 206) {
      response.resume();
      // 409: still being finalized (its replay_stopped comes later); 404: gone from the agent.
      this.options.log.info({ session_id: session.sessionId, replay_id: replay.id, status }, 'replay archive: the agent did not serve the file');
      return;
    }
    const etag = header(response, 'etag') ?? '';
    const range = status === 206 ? contentRange(header(response, 'content-range')) : undefined;
    const size = range?.total ?? Number(header(response, 'content-length'));
    if (!Number.isSafeInteger(size) || size < 0 || (range !== undefined && range.start !== from?.offset)) {
      response.destroy();
      throw new Error(`the agent's answer has no usable size or range (status ${status})`);
    }
    if (row !== undefined && (row.etag !== etag || row.sizeBytes !== size)) {
      // Another file than the one begun (a replay id the agent reused after losing its own): the
      // copy starts over.
      response.destroy();
      await this.store.remove(session.sessionKey, replay.id);
      return this.copy(session, replay, object, undefined);
    }
    // A 200 to a Range request re-sends the whole file: the chunks already stored are the same bytes.
    const start = range?.start ?? 0;
    const begun =
      row ??
      (await this.store.begin({
        sessionKey: session.sessionKey,
        replayId: replay.id,
        startedAt: replay.startedAt,
        finishedAt: replay.finishedAt,
        object: JSON.stringify(withoutViewLink(object)),
        mimeType: header(response, 'content-type') ?? 'application/octet-stream',
        etag,
        sizeBytes: size,
        chunkBytes: CHUNK_BYTES,
      }));
    if (begun.etag !== etag || begun.sizeBytes !== size) {
      // Another writer began it with another file: leave it to them.
      response.destroy();
      return;
    }
    await this.storeBody(begun, response, start);
    if (await this.store.complete(session.sessionKey, replay.id, this.now())) {
      this.options.log.info({ session_id: session.sessionId, replay_id: replay.id, bytes: size }, 'replay archived');
    }
  }

  /** The response's bytes from `start` (a chunk boundary) into chunks, one at a time. */
  private async storeBody(row: ReplayRow, response: IncomingMessage, start: number): Promise<void> {
    const chunkBytes = row.chunkBytes;
    const buffer = Buffer.allocUnsafe(chunkBytes);
    let filled = 0;
    let chunk = Math.floor(start / chunkBytes);
    let at = start;
    const idleMs = this.client.bodyIdleMs;
    let timer = setTimeout(() => response.destroy(new Error('the file stopped coming')), idleMs);
    const flush = async (): Promise<void> => {
      at += filled;
      // The buffer is reused: both drivers have copied the bytes once the write resolves.
      await this.store.writeChunk(row.sessionKey, row.replayId, chunk, buffer.subarray(0, filled), at);
      chunk++;
      filled = 0;
    };
    try {
      for await (const piece of response as AsyncIterable<Buffer>) {
        clearTimeout(timer);
        let offset = 0;
        while (offset < piece.length) {
          const take = Math.min(piece.length - offset, chunkBytes - filled);
          piece.copy(buffer, filled, offset, offset + take);
          filled += take;
          offset += take;
          if (filled === chunkBytes) await flush();
        }
        if (this.closed) {
          response.destroy();
          return;
        }
        timer = setTimeout(() => response.destroy(new Error('the file stopped coming')), idleMs);
      }
      if (filled > 0) await flush();
    } finally {
      clearTimeout(timer);
    }
    if (at !== row.sizeBytes) throw new Error(`the file ended at byte ${at} of ${row.sizeBytes}`);
  }
}

interface FinishedReplay {
  id: string;
  startedAt: number;
  finishedAt: number;
}

/** A finished replay of the agent's list; undefined for one still recording or being finalized. */
function finishedReplay(item: unknown): FinishedReplay | undefined {
  const replay = item as Partial<AgentReplay> | null;
  if (typeof replay?.replay_id !== 'string' || typeof replay.started_at !== 'string' || typeof replay.finished_at !== 'string') return undefined;
  if (replay.state !== undefined && replay.state !== 'finished') return undefined;
  const startedAt = Date.parse(replay.started_at);
  const finishedAt = Date.parse(replay.finished_at);
  if (!Number.isFinite(startedAt) || !Number.isFinite(finishedAt)) return undefined;
  return { id: replay.replay_id, startedAt, finishedAt };
}

/** The agent's object without the agent's own viewer link (the gateway serves its own). */
function withoutViewLink(object: unknown): unknown {
  const { replay_view_url: _link, ...rest } = object as Record<string, unknown>;
  return rest;
}

function header(response: IncomingMessage, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** `Content-Range: bytes a-b/total`: where the bytes start, and the file's size. */
function contentRange(value: string | undefined): { start: number; total: number } | undefined {
  const match = value === undefined ? null : /^bytes (\d+)-\d+\/(\d+)$/.exec(value);
  return match ? { start: Number(match[1]), total: Number(match[2]) } : undefined;
}
