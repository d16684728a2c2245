// The durable store on a real SQLite file: seq reservation, reading back, filters, retention,
// and what a damaged file does at start (docs/storage.md).

import { appendFileSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EventContext, FrameSnapshotData, TelemetryEvent } from '../../injected/schema.ts';
import { parseFilter } from '../../src/stream/event-filter.ts';
import { EventLog } from '../../src/stream/event-log.ts';
import { HistoryReader, parseTimeBound } from '../../src/stream/history.ts';
import { EventStore, SEQ_RESERVATION, sessionFileName } from '../../src/store/event-store.ts';
import { eventFrameText } from '../../src/stream/sse-frame.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'bta-store-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const GiB = 1024 ** 3;

/** The seqs of the frames in a run read from the store. */
const seqsOf = (bytes: Uint8Array | undefined): number[] =>
  [
    ...Buffer.from(bytes ?? new Uint8Array())
      .toString('utf8')
      .matchAll(/^id: (\d+)$/gm),
  ].map((m) => Number(m[1]));

function openStore(options: Partial<ConstructorParameters<typeof EventStore>[0]> = {}): EventStore {
  return new EventStore({ dataDir: dir, sessionId: 'S1', retainBytes: GiB, retainMs: 72 * 3_600_000, ...options });
}

function event(type: 'console_log' | 'console_error', text: string, context: EventContext = {}, ts = Date.now() * 1000): TelemetryEvent {
  const source = { kind: 'cdp' } as const;
  return type === 'console_log' ? { ts, type, source, data: { text, level: 'log', args: [], ...context } } : { ts, type, source, data: { text, ...context } };
}

/** A page_snapshot of about 2 KB (its `n`th). */
function snapshotEvent(n: number, ts = Date.now() * 1000): TelemetryEvent {
  const frame = {
    frame_id: 'F1',
    doc: 'D1',
    number: n,
    url: 'http://example.test/',
    viewport: { width: 800, height: 600 },
    html: ['HTML', {}, ['BODY', {}, ['P', {}, `${n} ${'x'.repeat(2000)}`]]] as FrameSnapshotData['html'],
    nodes: 3,
    collection_ms: 1,
  };
  return { ts, type: 'page_snapshot', source: { kind: 'cdp' }, data: { target_id: 'T1', reason: 'navigation_settled', frames: [frame] } };
}

/** A log over a store, `count` console events appended and written. */
function filled(store: EventStore, count: number, ring = 10_000): EventLog {
  const log = new EventLog({ maxEvents: ring, maxBytes: 1 << 26, archive: store });
  for (let i = 0; i < count; i++) log.append(event('console_log', `line ${i}`, { target_id: i % 2 === 0 ? 'T-even' : 'T-odd', nav_seq: i % 3 }));
  store.flush();
  return log;
}

describe('seq across restarts', () => {
  it('continues after every seq ever handed out, including ones never written', () => {
    const store = openStore();
    const log = filled(store, 10);
    log.append(event('console_log', 'queued, never written'));
    // A crash: the queued event is not written, the process is gone (no close()).
    expect(log.latestSeq).toBe(11);
    const reopened = openStore();
    expect(reopened.restoredLatestSeq).toBe(10);
    expect(reopened.resumeAfterSeq).toBeGreaterThanOrEqual(11);
    expect(reopened.resumeAfterSeq).toBe(1 + SEQ_RESERVATION);
    const next = new EventLog({ maxEvents: 10, maxBytes: 1 << 20, archive: reopened });
    expect(next.append(event('console_log', 'after restart'))).toBe(SEQ_RESERVATION + 2);
    reopened.close();
  });

  it('keeps the same log id on the same directory, and a new one on a new directory', () => {
    const first = openStore();
    const id = first.logId;
    first.close();
    expect(openStore().logId).toBe(id);
    rmSync(dir, { recursive: true, force: true });
    expect(openStore().logId).not.toBe(id);
  });

  it('creates its directory 0700 and its files 0600', () => {
    filled(openStore({ dataDir: join(dir, 'nested') }), 3);
    expect(statSync(join(dir, 'nested')).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'nested', sessionFileName('S1'))).mode & 0o777).toBe(0o600);
  });
});

describe('reading back', () => {
  it('serves what the ring evicted, as the exact frames it first served', () => {
    const store = openStore();
    const log = filled(store, 500, 50);
    expect([log.ringOldestSeq, log.oldestSeq]).toEqual([451, 1]);
    const live = new EventLog({ maxEvents: 1000, maxBytes: 1 << 26 });
    for (let i = 0; i < 500; i++) live.append(event('console_log', `line ${i}`, { target_id: i % 2 === 0 ? 'T-even' : 'T-odd', nav_seq: i % 3 }));
    let text = '';
    for (let seq = 1; seq <= 450;) {
      const run = log.read(seq, 450)!;
      text += run.bytes.toString('utf8');
      seq = run.next;
    }
    // ts differ between the two logs; compare everything but them.
    const strip = (s: string) => s.replace(/"ts":\d+/g, '"ts":0');
    const expected = Array.from({ length: 450 }, (_, i) => live.frame(i + 1)!.toString('utf8')).join('');
    expect(strip(text)).toBe(strip(expected));
  });

  it('filters on disk and in the ring alike', () => {
    const store = openStore();
    const log = filled(store, 300, 100);
    const filter = parseFilter({ target_id: 'T-odd', nav_seq: '1' })!;
    const seqs: number[] = [];
    for (let seq = 1; seq <= log.latestSeq;) {
      const run = log.readMatching(seq, log.latestSeq, filter)!;
      if (run.bytes) for (const m of run.bytes.toString('utf8').matchAll(/^id: (\d+)$/gm)) seqs.push(Number(m[1]));
      seq = run.next;
    }
    const expected = Array.from({ length: 300 }, (_, i) => i)
      .filter((i) => i % 2 === 1 && i % 3 === 1)
      .map((i) => i + 1);
    expect(seqs).toEqual(expected);
  });

  it('pages the history by seq, both ways, from the store and from the ring alone', () => {
    for (const withStore of [true, false]) {
      const store = withStore ? openStore({ sessionId: 'S2' }) : undefined;
      const log = new EventLog({ maxEvents: withStore ? 10 : 1000, maxBytes: 1 << 26, archive: store });
      for (let i = 0; i < 250; i++) log.append(event(i % 5 === 0 ? 'console_error' : 'console_log', `e${i}`));
      const history = new HistoryReader(log, store);
      const asc: number[] = [];
      let offset: number | undefined = 0;
      for (;;) {
        const page = history.read({ filter: parseFilter({ type: 'console_error' }), order: 'asc', offset, sinceTs: undefined, untilTs: undefined, limit: 7 });
        asc.push(...page.items.map((json) => (JSON.parse(json) as { seq: number }).seq));
        if (!page.hasMore) break;
        offset = page.nextOffset;
      }
      expect(asc).toEqual(Array.from({ length: 50 }, (_, i) => i * 5 + 1));
      const desc: number[] = [];
      offset = undefined;
      for (;;) {
        const page = history.read({ filter: undefined, order: 'desc', offset, sinceTs: undefined, untilTs: undefined, limit: 100 });
        desc.push(...page.items.map((json) => (JSON.parse(json) as { seq: number }).seq));
        if (!page.hasMore) {
          expect(page.nextOffset).toBe(0);
          break;
        }
        offset = page.nextOffset;
      }
      expect(desc).toEqual(Array.from({ length: 250 }, (_, i) => 250 - i));
      store?.close();
    }
  });

  it('bounds a page by time exactly, from the store and from the ring', () => {
    for (const withStore of [true, false]) {
      const store = withStore ? openStore({ sessionId: `T${Date.now()}` }) : undefined;
      const log = new EventLog({ maxEvents: withStore ? 10 : 1000, maxBytes: 1 << 26, archive: store });
      const t0 = 1_800_000_000_000_000;
      // A second per event, with one event of another target 3 s late.
      for (let i = 0; i < 300; i++) log.append(event('console_log', `t${i}`, {}, t0 + (i === 150 ? i - 3 : i) * 1_000_000));
      const history = new HistoryReader(log, store);
      const asc = history.read({
        filter: undefined,
        order: 'asc',
        offset: undefined,
        sinceTs: t0 + 100 * 1_000_000,
        untilTs: t0 + 200 * 1_000_000,
        limit: 1000,
      });
      const seqs = asc.items.map((json) => (JSON.parse(json) as { seq: number }).seq);
      expect(seqs).toEqual(Array.from({ length: 100 }, (_, i) => i + 101));
      const desc = history.read({ filter: undefined, order: 'desc', offset: undefined, sinceTs: undefined, untilTs: t0 + 10 * 1_000_000, limit: 1000 });
      expect(desc.items.map((json) => (JSON.parse(json) as { seq: number }).seq)).toEqual(Array.from({ length: 10 }, (_, i) => 10 - i));
      store?.close();
    }
  });

  it('reads since/until as RFC 3339 times or durations ago', () => {
    const now = Date.parse('2026-11-25T12:00:00Z');
    expect(parseTimeBound('5m', now)).toBe((now - 300_000) * 1000);
    expect(parseTimeBound('2026-11-25T11:00:00.123456Z', now)).toBe(Date.parse('2026-11-25T11:00:00.123Z') * 1000 + 456);
    expect(parseTimeBound('2026-11-25T13:00:00+01:00', now)).toBe(now * 1000);
    for (const bad of ['5 minutes', 'yesterday', '2026-11-25', '-5m', '']) expect(parseTimeBound(bad, now)).toBeUndefined();
  });
});

describe('retention', () => {
  it('drops the oldest events beyond the size limit', () => {
    const store = openStore({ retainBytes: 256 * 1024 });
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 26, archive: store });
    for (let i = 0; i < 3000; i++) log.append(event('console_log', `${i} ${'x'.repeat(300)}`));
    store.flush();
    store.enforceRetention();
    const stats = store.stats();
    expect(stats.bytes).toBeLessThanOrEqual(256 * 1024);
    expect(stats.oldestSeq).toBeGreaterThan(1);
    expect(log.oldestSeq).toBe(stats.oldestSeq);
    store.close();
  });

  it('counts page snapshots in the size limit, and drops the oldest of them like any event', () => {
    const store = openStore({ retainBytes: 256 * 1024 });
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 26, archive: store });
    // 400 snapshots of about 2 KB: three times the budget.
    for (let i = 0; i < 400; i++) log.append(snapshotEvent(i));
    store.flush();
    store.enforceRetention();
    const stats = store.stats();
    expect(stats.bytes).toBeLessThanOrEqual(256 * 1024);
    expect(stats.oldestSeq).toBeGreaterThan(1);
    const kept = seqsOf(store.readFrames(1, log.latestSeq, 1 << 26, parseFilter({ type: 'page_snapshot' })).bytes);
    expect(kept[0]).toBe(stats.oldestSeq);
    expect(kept.length).toBe(log.latestSeq - stats.oldestSeq + 1);
    expect(kept.length).toBeLessThan(400);
    store.close();
  });

  it('keeps what it occupies on disk, the WAL included, within a small budget under a flood', () => {
    const budget = 1024 * 1024;
    const store = openStore({ retainBytes: budget });
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 26, archive: store });
    const onDisk = () => ['', '-wal'].reduce((sum, suffix) => sum + (existsSync(store.path + suffix) ? statSync(store.path + suffix).size : 0), 0);
    let worst = 0;
    // 16 MB of events, written in batches of 200 as the flush timer would.
    for (let i = 0; i < 40_000; i++) {
      log.append(event('console_log', `${i} ${'x'.repeat(300)}`));
      if (i % 200 === 199) {
        store.flush();
        worst = Math.max(worst, onDisk());
      }
    }
    store.flush();
    expect(onDisk()).toBeLessThanOrEqual(budget);
    expect(store.stats().bytes).toBe(onDisk());
    // Between retention passes a batch may go over by what it wrote; never by more.
    expect(worst).toBeLessThanOrEqual(budget + 256 * 1024);
    store.close();
  });

  it('reads every stored event back as its frame, in runs of at most maxBytes (one larger frame alone), filtered or not', () => {
    const store = openStore();
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 26, archive: store });
    const sizes = [10, 40, 300, 5, 9000, 70_000, 12, 2500, 80];
    for (let i = 0; i < 1200; i++) {
      log.append(event(i % 3 === 0 ? 'console_error' : 'console_log', `${i} é ✓ 😀 ${'x'.repeat(sizes[i % sizes.length]!)}`));
    }
    store.flush();
    for (const filter of [undefined, parseFilter({ type: 'console_error' })]) {
      const runs: Buffer[] = [];
      let from = 1;
      while (from <= log.latestSeq) {
        const { bytes, first, next } = store.readFrames(from, log.latestSeq, 16_384, filter);
        expect(next).toBeGreaterThan(from);
        if (bytes !== undefined) {
          const seqs = seqsOf(bytes);
          if (seqs.length > 1) expect(bytes.length).toBeLessThanOrEqual(16_384);
          expect(first).toBe(seqs[0]);
          runs.push(Buffer.from(bytes));
        }
        from = next;
      }
      // Byte for byte the frames the ring would have sent.
      const stored = store.query({ filter, order: 'asc', limit: 10_000 });
      expect(Buffer.concat(runs).toString('utf8')).toBe(stored.map((row) => eventFrameText(row.seq, row.json)).join(''));
      expect(stored.length).toBe(filter === undefined ? 1200 : 400);
    }
    store.close();
  });

  it('never removes, while reading, the oldest event it just said it retains', () => {
    const store = openStore({ retainBytes: 256 * 1024 });
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 26, archive: store });
    for (let i = 0; i < 3000; i++) log.append(event('console_log', `${i} ${'x'.repeat(300)}`));
    store.flush();
    // More queued beyond the limit: the read writes them, and must not enforce retention too.
    for (let i = 0; i < 500; i++) log.append(event('console_log', `more ${i} ${'x'.repeat(300)}`));
    const oldest = log.oldestSeq;
    expect(store.readFrames(oldest, log.latestSeq, 4096).first).toBe(oldest);
    expect(store.query({ filter: undefined, order: 'asc', limit: 1 })[0]!.seq).toBe(oldest);
    // The next write's flush does.
    log.append(event('console_log', 'last'));
    store.flush();
    expect(log.oldestSeq).toBeGreaterThan(oldest);
    store.close();
  });

  it('drops events older than the age limit', () => {
    let now = Date.parse('2026-11-25T12:00:00Z');
    const store = openStore({ retainMs: 3_600_000, now: () => now });
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 26, archive: store });
    for (let i = 0; i < 10; i++) log.append(event('console_log', `old ${i}`, {}, (now - 2 * 3_600_000) * 1000));
    for (let i = 0; i < 5; i++) log.append(event('console_log', `new ${i}`, {}, now * 1000));
    store.flush();
    now += 1000;
    store.enforceRetention();
    expect(store.stats()).toMatchObject({ events: 5, oldestSeq: 11 });
    store.close();
  });

  it('drops by age exactly when targets’ clocks interleave within the skew, and keeps what is younger', () => {
    const now = Date.parse('2026-11-25T12:00:00Z');
    const store = openStore({ retainMs: 3_600_000, now: () => now });
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 26, archive: store });
    const cutoff = now - 3_600_000;
    const at = (ms: number) => ms * 1000;
    for (let i = 0; i < 3; i++) log.append(event('console_log', `old ${i}`, {}, at(cutoff - 5000)));
    for (let i = 0; i < 3; i++) log.append(event('console_log', `just young ${i}`, {}, at(cutoff + 2000)));
    // Another target's event, a little older, admitted after the younger ones.
    log.append(event('console_log', 'late and old', {}, at(cutoff - 1000)));
    for (let i = 0; i < 3; i++) log.append(event('console_log', `new ${i}`, {}, at(now)));
    store.flush();
    store.enforceRetention();
    const left = store
      .query({ filter: undefined, order: 'asc', limit: 100 })
      .map((row) => (JSON.parse(row.json) as { event: { data: { text: string } } }).event.data.text);
    expect(left).toEqual(['just young 0', 'just young 1', 'just young 2', 'new 0', 'new 1', 'new 2']);
    expect(store.stats()).toMatchObject({ events: 6, oldestSeq: 4 });
    store.close();
  });

  it('counts its rows exactly through writes, both kinds of retention and a restart', () => {
    let now = Date.parse('2026-11-25T12:00:00Z');
    const count = (s: EventStore) => (s['db'].prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n;
    const store = openStore({ retainBytes: 256 * 1024, retainMs: 3_600_000, now: () => now });
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 26, archive: store });
    for (let i = 0; i < 200; i++) log.append(event('console_log', `old ${i}`, {}, (now - 2 * 3_600_000) * 1000));
    for (let i = 0; i < 3000; i++) log.append(event('console_log', `${i} ${'x'.repeat(300)}`, {}, now * 1000));
    store.flush(false);
    expect(store.stats().events).toBe(3200);
    store.enforceRetention();
    const afterRetention = store.stats().events;
    expect(afterRetention).toBeLessThan(3000);
    expect(afterRetention).toBe(count(store));
    now += 1000;
    for (let i = 0; i < 7; i++) log.append(event('console_log', `more ${i}`, {}, now * 1000));
    store.flush(false);
    expect(store.stats().events).toBe(afterRetention + 7);
    expect(store.stats().events).toBe(count(store));
    store.close();
    const reopened = openStore({ retainBytes: 256 * 1024, retainMs: 3_600_000, now: () => now });
    expect(reopened.stats().events).toBe(afterRetention + 7);
    reopened.close();
  });

  it("removes other sessions' files once they are past the age limit", () => {
    const old = openStore({ sessionId: 'OLD' });
    filled(old, 5);
    old.close();
    const hourAgo = (Date.now() - 2 * 3_600_000) / 1000;
    for (const name of readdirSync(dir)) utimesSync(join(dir, name), hourAgo, hourAgo);
    const current = openStore({ sessionId: 'NEW', retainMs: 3_600_000 });
    current.enforceRetention();
    expect(readdirSync(dir).filter((name) => name.includes('OLD'))).toEqual([]);
    current.close();
  });
});

describe('a full disk', () => {
  it('stops persisting with one log line, counts what it drops, keeps the live log going, and resumes', () => {
    let now = 1_000_000;
    const lines: string[] = [];
    const store = openStore({ maxPageCount: 40, now: () => now, log: (_level, _fields, message) => lines.push(message) });
    const log = new EventLog({ maxEvents: 100_000, maxBytes: 1 << 28, archive: store });
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 100; i++) log.append(event('console_log', `${round}/${i} ${'x'.repeat(500)}`));
      store.flush();
    }
    expect(store.isPersisting).toBe(false);
    expect(store.persistErrors).toBeGreaterThanOrEqual(1);
    expect(store.droppedEvents).toBeGreaterThan(0);
    expect(lines.filter((l) => l === 'monitor_persist_failed')).toHaveLength(1);
    // The live log admitted everything.
    expect(log.latestSeq).toBe(2000);
    expect(log.frame(2000)).toBeDefined();
    // Space comes back (retention frees pages); after the pause the next batch is written.
    store.enforceRetention();
    store['options'].retainBytes = 16 * 1024;
    store.enforceRetention();
    now += 6_000;
    log.append(event('console_log', 'after the pause'));
    store.flush();
    expect(store.isPersisting).toBe(true);
    expect(lines).toContain('monitor_persist_resumed');
    store.close();
  });
});

describe('a damaged data directory', () => {
  const damage: Array<[string, (path: string) => void]> = [
    ['garbage appended to the database', (path) => appendFileSync(path, Buffer.alloc(10_000, 0x5a))],
    ['a truncated database', (path) => truncateSync(path, Math.floor(statSync(path).size * 0.6))],
    ['a torn WAL tail', (path) => existsSync(`${path}-wal`) && truncateSync(`${path}-wal`, Math.max(0, statSync(`${path}-wal`).size - 3000))],
    ['garbage appended to the WAL', (path) => appendFileSync(`${path}-wal`, Buffer.alloc(5000, 0xa5))],
    ['a file that is not a database at all', (path) => writeFileSync(path, 'not a database')],
  ];

  for (const [what, harm] of damage) {
    it(`starts cleanly with ${what}, serving what comes before the damage and never reusing a seq`, () => {
      const store = openStore();
      const log = filled(store, 2000);
      const latest = log.latestSeq;
      // No close(): as after kill -9, the WAL holds the recent commits.
      const path = join(dir, sessionFileName('S1'));
      harm(path);
      const reopened = openStore();
      const stats = reopened.stats();
      expect(reopened.resumeAfterSeq).toBeGreaterThanOrEqual(latest);
      const next = new EventLog({ maxEvents: 10, maxBytes: 1 << 20, archive: reopened });
      expect(next.append(event('console_log', 'after'))).toBeGreaterThan(latest);
      // What survived is a prefix of what was written, seq 1 upwards, without holes.
      if (stats.events > 0) {
        const rows = reopened.query({ filter: undefined, order: 'asc', limit: 5000 });
        expect(rows[0]!.seq).toBe(1);
        expect(rows.every((row, i) => row.seq === i + 1 || row.seq > latest)).toBe(true);
        expect(rows.every((row) => JSON.parse(row.json).seq === row.seq)).toBe(true);
      }
      reopened.close();
    });
  }
});
