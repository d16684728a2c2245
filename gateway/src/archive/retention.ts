// Retention of the archive (docs/gateway.md "Retention"), a periodic job: events older than
// --archive-retain-days are deleted (from live sessions too, their counts adjusted); an ended
// session with nothing left inside the window goes entirely, row included; so does every ended
// session of a deleted project, at once (readers stop seeing those when the project is deleted).
// Whole sessions are deleted in chunks of CHUNK_EVENTS, each its own statement, so that neither
// backend holds one transaction for a session of millions of events. Every instance runs the job;
// the deletes are idempotent, so two doing the same work only repeat it. Archived replays go
// with the same cutoff (by their finish), and with their session (docs/gateway.md "Replays").

import type { Logger } from 'pino';
import type { ArchiveStore } from './archive-store.ts';
import type { ReplayStore } from './replay-store.ts';

export const DAY_MS = 86_400_000;
export const DEFAULT_RETENTION_INTERVAL_MS = 10 * 60_000;
/** Seqs per delete statement of a whole session. */
const CHUNK_EVENTS = 10_000;
/** Sessions looked at per round (a round repeats until none is left). */
const SESSIONS_PER_ROUND = 100;

export interface RetentionResult {
  sessionsPurged: number;
  eventsDeleted: number;
  replaysDeleted: number;
}

export class ArchiveRetention {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<RetentionResult> | undefined;
  private again = false;
  private closed = false;

  constructor(
    private readonly store: ArchiveStore,
    private readonly replays: ReplayStore,
    private readonly options: { retainMs: number; intervalMs: number; log: Logger; now?: () => number },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.run(), this.options.intervalMs);
    this.timer.unref();
    // A first pass soon after the start, off the start-up path.
    const first = setTimeout(() => void this.run(), Math.min(5000, this.options.intervalMs));
    first.unref();
  }

  /** Runs a pass now (a deleted project's sessions go at once); one pass at a time, a request during one runs another after it. */
  run(): Promise<RetentionResult> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.pass()
      .catch((err: unknown) => {
        this.options.log.warn({ err }, 'archive retention failed; retrying at the next pass');
        return { sessionsPurged: 0, eventsDeleted: 0, replaysDeleted: 0 };
      })
      .finally(() => {
        this.running = undefined;
        if (this.again && !this.closed) {
          this.again = false;
          void this.run();
        }
      });
    return this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }

  private async pass(): Promise<RetentionResult> {
    const now = (this.options.now ?? Date.now)();
    const cutoffMs = now - this.options.retainMs;
    const result: RetentionResult = { sessionsPurged: 0, eventsDeleted: 0, replaysDeleted: 0 };
    for (;;) {
      if (this.closed) return result;
      const sessions = await this.store.retention.purgeable(cutoffMs, SESSIONS_PER_ROUND);
      if (sessions.length === 0) break;
      for (const sessionKey of sessions) {
        for (;;) {
          if (this.closed) return result;
          const deleted = await this.store.retention.deleteEventsChunk(sessionKey, CHUNK_EVENTS);
          if (deleted === 0) break;
          result.eventsDeleted += deleted;
        }
        // Last, so that an interrupted purge is found again and finished by the next pass.
        await this.store.retention.deleteSessionRow(sessionKey);
        result.sessionsPurged++;
      }
    }
    const cutoffTs = cutoffMs * 1000;
    const trimmed = new Set<number>();
    for (;;) {
      if (this.closed) return result;
      const sessions = (await this.store.retention.withEventsBefore(cutoffTs, SESSIONS_PER_ROUND)).filter((key) => !trimmed.has(key));
      if (sessions.length === 0) break;
      for (const sessionKey of sessions) {
        result.eventsDeleted += await this.store.retention.trimBefore(sessionKey, cutoffTs);
        trimmed.add(sessionKey);
      }
    }
    for (;;) {
      if (this.closed) return result;
      const expired = await this.replays.expired(cutoffMs, SESSIONS_PER_ROUND);
      if (expired.length === 0) break;
      for (const { sessionKey, replayId } of expired) {
        if (this.closed) return result;
        await this.replays.remove(sessionKey, replayId);
        result.replaysDeleted++;
      }
    }
    if (result.eventsDeleted > 0 || result.sessionsPurged > 0 || result.replaysDeleted > 0)
      this.options.log.info({ ...result, cutoff: new Date(cutoffMs).toISOString() }, 'archive retention');
    return result;
  }
}
