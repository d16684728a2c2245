// Which sessions this gateway instance follows (docs/gateway.md "Leases"). Every live session has
// at most one follower among all instances sharing the database: the one holding its lease (a
// holder id and an expiry in the session's row). Every tick (a third of the lease) the keeper
// extends the leases it holds, takes those nobody holds (never taken, released, or expired: the
// holder died), starts a follower for each, and stops followers whose lease was lost. An
// instance killed with -9 stops renewing: its sessions are taken over within one lease and one
// tick (15 s + 5 s by default). A closing instance releases its leases for the others at once.
//
// The keeper also decides when a session whose agent vanished without a DELETE has ended: when
// its follower has not heard from the agent (any answer counts, even a refusal) for the silence
// limit. The time of the last answer is kept in the database, so it survives a takeover.

import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { ArchiveConfig } from '../config.ts';
import type { AgentClient } from './agent-client.ts';
import type { ArchiveStore, LeasedSession } from './archive-store.ts';
import type { ArchiveWriter } from './archive-writer.ts';
import { Follower, type FollowedSession } from './follower.ts';

/** Sessions claimed per tick at most (the rest wait for the next tick). */
const CLAIM_PER_TICK = 200;
/** How long a follower of an ended session may read its stream's tail. */
export const FINISH_TIMEOUT_MS = 5000;

/** What the keeper works with; `follow`, `silenceMs` and `leaseMs` are the archive's settings (ArchiveConfig). */
export interface LeaseKeeperOptions extends Pick<ArchiveConfig, 'follow' | 'silenceMs' | 'leaseMs'> {
  store: ArchiveStore;
  writer: ArchiveWriter;
  client: AgentClient;
  log: Logger;
  /** An agent stream without a byte for this long is cut and reopened. */
  streamSilenceMs: number;
  /** A followed session's replays may need archiving (replay-archive.ts): following began, or a replay stopped. */
  onReplays?: (session: FollowedSession) => void;
}

interface Followed {
  follower: Follower;
  createdAt: number;
  /** last_heard_at of the row when claimed. */
  heardBefore: number | null;
  /** lastHeardAt already written to the database. */
  heardWritten: number | undefined;
  finishing: Promise<void> | undefined;
}

export class LeaseKeeper {
  /** This instance's holder id (new at every start). */
  readonly instanceId = `gw-${randomBytes(9).toString('base64url')}`;
  private readonly followed = new Map<number, Followed>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private again = false;
  private lastRenewal = 0;
  private closed = false;

  constructor(private readonly options: LeaseKeeperOptions) {}

  start(): void {
    if (!this.options.follow) return;
    void this.tick();
    this.timer = setInterval(() => void this.tick(), Math.max(10, Math.floor(this.options.leaseMs / 3)));
    this.timer.unref();
  }

  /** Sessions followed here now. */
  get sessionKeys(): number[] {
    return [...this.followed.keys()];
  }

  follower(sessionKey: number): Follower | undefined {
    return this.followed.get(sessionKey)?.follower;
  }

  /**
   * One round: renew, end silent sessions, claim free ones. Never runs twice at once; asked
   * during a round (a session just registered), it runs again after it.
   */
  tick(): Promise<void> {
    if (this.ticking) {
      this.again = true;
      return this.ticking;
    }
    this.ticking = this.round().finally(() => {
      this.ticking = undefined;
      if (this.again && !this.closed) {
        this.again = false;
        void this.tick();
      }
    });
    return this.ticking;
  }

  /**
   * The session has ended (DELETE through this instance): the follower here, if any, reads the
   * stream's tail, its events are committed and the lease is released. Elsewhere: waits until the
   * holder has released it (or its lease has expired), at most `timeoutMs`.
   */
  async finishSession(sessionKey: number, timeoutMs = FINISH_TIMEOUT_MS): Promise<void> {
    const entry = this.followed.get(sessionKey);
    if (entry) {
      await this.finish(sessionKey, entry, timeoutMs);
      return;
    }
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const holder = await this.options.store.leases.leaseHolder(sessionKey).catch(() => null);
      if (holder === null || holder === this.instanceId) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Stops every follower, commits what they queued and releases the leases. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking?.catch(() => undefined);
    for (const { follower } of this.followed.values()) follower.stop();
    this.followed.clear();
    await this.options.writer.close();
    if (this.options.follow) {
      await this.options.store.leases
        .release(this.instanceId)
        .catch((err: unknown) => this.options.log.warn({ err }, 'archive: could not release the follow leases (they expire)'));
    }
  }

  private async round(): Promise<void> {
    if (this.closed || !this.options.follow) return;
    const { store, log, leaseMs } = this.options;
    const now = Date.now();
    try {
      const held = await store.leases.renew(this.instanceId, now + leaseMs);
      this.lastRenewal = now;
      const heldKeys = new Map(held.map((h) => [h.sessionKey, h.ended]));
      for (const [sessionKey, entry] of this.followed) {
        if (!heldKeys.has(sessionKey)) {
          log.warn({ session_id: entry.follower.session.sessionId }, 'archive: lease lost to another instance; stopping the follower');
          entry.follower.stop();
          this.followed.delete(sessionKey);
        } else if (heldKeys.get(sessionKey)) {
          // Ended elsewhere (a DELETE through another instance): read the tail, then let go.
          void this.finish(sessionKey, entry, FINISH_TIMEOUT_MS);
        }
      }
      // Leases held without a follower here (one that stopped on its own): let them go.
      for (const [sessionKey] of heldKeys) {
        if (!this.followed.has(sessionKey)) await store.leases.release(this.instanceId, sessionKey);
      }
    } catch (err) {
      log.warn({ err }, 'archive: could not renew the follow leases');
      // Past its lease nothing here is ours any more: another instance may follow these now.
      if (now - this.lastRenewal > leaseMs) {
        for (const { follower } of this.followed.values()) follower.stop();
        this.followed.clear();
      }
      return;
    }
    await this.recordHeard().catch((err: unknown) => log.warn({ err }, 'archive: could not record agent answers'));
    await this.endSilent(now).catch((err: unknown) => log.warn({ err }, 'archive: could not end silent sessions'));
    if (this.closed) return;
    try {
      const claimed = await store.leases.claim(this.instanceId, now, now + leaseMs, CLAIM_PER_TICK);
      for (const session of claimed) this.startFollowing(session);
    } catch (err) {
      log.warn({ err }, 'archive: could not claim sessions to follow');
    }
  }

  private startFollowing(session: LeasedSession): void {
    if (this.closed || this.followed.has(session.sessionKey)) return;
    const follower = new Follower(session, {
      client: this.options.client,
      writer: this.options.writer,
      store: this.options.store,
      log: this.options.log,
      streamSilenceMs: this.options.streamSilenceMs,
      onGone: (gone) => void this.agentEnded(gone),
      onReplayStopped: this.options.onReplays,
    });
    this.followed.set(session.sessionKey, {
      follower,
      createdAt: session.createdAt,
      heardBefore: session.lastHeardAt,
      heardWritten: undefined,
      finishing: undefined,
    });
    this.options.log.info({ session_id: session.sessionId, after_seq: session.archivedSeq }, 'archive: following');
    follower.start();
    // What a restarted gateway missed: replays that stopped while nobody followed.
    this.options.onReplays?.(session);
  }

  private async recordHeard(): Promise<void> {
    const keys: number[] = [];
    let newest = 0;
    for (const [sessionKey, entry] of this.followed) {
      const heard = entry.follower.lastHeardAt;
      if (heard !== undefined && heard !== entry.heardWritten) {
        keys.push(sessionKey);
        entry.heardWritten = heard;
        newest = Math.max(newest, heard);
      }
    }
    if (keys.length > 0) await this.options.store.leases.heard(this.instanceId, keys, newest);
  }

  /** Ends the sessions whose agents have not answered for the silence limit. */
  private async endSilent(now: number): Promise<void> {
    for (const [sessionKey, entry] of [...this.followed]) {
      const { follower } = entry;
      if (follower.isStreaming || entry.finishing) continue;
      // Only a follower that tried and failed to reach the agent since it took the lease says
      // anything about the agent (one that just started has not tried yet).
      if (follower.unreachableTries === 0) continue;
      const lastHeard = Math.max(follower.lastHeardAt ?? 0, entry.heardBefore ?? 0, entry.createdAt);
      if (now - lastHeard < this.options.silenceMs) continue;
      this.options.log.warn(
        { session_id: follower.session.sessionId, silent_ms: now - lastHeard },
        'archive: the agent has been silent too long; the session is ended',
      );
      follower.stop();
      this.followed.delete(sessionKey);
      await this.options.store.markEnded(sessionKey, 'agent_silent');
      await this.options.store.leases.release(this.instanceId, sessionKey);
    }
  }

  /** The agent answered 404: the session ended there (a DELETE sent to it directly, or through us). */
  private async agentEnded(follower: Follower): Promise<void> {
    const { sessionKey } = follower.session;
    if (this.followed.get(sessionKey)?.follower === follower) this.followed.delete(sessionKey);
    try {
      await this.options.writer.flush();
      await this.options.store.markEnded(sessionKey, 'agent_ended');
      await this.options.store.leases.release(this.instanceId, sessionKey);
    } catch (err) {
      this.options.log.warn({ err, session_id: follower.session.sessionId }, 'archive: could not record the end of a session (the next holder will)');
    }
  }

  private finish(sessionKey: number, entry: Followed, timeoutMs: number): Promise<void> {
    entry.finishing ??= (async () => {
      await entry.follower.finish(timeoutMs);
      if (this.followed.get(sessionKey) === entry) this.followed.delete(sessionKey);
      const session_id = entry.follower.session.sessionId;
      await this.options.writer
        .flush()
        .catch((err: unknown) => this.options.log.warn({ err, session_id }, 'archive: could not commit a finished session (writes are retried)'));
      await this.options.store.leases
        .release(this.instanceId, sessionKey)
        .catch((err: unknown) => this.options.log.warn({ err, session_id }, 'archive: could not release a lease (it expires)'));
    })();
    return entry.finishing;
  }
}
