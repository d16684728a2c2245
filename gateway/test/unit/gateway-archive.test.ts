// The archive's pure pieces (docs/gateway.md): reading an agent's SSE stream however it is cut
// into chunks; what is kept of an envelope (the event's bytes, the columns, the kind counted) and
// the envelope rebuilt from it; times handed to the agent; the writer's batches, lanes, retries
// and backpressure (with a store that only records).

import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { isoMicros } from '../../src/archive/archive-history.ts';
import type { ArchiveStore, SessionBatchResult } from '../../src/archive/archive-store.ts';
import { ArchiveWriter, type QueuedEvent } from '../../src/archive/archive-writer.ts';
import { archivedEvent, envelopeJson, eventFrame, EVENT_KIND, MalformedEnvelope } from '../../src/archive/event-row.ts';
import { SseReader } from '../../src/archive/sse-reader.ts';
import { parseTimeBound } from '../../../src/stream/history.ts';

const silent = pino({ level: 'silent' });

const consoleEnvelope = (seq: number, text = `line ${seq}`) =>
  `{"seq":${seq},"event":{"ts":1764072000123456,"type":"console_log","category":"console","source":{"kind":"cdp","event":"Runtime.consoleAPICalled","metadata":{"target_id":"T9"}},"data":{"target_id":"T1","nav_seq":3,"level":"log","text":${JSON.stringify(text)},"args":[]}}}`;

describe('SseReader', () => {
  const stream = `: keepalive\n\nid: 1\ndata: ${consoleEnvelope(1, 'héllo ✓ 日本')}\n\n: keepalive\n\nid: 2\ndata: ${consoleEnvelope(2)}\n\n`;

  it('reads the frames of a stream in one chunk, keepalives skipped', () => {
    const frames = new SseReader().push(Buffer.from(stream));
    expect(frames.map((f) => [f.id, JSON.parse(f.data).seq])).toEqual([
      ['1', 1],
      ['2', 2],
    ]);
  });

  it('reads the same frames however the bytes are cut (multi-byte characters included)', () => {
    const bytes = Buffer.from(stream);
    const whole = new SseReader().push(bytes);
    for (let cut = 1; cut < bytes.length; cut += 7) {
      const reader = new SseReader();
      const frames = [...reader.push(bytes.subarray(0, cut)), ...reader.push(bytes.subarray(cut))];
      expect(frames).toEqual(whole);
    }
  });

  it('keeps an unfinished frame until its end arrives', () => {
    const reader = new SseReader();
    expect([reader.push(Buffer.from('id: 5\ndata: {"se')).length, reader.pendingLength > 0, reader.push(Buffer.from('q":5}\n\n'))]).toEqual([
      0,
      true,
      [{ id: '5', data: '{"seq":5}' }],
    ]);
  });

  it('takes CRLF line ends and joins data lines with \\n', () => {
    expect(new SseReader().push(Buffer.from('id: 3\r\ndata: a\r\ndata: b\n\n'))).toEqual([{ id: '3', data: 'a\nb' }]);
  });
});

describe('archivedEvent', () => {
  it("keeps the event's JSON byte for byte, and the envelope is rebuilt exactly", () => {
    const text = consoleEnvelope(42, 'quotes " and \\ and ✓');
    const event = archivedEvent(text);
    expect([envelopeJson(event.seq, event.eventJson), eventFrame(event.seq, event.eventJson)]).toEqual([text, `id: 42\ndata: ${text}\n\n`]);
  });

  it('keeps seq, ts, type, target (data first) and nav_seq as columns', () => {
    const { seq, ts, type, targetId, navSeq, kind } = archivedEvent(consoleEnvelope(7));
    expect({ seq, ts, type, targetId, navSeq, kind }).toEqual({
      seq: 7,
      ts: 1764072000123456,
      type: 'console_log',
      targetId: 'T1',
      navSeq: 3,
      kind: EVENT_KIND.other,
    });
  });

  it('takes the target from source.metadata when data has none', () => {
    const text =
      '{"seq":1,"event":{"ts":1,"type":"page_navigation","category":"page","source":{"kind":"cdp","metadata":{"target_id":"TM"}},"data":{"url":"x"}}}';
    expect([archivedEvent(text).targetId, archivedEvent(text).navSeq]).toEqual(['TM', null]);
  });

  it.each([
    ['console_error', {}, EVENT_KIND.error],
    ['network_loading_failed', { canceled: false }, EVENT_KIND.failedRequest],
    ['network_loading_failed', { canceled: true }, EVENT_KIND.other],
    ['network_response', { status: 404 }, EVENT_KIND.failedRequest],
    ['network_response', { status: 503 }, EVENT_KIND.failedRequest],
    ['network_response', { status: 304 }, EVENT_KIND.other],
    ['console_log', { status: 500 }, EVENT_KIND.other],
  ])('a %s with %j counts as kind %i', (type, data, kind) => {
    expect(archivedEvent(`{"seq":1,"event":{"ts":1,"type":"${type}","category":"x","source":{"kind":"cdp"},"data":${JSON.stringify(data)}}}`).kind).toBe(kind);
  });

  it("keeps an event type this gateway does not know (a newer agent's)", () => {
    expect(archivedEvent('{"seq":1,"event":{"ts":1,"type":"captcha_solve_result","category":"captcha","source":{"kind":"agent"}}}').type).toBe(
      'captcha_solve_result',
    );
  });

  it('an envelope of another layout is kept as its event serialized again', () => {
    const event = archivedEvent('{ "event": {"type": "console_log", "ts": 5}, "seq": 9 }');
    expect([event.seq, event.eventJson]).toEqual([9, '{"type":"console_log","ts":5}']);
  });

  it.each(['not json', '{"event":{}}', '{"seq":0,"event":{}}', '{"seq":1.5,"event":{}}', '{"seq":1}', '{"seq":1,"event":[]}', 'null'])(
    '%s is refused as malformed',
    (text) => {
      expect(() => archivedEvent(text)).toThrow(MalformedEnvelope);
    },
  );
});

describe('isoMicros', () => {
  it.each([1764072000123456, 1764072000000000, 1764072000999999, 1000])('%i µs goes to the agent as a time it reads back exactly', (us) => {
    expect(parseTimeBound(isoMicros(us), 0)).toBe(us);
  });
});

/** A store that records each batch, and fails while `failing` is set. */
class RecordingStore {
  batches: QueuedEvent[][] = [];
  failing = false;
  gate: Promise<void> | undefined;

  async insert(events: readonly QueuedEvent[]): Promise<SessionBatchResult[]> {
    await this.gate;
    if (this.failing) throw new Error('database down');
    this.batches.push([...events]);
    const max = new Map<number, number>();
    for (const { sessionKey, event } of events) max.set(sessionKey, Math.max(max.get(sessionKey) ?? 0, event.seq));
    return [...max].map(([sessionKey, maxSeq]) => ({ sessionKey, inserted: 0, maxSeq }));
  }
}

const row = (seq: number) => archivedEvent(consoleEnvelope(seq));

function writer(store: RecordingStore, options: { lanes?: number; maxBatchRows?: number; queueHighWater?: number } = {}) {
  return new ArchiveWriter({ inserts: store } as unknown as ArchiveStore, { log: silent, flushIntervalMs: 5, ...options });
}

describe('ArchiveWriter', () => {
  it('commits what was queued in one batch, in order', async () => {
    const store = new RecordingStore();
    const w = writer(store);
    for (let seq = 1; seq <= 5; seq++) w.enqueue(1, row(seq));
    await w.flush();
    expect(store.batches.map((b) => b.map((r) => r.event.seq))).toEqual([[1, 2, 3, 4, 5]]);
  });

  it('a full batch goes at once, the rest after it', async () => {
    const store = new RecordingStore();
    const w = writer(store, { maxBatchRows: 3 });
    for (let seq = 1; seq <= 7; seq++) w.enqueue(1, row(seq));
    await w.flush();
    expect(store.batches.map((b) => b.length)).toEqual([3, 3, 1]);
  });

  it("keeps each session on one lane: a session's batches commit in seq order", async () => {
    const store = new RecordingStore();
    const w = writer(store, { lanes: 4, maxBatchRows: 2 });
    for (let seq = 1; seq <= 9; seq++) for (const session of [1, 2, 3, 4, 5]) w.enqueue(session, row(seq));
    await w.flush();
    const order = new Map<number, number[]>();
    for (const batch of store.batches) for (const r of batch) order.set(r.sessionKey, [...(order.get(r.sessionKey) ?? []), r.event.seq]);
    expect([...order.values()]).toEqual([...order.keys()].map(() => [1, 2, 3, 4, 5, 6, 7, 8, 9]));
  });

  it('a failed write keeps its rows and they are committed once the database is back', async () => {
    const store = new RecordingStore();
    const w = writer(store);
    store.failing = true;
    w.enqueue(1, row(1));
    await expect(w.flush()).rejects.toThrow();
    w.enqueue(1, row(2));
    store.failing = false;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await w.flush();
    expect([store.batches.flat().map((r) => r.event.seq), w.queued]).toEqual([[1, 2], 0]);
  });

  it('is saturated at its bound and calls the waiting followers back once it drained', async () => {
    const store = new RecordingStore();
    let open!: () => void;
    store.gate = new Promise((resolve) => (open = resolve));
    const w = writer(store, { queueHighWater: 3, maxBatchRows: 100 });
    for (let seq = 1; seq <= 3; seq++) w.enqueue(1, row(seq));
    let resumed = false;
    w.whenDrained(() => (resumed = true));
    const before = [w.saturated, resumed];
    open();
    await w.flush();
    expect([before, [w.saturated, resumed]]).toEqual([
      [true, false],
      [false, true],
    ]);
  });

  it('committedThrough resolves once the seq is committed', async () => {
    const store = new RecordingStore();
    const w = writer(store);
    const committed = w.committedThrough(1, 2);
    w.enqueue(1, row(1));
    w.enqueue(1, row(2));
    await committed;
    expect(store.batches.flat().map((r) => r.event.seq)).toEqual([1, 2]);
  });
});
