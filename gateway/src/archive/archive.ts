// The gateway's telemetry archive (docs/gateway.md): every live session's events, followed from
// its agent and kept in the gateway's database so they stay readable after the agent is gone.
// This wires the parts: the writer (batched inserts), the lease keeper and its followers, the
// retention job, the drain before a DELETE, the reads (history pages and stream plans), and the
// replays' files (replay-archive.ts, docs/gateway.md "Replays").

import type { Logger } from 'pino';
import { FILTER_CATEGORIES } from 'browser-telemetry-agent/events';
import type { ArchiveConfig } from '../config.ts';
import type { Database } from '../storage/database.ts';
import type { BrowserRecord } from '../storage/store.ts';
import { AgentClient } from './agent-client.ts';
import { ArchiveHistory } from './archive-history.ts';
import { ArchiveStore } from './archive-store.ts';
import { ArchiveWriter, type QueuedEvent } from './archive-writer.ts';
import { archivedEvent, MalformedEnvelope } from './event-row.ts';
import { LeaseKeeper } from './lease-keeper.ts';
import { ReplayArchive } from './replay-archive.ts';
import { ReplayStore } from './replay-store.ts';
import { ArchiveRetention, DAY_MS, DEFAULT_RETENTION_INTERVAL_MS } from './retention.ts';

/** Transactions the archive writes at once on PostgreSQL (the pool has 10 connections). */
const POSTGRES_WRITE_LANES = 4;
/** The drain's filter: every category by name (docs/events.md "Filters": snapshots are opt-in). */
const EVERY_CATEGORY = { category: FILTER_CATEGORIES };
/** Events per history page the drain asks for (the agent's largest page). */
const DRAIN_PAGE_EVENTS = 1000;

export interface ArchiveOptions extends ArchiveConfig {
  db: Database;
  log: Logger;
  /** A follower's stream without a byte for this long is cut (3 agent keepalive periods). */
  streamSilenceMs: number;
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  retentionIntervalMs?: number;
  /** Benchmarks: every committed batch, with its commit time. */
  onCommitted?: (rows: readonly QueuedEvent[], committedAt: number) => void;
}

// The proxy's SessionEndHooks (http/browser-proxy.ts), which it meets structurally: the archive
// sits below the HTTP layer and does not import it.
export class Archive {
  readonly store: ArchiveStore;
  readonly writer: ArchiveWriter;
  readonly keeper: LeaseKeeper;
  readonly retention: ArchiveRetention;
  readonly history: ArchiveHistory;
  /** The archived replays (docs/gateway.md "Replays"). */
  readonly replayStore: ReplayStore;
  readonly replays: ReplayArchive;
  private readonly client: AgentClient;

  constructor(private readonly options: ArchiveOptions) {
    this.store = new ArchiveStore(options.db);
    this.client = new AgentClient({ connectMs: options.connectTimeoutMs, responseMs: options.responseTimeoutMs, streamHeadMs: options.streamSilenceMs });
    // PostgreSQL commits several sessions' batches at once, on as many pooled connections;
    // SQLite has one writer whatever the lanes.
    this.writer = new ArchiveWriter(this.store, {
      log: options.log,
      lanes: options.db.dialect === 'postgres' ? POSTGRES_WRITE_LANES : 1,
      onCommitted: options.onCommitted,
    });
    this.replayStore = new ReplayStore(options.db);
    this.replays = new ReplayArchive(this.replayStore, this.client, { log: options.log, retainMs: options.retainDays * DAY_MS });
    this.keeper = new LeaseKeeper({
      store: this.store,
      writer: this.writer,
      client: this.client,
      log: options.log,
      leaseMs: options.leaseMs,
      silenceMs: options.silenceMs,
      streamSilenceMs: options.streamSilenceMs,
      follow: options.follow,
      onReplays: (session) => void this.replays.sync(session),
    });
    this.retention = new ArchiveRetention(this.store, this.replayStore, {
      retainMs: options.retainDays * DAY_MS,
      intervalMs: options.retentionIntervalMs ?? DEFAULT_RETENTION_INTERVAL_MS,
      log: options.log,
    });
    this.history = new ArchiveHistory(this.store, this.client);
  }

  start(): void {
    this.keeper.start();
    this.retention.start();
  }

  /**
   * Before a DELETE reaches the agent: what the agent has past the archived seq is read from its
   * history and archived now, whoever follows the session (this instance, another one, or none
   * at the moment: a dead holder whose lease has not expired yet).
   */
  async beforeDelete(browser: BrowserRecord): Promise<void> {
    // What this instance's follower queued is committed first, so the read starts after it.
    await this.writer.flush().catch(() => undefined);
    const session = await this.store.sessionByKey(browser.sessionKey);
    if (!session) return;
    let offset = session.archivedSeq + 1;
    for (;;) {
      // Every category named: a read that names none leaves out the opt-in ones (DOM snapshots).
      const page = await this.client.historyPage(browser, { offset, limit: DRAIN_PAGE_EVENTS, order: 'asc', filters: EVERY_CATEGORY });
      const rows: QueuedEvent[] = [];
      for (const item of page.items) {
        try {
          rows.push({ sessionKey: browser.sessionKey, event: archivedEvent(item.json) });
        } catch (err) {
          if (!(err instanceof MalformedEnvelope)) throw err;
        }
      }
      if (rows.length > 0) await this.store.inserts.insert(rows);
      if (!page.hasMore || page.items.length === 0) return;
      offset = page.nextOffset;
    }
  }

  /**
   * After the agent ended the session: the follower reads the stream's tail, wherever it runs,
   * and the session's finished replays (the one the DELETE stopped included) are archived before
   * the DELETE is answered, so that a VM removed right after it loses none (docs/gateway.md
   * "Replays").
   */
  async afterDelete(browser: BrowserRecord): Promise<void> {
    await Promise.all([this.keeper.finishSession(browser.sessionKey), this.replays.sync(browser)]);
  }

  async close(): Promise<void> {
    await this.replays.close();
    await this.retention.close();
    await this.keeper.close();
    this.client.close();
  }
}
