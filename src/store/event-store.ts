// The durable event store (docs/storage.md): every admitted event, kept on disk behind the RAM
// ring, so that seq survives restarts and history outlives the ring.
//
// One SQLite database per session id in the data directory (WAL mode, synchronous=NORMAL, through
// src/sqlite.ts): `events` has seq as its rowid, so a range of seqs is one B-tree walk, plus the
// columns the filters use and the envelope's JSON as the stream sends it. Two indexes (type and
// target_id, each with seq): each costs every insert. There is none on ts: events are admitted in
// time order (give or take the clocks of different targets), so a time bound is found by bisecting
// seq, then applied exactly (docs/storage.md "Measured"). Events reach
// the disk in batches, off the CDP message path: the log hands each admitted event to append(),
// which only queues; a timer writes the queue in one transaction at most FLUSH_INTERVAL_MS later.
// A crash (kill -9) loses what was queued and not yet written: at most that interval's events.
//
// seq never repeats for a session: before the log hands out a seq beyond `reserved_until` (kept
// in the database), the store moves that mark SEQ_RESERVATION further, synchronously. A restart
// continues after the mark, so seqs handed out but lost in a crash are never reused.

import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { StartScope } from '../cleanup-stack.ts';
import { isProcessAlive } from '../process-alive.ts';
import { filterSql, type EventFilter, type EventMeta } from '../stream/event-query.ts';
import type { LogArchive } from '../stream/event-log.ts';
import type { HistoryQuery, HistoryStore, StoredEnvelope } from '../stream/history.ts';
import { EVENT_TYPE_CATEGORY } from '../../injected/schema.ts';
import { openSqlite, sqliteErrorCode, type Sqlite, type SqliteStatement, type SqlParam } from '../sqlite.ts';

export const FLUSH_INTERVAL_MS = 100;
/** How far ahead of the newest seq the reservation mark is moved each time. */
export const SEQ_RESERVATION = 10_000;
/** Retention runs at most this often (and after every flush that may have crossed the limit). */
const RETENTION_INTERVAL_MS = 30_000;
/** How far apart in time two targets' events may be admitted out of order (generous). */
const TS_SKEW_US = 10_000_000;
/** Rows one readFrames() looks at, at most. */
const READ_ROWS = 2000;
/** After a failed write, persisting is retried this long later (a full disk may free up). */
const RETRY_AFTER_FAILURE_MS = 5_000;

export interface EventStoreOptions {
  dataDir: string;
  sessionId: string;
  /** Bytes of events kept across every session in the data directory (oldest first). */
  retainBytes: number;
  /** Events older than this are removed. */
  retainMs: number;
  /** One line per state change (persisting stopped, resumed, a damaged file set aside). */
  log?: (level: 'info' | 'warn' | 'error', fields: Record<string, unknown>, message: string) => void;
  /** Overrides for tests. */
  flushIntervalMs?: number;
  now?: () => number;
  /** SQLite's max_page_count: a database that may not grow further fails writes with SQLITE_FULL, as a full disk does. */
  maxPageCount?: number;
}

interface Pending {
  seq: number;
  meta: EventMeta;
  /** The envelope's JSON bytes; decoded when written. */
  envelope: Buffer;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY,
  ts INTEGER NOT NULL,
  type TEXT NOT NULL,
  category TEXT NOT NULL,
  target_id TEXT,
  nav_seq INTEGER,
  envelope TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_type ON events (type, seq);
CREATE INDEX IF NOT EXISTS events_target ON events (target_id, seq);
`;

/** File name of a session's database: the id is [A-Za-z0-9_-], safe in a file name. */
export function sessionFileName(sessionId: string): string {
  return `session-${sessionId}.sqlite`;
}

/**
 * Bytes the event stores of every session occupy in `dataDir` (databases, WAL and shm files): the
 * replays' share of `--retain-bytes` is what these leave (docs/replay.md "Retention").
 */
export function storeBytesIn(dataDir: string): number {
  let names: string[];
  try {
    names = readdirSync(dataDir);
  } catch {
    return 0;
  }
  let bytes = 0;
  for (const name of names) {
    if (!/^session-[A-Za-z0-9_-]+\.sqlite(-wal|-shm)?$/.test(name)) continue;
    try {
      bytes += statSync(join(dataDir, name)).size;
    } catch {
      // Removed meanwhile.
    }
  }
  return bytes;
}

const INSERT_ROWS = 'INSERT OR IGNORE INTO events (seq, ts, type, category, target_id, nav_seq, envelope) VALUES ';
const ROW_VALUES = '(?, ?, ?, ?, ?, ?, ?)';
const ROW_COLUMNS = 7;
/**
 * Rows a multi-row INSERT writes: a batch goes in statements of this many rows, about 0.9 µs a
 * row cheaper than one statement a row (docs/storage.md).
 */
const ROWS_PER_INSERT = 25;

/** The columns of one event's row, at `offset` of `args` (INSERT_ROWS' order). */
function setRow(args: unknown[], offset: number, { seq, meta, envelope }: Pending): void {
  args[offset] = seq;
  args[offset + 1] = meta.ts;
  args[offset + 2] = meta.type;
  args[offset + 3] = EVENT_TYPE_CATEGORY[meta.type] ?? 'monitor';
  args[offset + 4] = meta.targetId ?? null;
  args[offset + 5] = meta.navSeq ?? null;
  args[offset + 6] = envelope.toString('utf8');
}

export type { HistoryQuery, StoredEnvelope } from '../stream/history.ts';

export class EventStore implements LogArchive, HistoryStore {
  /** readFrames' statements by SQL, prepared once. */
  private readonly frameStatements = new Map<string, SqliteStatement>();
  /** Mean frame size of recent readFrames runs: its LIMIT asks for about one run of rows. */
  private frameBytes = 256;
  readonly path: string;
  /** Identifies this session's log on this data directory; new when the directory is new. */
  readonly logId: string;
  private db: Sqlite;
  private pending: Pending[] = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private retentionTimer: NodeJS.Timeout | undefined;
  private reservedUntil: number;
  private persisting = true;
  private retryAt = 0;
  private closed = false;
  private lastRetention = 0;
  /** Counters for /metrics. */
  persistErrors = 0;
  droppedEvents = 0;
  /** Seconds from admission to write, of the last flushed batch's oldest event. */
  lastPersistLagMs = 0;
  private readonly flushIntervalMs: number;
  private readonly now: () => number;
  /** One row, and ROWS_PER_INSERT rows; oneRowArgs and rowArgs are their bound values, reused. */
  private readonly insert: SqliteStatement;
  private readonly insertMany: SqliteStatement;
  private readonly oneRowArgs = new Array<unknown>(ROW_COLUMNS);
  private readonly rowArgs = new Array<unknown>(ROW_COLUMNS * ROWS_PER_INSERT);
  private readonly reserve: SqliteStatement;
  /** When the oldest queued event was admitted (for the persist lag); read once per batch. */
  private firstAdmittedAt = 0;
  /** MIN(seq) on disk, kept current by writes and retention (undefined: nothing on disk). */
  private oldestOnDisk: number | undefined;
  /** Rows on disk: counted once at open, then kept by the writes' and deletes' changes (COUNT(*) reads every row). */
  private rowCount: number;
  private readonly pageSize: number;
  private readonly pageCount: SqliteStatement;
  private readonly freelistCount: SqliteStatement;
  /** The file gives freed pages back (auto_vacuum=INCREMENTAL; databases created before it do not). */
  private readonly shrinks: boolean;
  private readonly walPath: string;

  private runningMarked = false;
  /** The newest seq on disk when the store was opened (0 when empty). */
  readonly restoredLatestSeq: number;
  /** Where the log must continue: after every seq ever handed out for this session. */
  readonly resumeAfterSeq: number;

  constructor(private readonly options: EventStoreOptions) {
    this.flushIntervalMs = options.flushIntervalMs ?? FLUSH_INTERVAL_MS;
    this.now = options.now ?? Date.now;
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    this.path = join(options.dataDir, sessionFileName(options.sessionId));
    this.walPath = `${this.path}-wal`;
    this.db = this.openChecked();
    this.shrinks = this.db.pragma('auto_vacuum', { simple: true }) === 2;
    if (options.maxPageCount !== undefined) this.db.pragma(`max_page_count = ${Math.floor(options.maxPageCount)}`);
    // OR IGNORE: seqs never repeat (the reservation); were one to, the batch is kept, not failed. Measured cheaper
    // than OR REPLACE (4.9 against 5.5 µs a row with both indexes, docs/storage.md).
    this.insert = this.db.prepare(INSERT_ROWS + ROW_VALUES);
    this.insertMany = this.db.prepare(INSERT_ROWS + new Array<string>(ROWS_PER_INSERT).fill(ROW_VALUES).join(', '));
    this.reserve = this.db.prepare("INSERT INTO meta (key, value) VALUES ('reserved_until', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    const getMeta = this.db.prepare('SELECT value FROM meta WHERE key = ?');
    const meta = (key: string) => (getMeta.get(key) as { value: string } | undefined)?.value;
    let logId = meta('log_id');
    if (logId === undefined) {
      logId = randomBytes(9).toString('base64url');
      this.db.prepare("INSERT INTO meta (key, value) VALUES ('log_id', ?)").run(logId);
    }
    this.logId = logId;
    this.restoredLatestSeq = (this.db.prepare('SELECT MAX(seq) AS seq FROM events').get() as { seq: number | null }).seq ?? 0;
    const reserved = Number(meta('reserved_until') ?? 0);
    this.resumeAfterSeq = Math.max(reserved, this.restoredLatestSeq);
    this.reservedUntil = this.resumeAfterSeq;
    this.rowCount = (this.db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n;
    this.pageSize = this.db.pragma('page_size', { simple: true }) as number;
    this.pageCount = this.db.prepare('PRAGMA page_count').pluck();
    this.freelistCount = this.db.prepare('PRAGMA freelist_count').pluck();
    // The WAL counts against the budget (docs/storage.md "Retention"): checkpoint well before it
    // reaches an eighth of it, and cut it back to that size after each checkpoint.
    const walBudgetPages = Math.max(16, Math.min(1000, Math.floor(options.retainBytes / 8 / this.pageSize)));
    this.db.pragma(`wal_autocheckpoint = ${walBudgetPages}`);
    this.db.pragma(`journal_size_limit = ${walBudgetPages * this.pageSize}`);
    this.refreshOldest();
    this.protectFiles();
    this.scheduleRetention(0);
  }

  private refreshOldest(): void {
    const row = this.db.prepare('SELECT MIN(seq) AS seq FROM events').get() as { seq: number | null };
    this.oldestOnDisk = row.seq ?? undefined;
  }

  get isPersisting(): boolean {
    return this.persisting;
  }

  get pendingCount(): number {
    return this.pending.length;
  }

  /** Events and bytes on disk (bytes: the database file and its WAL, docs/storage.md "Retention"), for /metrics. */
  stats(): { events: number; bytes: number; oldestSeq: number } {
    return { events: this.rowCount, bytes: this.usedBytes(), oldestSeq: this.oldestOnDisk ?? 0 };
  }

  /**
   * Before the log hands out `seq`: keep the reservation ahead of it (a synchronous write once
   * every SEQ_RESERVATION events; a failure is counted and the live stream goes on).
   */
  reserveThrough(seq: number): void {
    if (seq <= this.reservedUntil || this.closed) return;
    const next = seq + SEQ_RESERVATION;
    try {
      this.reserve.run(String(next));
      this.reservedUntil = next;
    } catch (err) {
      this.failed(err as Error);
      // Without the mark on disk a restart could reuse seqs; keep trying at the next event.
    }
  }

  /** Queue an admitted event (called on the producer's path: no I/O here). */
  append(seq: number, meta: EventMeta, envelope: Buffer): void {
    if (this.closed) return;
    if (!this.persisting && this.now() < this.retryAt) {
      this.droppedEvents++;
      return;
    }
    this.pending.push({ seq, meta, envelope });
    if (this.pending.length === 1) this.firstAdmittedAt = this.now();
    if (this.flushTimer === undefined) {
      this.flushTimer = setTimeout(this.onFlushTimer, this.flushIntervalMs);
      this.flushTimer.unref();
    }
  }

  private readonly onFlushTimer = (): void => {
    this.flushTimer = undefined;
    this.flush();
  };

  /**
   * Write everything queued, in one transaction; then, when `retain`, enforce retention if due.
   * Reads flush without it: a read must not remove the rows its reader was just told about (the
   * stream's X-First-Seq); retention runs at the next write's flush or its own timer.
   */
  flush(retain = true): void {
    if (this.flushTimer !== undefined) {
      clearTimeout(this.flushTimer);
      this.flushTimer = undefined;
    }
    const batch = this.pending;
    if (batch.length === 0 || this.closed) return;
    this.pending = [];
    const firstAdmitted = this.firstAdmittedAt;
    try {
      this.writeBatch(batch);
      this.oldestOnDisk ??= batch[0]!.seq;
      this.lastPersistLagMs = this.now() - firstAdmitted;
      if (!this.persisting) {
        this.persisting = true;
        this.options.log?.('info', { dropped_events: this.droppedEvents }, 'monitor_persist_resumed');
      }
    } catch (err) {
      this.droppedEvents += batch.length;
      this.failed(err as Error);
      return;
    }
    if (retain && (this.now() - this.lastRetention >= RETENTION_INTERVAL_MS || this.usedBytes() > this.options.retainBytes)) this.enforceRetention();
  }

  /** The batch in statements of ROWS_PER_INSERT rows, the rest one row each; one transaction. */
  private readonly writeBatch = (batch: Pending[]): void => {
    this.rowCount += this.db.transaction(() => {
      const args = this.rowArgs;
      let written = 0;
      let i = 0;
      for (; i + ROWS_PER_INSERT <= batch.length; i += ROWS_PER_INSERT) {
        for (let k = 0; k < ROWS_PER_INSERT; k++) setRow(args, k * ROW_COLUMNS, batch[i + k]!);
        written += Number(this.insertMany.run(...args).changes);
      }
      const one = this.oneRowArgs;
      for (; i < batch.length; i++) {
        setRow(one, 0, batch[i]!);
        written += Number(this.insert.run(...one).changes);
      }
      return written;
    })();
  };

  private failed(err: Error): void {
    this.persistErrors++;
    this.retryAt = this.now() + RETRY_AFTER_FAILURE_MS;
    if (this.persisting) {
      this.persisting = false;
      this.options.log?.('error', { err: err.message, code: sqliteErrorCode(err) }, 'monitor_persist_failed');
    }
  }

  /**
   * The SSE frames (docs/events.md) of the stored events with seq in [from, to] (matching
   * `filter`), oldest first, joined by SQLite into one run of at most `maxBytes` (a larger frame
   * alone), as bytes outside V8's heap; with the run's first seq and the seq to continue from. A
   * catch-up reader's run thus costs V8 one object, not a row object and a string per event: with
   * rows, one burst of 300 readers allocated about 4 GB in V8's heap, enough to grow its young
   * generation for good (docs/operations.md "Catch-up readers under load").
   */
  readFrames(from: number, to: number, maxBytes: number, filter?: EventFilter): { bytes: Uint8Array | undefined; first: number | undefined; next: number } {
    this.flush(false);
    const where = ['seq >= ?', 'seq <= ?'];
    const params: unknown[] = [from, to];
    addFilterTo(filter, where, params);
    const sql = `WITH limited AS (
        SELECT seq, 'id: ' || seq || char(10) || 'data: ' || envelope || char(10) || char(10) AS frame
        FROM events WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ?),
      totals AS (SELECT seq, frame, SUM(octet_length(frame)) OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING) AS total FROM limited)
      SELECT CAST(group_concat(frame, '' ORDER BY seq) AS BLOB) AS run, MIN(seq) AS first, MAX(seq) AS last, COUNT(*) AS n,
        (SELECT COUNT(*) FROM limited) AS seen
      FROM totals WHERE total <= ? OR total = octet_length(frame)`;
    let statement = this.frameStatements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      if (this.frameStatements.size < 32) this.frameStatements.set(sql, statement);
    }
    // About one run of rows, from the mean frame of recent runs.
    const limit = Math.min(READ_ROWS, Math.ceil(maxBytes / this.frameBytes) + 16);
    const row = statement.get(...(params as SqlParam[]), limit, maxBytes) as {
      run: Uint8Array | null;
      first: number | null;
      last: number | null;
      n: number;
      seen: number;
    };
    if (row.run === null || row.first === null || row.last === null) return { bytes: undefined, first: undefined, next: to + 1 };
    this.frameBytes = Math.max(32, Math.round((this.frameBytes * 3 + row.run.length / row.n) / 4));
    const cut = row.n < row.seen || row.seen === limit;
    return { bytes: row.run, first: row.first, next: cut ? row.last + 1 : to + 1 };
  }

  /** Oldest seq retained (on disk, or queued for it); undefined when there is none. */
  oldestRetainedSeq(): number | undefined {
    if (this.oldestOnDisk === undefined) return this.pending[0]?.seq;
    return this.oldestOnDisk;
  }

  /**
   * The first seq whose event is at or after `ts` (Unix µs), by bisection over seq: ts grows with
   * seq but for small skews between targets' clocks, which TS_SKEW_US covers. Infinity when none.
   */
  private firstSeqAtOrAfter(ts: number): number {
    const probe = this.db.prepare('SELECT seq, ts FROM events WHERE seq >= ? ORDER BY seq LIMIT 1');
    // Two subqueries: SQLite reads MIN and MAX of the rowid off the B-tree's ends only when each is alone.
    const bounds = this.db.prepare('SELECT (SELECT MIN(seq) FROM events) AS lo, (SELECT MAX(seq) FROM events) AS hi').get() as {
      lo: number | null;
      hi: number | null;
    };
    if (bounds.lo === null || bounds.hi === null) return Infinity;
    let lo = bounds.lo;
    let hi = bounds.hi + 1;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const row = probe.get(mid) as { seq: number; ts: number } | undefined;
      if (row === undefined || row.ts >= ts) hi = mid;
      else lo = row.seq + 1;
    }
    return lo;
  }

  /** One page of the history read (docs/events.md "History"). */
  query(query: HistoryQuery): StoredEnvelope[] {
    this.flush(false);
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.fromSeq !== undefined) {
      where.push(query.order === 'asc' ? 'seq >= ?' : 'seq <= ?');
      params.push(query.fromSeq);
    }
    // Narrow by seq first (an index walk instead of a scan), then bound by ts exactly below.
    if (query.sinceTs !== undefined && query.order === 'asc') {
      where.push('seq >= ?');
      params.push(this.firstSeqAtOrAfter(query.sinceTs - TS_SKEW_US));
    }
    if (query.untilTs !== undefined && query.order === 'desc') {
      where.push('seq < ?');
      params.push(this.firstSeqAtOrAfter(query.untilTs + TS_SKEW_US));
    }
    addFilterTo(query.filter, where, params, query.sinceTs, query.untilTs);
    const sql = `SELECT seq, envelope FROM events ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq ${query.order === 'asc' ? 'ASC' : 'DESC'} LIMIT ?`;
    params.push(query.limit);
    return this.db
      .prepare(sql)
      .all(...(params as SqlParam[]))
      .map((row: { seq: number; envelope: string }) => ({ seq: row.seq, json: row.envelope }));
  }

  /** Remove what is past the age or size limit, oldest first, in every session of the directory. */
  enforceRetention(): void {
    this.lastRetention = this.now();
    try {
      // Age: only the rows before the first one past the cutoff (by bisection over seq, with the
      // clocks' skew) are read, not the whole table: the table has no index on ts.
      const cutoffTs = (this.now() - this.options.retainMs) * 1000;
      const bound = this.firstSeqAtOrAfter(cutoffTs + TS_SKEW_US);
      if (bound !== Infinity) this.rowCount -= Number(this.db.prepare('DELETE FROM events WHERE seq < ? AND ts < ?').run(bound, cutoffTs).changes);
      this.removeOldSessions();
      // Size: delete the oldest events of this session in chunks until under the limit. Other
      // sessions' files were already dropped oldest first by removeOldSessions().
      const deleteOldest = this.db.prepare('DELETE FROM events WHERE seq IN (SELECT seq FROM events ORDER BY seq LIMIT ?)');
      this.compact();
      let guard = 0;
      for (let used = this.usedBytes(); used > this.options.retainBytes && guard++ < 100; used = this.usedBytes()) {
        const count = this.rowCount;
        if (count <= 0) break;
        // The share of rows that is over the limit, and a little more: pages free in steps.
        const excess = Math.min(count, Math.ceil((count * (used - this.options.retainBytes)) / used) + Math.ceil(count / 100));
        this.rowCount -= Number(deleteOldest.run(excess).changes);
        this.compact();
      }
      this.refreshOldest();
    } catch (err) {
      this.failed(err as Error);
    }
  }

  /** Other sessions' files: drop those entirely older than the age limit, then oldest first by size. */
  private removeOldSessions(): void {
    const others = readdirSync(this.options.dataDir)
      .filter((name) => /^session-[A-Za-z0-9_-]+\.sqlite$/.test(name) && join(this.options.dataDir, name) !== this.path)
      .map((name) => {
        const path = join(this.options.dataDir, name);
        return { path, mtimeMs: statSync(path).mtimeMs, size: fileSet(path).reduce((sum, f) => sum + (existsSync(f) ? statSync(f).size : 0), 0) };
      })
      .sort((a, b) => a.mtimeMs - b.mtimeMs);
    const cutoff = this.now() - this.options.retainMs;
    let total = this.usedBytes() + others.reduce((sum, o) => sum + o.size, 0);
    for (const other of others) {
      if (other.mtimeMs >= cutoff && total <= this.options.retainBytes) continue;
      for (const file of fileSet(other.path)) rmSync(file, { force: true });
      total -= other.size;
    }
  }

  /**
   * Bytes the store occupies on disk: the database file and its WAL. A database created before
   * auto_vacuum keeps freed pages in its file for reuse; those are not counted.
   */
  private usedBytes(): number {
    const pages = Number(this.pageCount.get() ?? 0) - (this.shrinks ? 0 : Number(this.freelistCount.get() ?? 0));
    let wal = 0;
    try {
      wal = statSync(this.walPath).size;
    } catch {
      // No WAL file (yet).
    }
    return pages * this.pageSize + wal;
  }

  /** Give freed pages back to the file system and empty the WAL into the database. */
  private compact(): void {
    if (this.shrinks) this.db.pragma('incremental_vacuum');
    this.db.pragma('wal_checkpoint(TRUNCATE)');
  }

  private scheduleRetention(delayMs: number): void {
    this.retentionTimer = setTimeout(() => {
      this.enforceRetention();
      this.scheduleRetention(RETENTION_INTERVAL_MS);
    }, delayMs);
    this.retentionTimer.unref();
  }

  /** Flush and close. */
  /**
   * Mark this session's file as in use by process `pid` until close() (docs/events.md "Failure
   * signals"). Returns the previous mark when one is left: the agent that set it ended without
   * closing the store (killed, crashed, the machine lost power), unless it is still running.
   */
  markRunning(pid: number, isAlive: (pid: number) => boolean = isProcessAlive): { pid: number; startedAt: number } | undefined {
    let previous: { pid: number; startedAt: number } | undefined;
    const row = this.db.prepare("SELECT value FROM meta WHERE key = 'agent_running'").get() as { value: string } | undefined;
    if (row !== undefined) {
      try {
        const value = JSON.parse(row.value) as { pid?: unknown; started_at?: unknown };
        if (typeof value.pid === 'number' && value.pid !== pid && !isAlive(value.pid)) previous = { pid: value.pid, startedAt: Number(value.started_at) };
      } catch {
        // A mark that does not parse says nothing.
      }
    }
    this.db
      .prepare("INSERT INTO meta (key, value) VALUES ('agent_running', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
      .run(JSON.stringify({ pid, started_at: this.now() }));
    this.runningMarked = true;
    return previous;
  }

  close(): void {
    if (this.closed) return;
    this.flush();
    if (this.runningMarked) {
      try {
        this.db.prepare("DELETE FROM meta WHERE key = 'agent_running'").run();
      } catch {
        // Best effort: the next start then reports an unclean end.
      }
    }
    this.closed = true;
    if (this.retentionTimer) clearTimeout(this.retentionTimer);
    try {
      this.db.close();
    } catch {
      // Closing a database that failed is best effort.
    }
  }

  /**
   * Open the session's database. A damaged file (torn, truncated, garbage) does not stop the
   * start: what can still be read is copied into a fresh database, and the damaged file is set
   * aside next to it (`.damaged-<time>`), with one log line.
   */
  private openChecked(): Sqlite {
    try {
      const db = openDatabase(this.path);
      const check = db.pragma('quick_check', { simple: true });
      if (check === 'ok') return db;
      db.close();
    } catch {
      // Fall through to salvage.
    }
    return this.salvage();
  }

  private salvage(): Sqlite {
    const damaged = `${this.path}.damaged-${this.now()}`;
    for (const file of fileSet(this.path)) if (existsSync(file)) renameSync(file, file.replace(this.path, damaged));
    const fresh = openDatabase(this.path);
    let copied = 0;
    let old: Sqlite | undefined;
    try {
      old = openSqlite(damaged, { readOnly: true });
      try {
        const rows = old.prepare('SELECT * FROM meta').all() as Array<Record<string, SqlParam>>;
        for (const row of rows) fresh.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(row.key, row.value);
      } catch {
        // The meta table is lost: a new log id and reservation follow.
      }
      const insert = fresh.prepare('INSERT OR REPLACE INTO events (seq, ts, type, category, target_id, nav_seq, envelope) VALUES (?, ?, ?, ?, ?, ?, ?)');
      let next = 0;
      // Row by row in seq order until the first unreadable page: everything before the damage.
      for (;;) {
        let row: Record<string, SqlParam> | undefined;
        try {
          row = old.prepare('SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT 1').get(next) as Record<string, SqlParam> | undefined;
        } catch {
          break;
        }
        if (!row) break;
        insert.run(row.seq, row.ts, row.type, row.category, row.target_id, row.nav_seq, row.envelope);
        next = row.seq as number;
        copied++;
      }
      // seq must never go backwards: keep the reservation past whatever the damaged file held.
      const reserved = Number((fresh.prepare("SELECT value FROM meta WHERE key = 'reserved_until'").get() as { value?: string } | undefined)?.value ?? 0);
      fresh.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('reserved_until', ?)").run(String(Math.max(reserved, next) + SEQ_RESERVATION));
    } catch {
      // Not even readable as a database: nothing to copy.
      fresh.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('reserved_until', ?)").run(String(this.now() * 1000));
    } finally {
      // The set-aside file is only read: closed however the copy ended.
      old?.close();
    }
    this.options.log?.('warn', { path: this.path, set_aside: damaged, events_recovered: copied }, 'monitor_store_recovered');
    return fresh;
  }

  private protectFiles(): void {
    for (const file of fileSet(this.path)) {
      try {
        if (existsSync(file)) chmodSync(file, 0o600);
      } catch {
        // Best effort: the directory is 0700 anyway.
      }
    }
  }
}

function openDatabase(path: string): Sqlite {
  const db = openSqlite(path);
  try {
    // Before the first table: a new database gives deleted rows' pages back to the file system at
    // each retention pass (docs/storage.md "Retention"). No effect on an existing one.
    db.pragma('auto_vacuum = INCREMENTAL');
    db.pragma('journal_mode = WAL');
    // WAL + NORMAL: a commit survives a process crash (kill -9) without an fsync per batch; a power
    // loss may lose the last commits (docs/storage.md).
    db.pragma('synchronous = NORMAL');
    db.exec(SCHEMA);
    return db;
  } catch (err) {
    // A file that is no database of ours is set aside (salvage): it must not stay open meanwhile.
    db.close();
    throw err;
  }
}

function fileSet(path: string): string[] {
  return [path, `${path}-wal`, `${path}-shm`];
}

function addFilterTo(filter: EventFilter | undefined, where: string[], params: unknown[], sinceTs?: number, untilTs?: number): void {
  const sql = filterSql(filter, sinceTs, untilTs);
  where.push(...sql.clauses);
  params.push(...sql.params);
}

/** What the store step reads of the agent's settings (Config has them). */
export interface StoreSettings {
  /** No store without one: the RAM ring alone. */
  dataDir?: string | undefined;
  sessionId: string;
  retainBytes: number;
  retainHours: number;
}

/**
 * Start-up's store step: the session's durable store when a data directory is set, closed again
 * if start-up fails after it opened.
 */
export function openEventStore(settings: StoreSettings, logger: Logger, scope: StartScope): EventStore | undefined {
  if (settings.dataDir === undefined) return undefined;
  const store = new EventStore({
    dataDir: settings.dataDir,
    sessionId: settings.sessionId,
    retainBytes: settings.retainBytes,
    retainMs: settings.retainHours * 3_600_000,
    log: (level, fields, message) => logger[level](fields, message),
  });
  scope.opened(() => store.close());
  scope.reached('opened');
  logger.info({ data_dir: settings.dataDir, resumed_after_seq: store.resumeAfterSeq, log_id: store.logId }, 'event store opened');
  return store;
}
