import { describe, expect, it } from 'vitest';
import { EVENT_TYPE_CATEGORY, type TelemetryEvent } from '../../injected/schema.ts';
import { BUSY_WINDOW_MS, EventLog, MAX_RUN_BYTES, SLAB_BYTES } from '../../src/stream/event-log.ts';
import { InvalidLastEventIdError, resolveStartSeq } from '../../src/stream/start-position.ts';

function consoleEvent(text = 'hello'): TelemetryEvent {
  return {
    ts: 1_700_000_000_000_000,
    type: 'console_log',
    source: { kind: 'cdp', event: 'Runtime.consoleAPICalled' },
    data: { level: 'log', text, args: [text] },
  };
}

/** The event as the frame carries it: with its category after the type. */
function onTheWire(event: TelemetryEvent): TelemetryEvent {
  const { ts, type, source, data, truncated } = event;
  return JSON.parse(JSON.stringify({ ts, type, category: EVENT_TYPE_CATEGORY[type], source, data, truncated })) as TelemetryEvent;
}

const endOfTick = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));

function logWith(count: number, options = { maxEvents: 100, maxBytes: 1 << 20 }): EventLog {
  const log = new EventLog(options);
  for (let i = 0; i < count; i++) log.append(consoleEvent(`event ${i}`));
  return log;
}

describe('EventLog', () => {
  it('assigns seq 1 to the first event', () => {
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 20 });
    expect(log.append(consoleEvent())).toBe(1);
  });

  it('assigns contiguous seqs, one per append', () => {
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 20 });
    const seqs = Array.from({ length: 25 }, () => log.append(consoleEvent()));
    expect(seqs).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
  });

  it('reports latestSeq 0 and oldestSeq 1 when empty', () => {
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 20 });
    expect([log.latestSeq, log.oldestSeq, log.size]).toEqual([0, 1, 0]);
  });

  it('keeps only the newest maxEvents events', () => {
    const log = logWith(25, { maxEvents: 10, maxBytes: 1 << 20 });
    expect([log.oldestSeq, log.latestSeq, log.size]).toEqual([16, 25, 10]);
  });

  it('keeps retained frames readable across ring growth and wrap-around', () => {
    const log = logWith(3000, { maxEvents: 2500, maxBytes: 1 << 30 });
    const seqs = [501, 1200, 2048, 3000].map((seq) => log.frame(seq)?.toString().split('\n')[0]);
    expect(seqs).toEqual(['id: 501', 'id: 1200', 'id: 2048', 'id: 3000']);
  });

  it('keeps only the newest events within maxBytes of frame bytes', () => {
    const probe = new EventLog({ maxEvents: 10, maxBytes: 1 << 20 });
    probe.append(consoleEvent('x'.repeat(100)));
    const frameSize = probe.frame(1)!.length;
    const log = new EventLog({ maxEvents: 100, maxBytes: frameSize * 3 + Math.floor(frameSize / 2) });
    for (let i = 0; i < 10; i++) log.append(consoleEvent('x'.repeat(100)));
    expect([log.oldestSeq, log.size]).toEqual([8, 3]);
  });

  it('accounts the byte size of exactly the retained frames', () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1000 });
    for (let i = 0; i < 10; i++) log.append(consoleEvent('x'.repeat(100)));
    let sum = 0;
    for (let seq = log.oldestSeq; seq <= log.latestSeq; seq++) sum += log.frame(seq)!.length;
    expect(log.byteSize).toBe(sum);
  });

  it('keeps the newest event even when it alone exceeds maxBytes', () => {
    const log = new EventLog({ maxEvents: 10, maxBytes: 50 });
    log.append(consoleEvent('a'));
    log.append(consoleEvent('y'.repeat(500)));
    expect([log.oldestSeq, log.latestSeq, log.size]).toEqual([2, 2, 1]);
  });

  it("stores frames in slabs of its own, never in Node's shared Buffer pool", () => {
    const log = logWith(3);
    const pooled = Buffer.from('a pooled buffer');
    expect(log.frame(1)!.buffer).not.toBe(pooled.buffer);
    expect(log.frame(1)!.buffer.byteLength).toBe(SLAB_BYTES);
    expect(log.frame(3)!.buffer).toBe(log.frame(1)!.buffer);
  });

  it('starts a new slab when a frame does not fit, leaving every retained frame intact, multi-byte text included', () => {
    const log = new EventLog({ maxEvents: 10_000, maxBytes: 1 << 24 });
    const texts: string[] = [];
    for (let i = 0; i < 10 || log.frame(1)!.buffer === log.frame(log.latestSeq)!.buffer; i++) {
      texts.push(`${i} ${'日本語😀é'.repeat(i % 40)}`);
      log.append(consoleEvent(texts.at(-1)));
    }
    const buffers = new Set<ArrayBufferLike>();
    for (let seq = 1; seq <= log.latestSeq; seq++) {
      const frame = log.frame(seq)!;
      buffers.add(frame.buffer);
      expect(frame.toString('utf8')).toBe(`id: ${seq}\ndata: ${JSON.stringify({ seq, event: onTheWire(consoleEvent(texts[seq - 1])) })}\n\n`);
    }
    expect(buffers.size).toBe(2);
    // A run across the two slabs is copied, whole.
    const last = log.latestSeq;
    const run = log.read(last - 3, last)!;
    expect(run.bytes.toString('utf8')).toBe(Array.from({ length: 4 }, (_, i) => log.frame(last - 3 + i)!.toString('utf8')).join(''));
  });

  it('gives a frame larger than an eighth of a slab memory of its own, exactly its size', () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 24 });
    log.append(consoleEvent('small'));
    const seq = log.append(consoleEvent('z'.repeat(SLAB_BYTES / 16))); // text and args: over an eighth
    const frame = log.frame(seq)!;
    expect([frame.byteOffset, frame.buffer.byteLength]).toEqual([0, frame.length]);
  });

  it('counts events evicted by retention', () => {
    expect(logWith(25, { maxEvents: 10, maxBytes: 1 << 20 }).evictedCount).toBe(15);
  });

  it('stores the frame as exactly "id: <seq>\\ndata: <envelope>\\n\\n"', () => {
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 20 });
    const event = consoleEvent('line one\nline two');
    log.append(event);
    expect(log.frame(1)!.toString('utf8')).toBe(`id: 1\ndata: ${JSON.stringify({ seq: 1, event: onTheWire(event) })}\n\n`);
  });

  it('serializes the envelope with seq first and event second', () => {
    const log = logWith(1);
    const data = log.frame(1)!.toString('utf8').split('\n')[1]!.slice('data: '.length);
    expect(Object.keys(JSON.parse(data))).toEqual(['seq', 'event']);
  });

  it('returns the same Buffer instance on every frame() call', () => {
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 20 });
    log.append(consoleEvent());
    expect(log.frame(1) === log.frame(1)).toBe(true);
  });

  it('serializes each event exactly once', () => {
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 20 });
    let calls = 0;
    const event = consoleEvent();
    Object.defineProperty(event.data!, 'toJSON', { value: () => (calls++, { text: 'x' }) });
    log.append(event);
    log.frame(1);
    log.read(1, 1);
    log.frame(1);
    expect(calls).toBe(1);
  });

  it('writes what JSON.stringify writes for the envelope, whatever the source, data and truncation', () => {
    const metadata = Object.freeze({ cdp_session_id: 'S1', target_id: 'T1', target_type: 'page' });
    const shared = Object.freeze({ kind: 'cdp' as const, event: 'Runtime.consoleAPICalled', metadata });
    const events: TelemetryEvent[] = [
      consoleEvent('plain'),
      { ...consoleEvent('shared "source"\u2028 é'), source: shared },
      { ...consoleEvent('shared again'), source: shared },
      { ...consoleEvent('cut'), source: shared, truncated: true },
      { ts: 1_700_000_000_000_001, type: 'monitor_reconnected', source: Object.freeze({ kind: 'agent' as const }) },
      {
        ts: 1_700_000_000_000_002,
        type: 'page_tab_opened',
        source: { kind: 'cdp', event: 'Target.targetCreated', metadata: { target_id: 'T2' } },
        data: { target_id: 'T2', target_type: 'page', url: 'about:blank', title: '' },
      },
    ];
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 20 });
    for (const event of events) log.append(event);
    const frames = events.map((_, i) => log.frame(i + 1)!.toString('utf8'));
    expect(frames).toEqual(events.map((event, i) => `id: ${i + 1}\ndata: ${JSON.stringify({ seq: i + 1, event: onTheWire(event) })}\n\n`));
  });

  it('writes valid JSON even for an event that lacks its ts (a bug elsewhere never breaks the stream)', () => {
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 20 });
    log.append({ ...consoleEvent(), ts: undefined } as unknown as TelemetryEvent);
    const envelope = JSON.parse(log.frame(1)!.toString('utf8').split('\n')[1]!.slice('data: '.length));
    expect([envelope.seq, envelope.event.ts, envelope.event.type]).toEqual([1, null, 'console_log']);
  });

  it('returns undefined for seqs that are evicted or not yet appended', () => {
    const log = logWith(25, { maxEvents: 10, maxBytes: 1 << 20 });
    expect([log.frame(0), log.frame(15), log.frame(26)]).toEqual([undefined, undefined, undefined]);
  });

  it('notifies listeners once at the end of a tick that admitted events, not per event', async () => {
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 20 });
    const seen: number[] = [];
    log.onAdmitted(() => seen.push(log.latestSeq));
    log.append(consoleEvent());
    log.append(consoleEvent());
    log.append(consoleEvent());
    expect(seen).toEqual([]);
    await endOfTick();
    expect(seen).toEqual([3]);
    log.append(consoleEvent());
    await endOfTick();
    await endOfTick();
    expect(seen).toEqual([3, 4]);
  });

  it('queues nothing while no one listens', async () => {
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 20 });
    log.append(consoleEvent());
    const seen: number[] = [];
    log.onAdmitted(() => seen.push(log.latestSeq));
    await endOfTick();
    expect(seen).toEqual([]);
    log.append(consoleEvent());
    await endOfTick();
    expect(seen).toEqual([2]);
  });

  it('stops notifying a listener after it unsubscribes', async () => {
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 20 });
    const seen: number[] = [];
    const unsubscribe = log.onAdmitted(() => seen.push(log.latestSeq));
    log.append(consoleEvent());
    await endOfTick();
    unsubscribe();
    unsubscribe();
    log.append(consoleEvent());
    await endOfTick();
    expect([seen, log.listenerCount]).toEqual([[1], 0]);
  });

  it('lets a listener unsubscribe during dispatch without skipping the others', async () => {
    const log = new EventLog({ maxEvents: 10, maxBytes: 1 << 20 });
    const seen: string[] = [];
    const unsubscribeA = log.onAdmitted(() => {
      seen.push('a');
      unsubscribeA();
    });
    log.onAdmitted(() => seen.push('b'));
    log.append(consoleEvent());
    await endOfTick();
    log.append(consoleEvent());
    await endOfTick();
    expect(seen).toEqual(['a', 'b', 'b']);
  });
});

describe('EventLog fan-out pacing', () => {
  const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

  it('notifies a quiet stream at the end of the tick, and a busy one paceMs later in one notification', async () => {
    const paceMs = 30;
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20, paceMs });
    const seen: Array<[number, number]> = [];
    const t0 = performance.now();
    log.onAdmitted(() => seen.push([log.latestSeq, performance.now() - t0]));
    log.append(consoleEvent());
    await endOfTick();
    // Quiet before: at once.
    expect(seen.map(([seq]) => seq)).toEqual([1]);
    // Busy now (a notification within BUSY_WINDOW_MS): three more ticks of events wait for the pace.
    const busyAt = performance.now() - t0;
    log.append(consoleEvent());
    await endOfTick();
    log.append(consoleEvent());
    await endOfTick();
    log.append(consoleEvent());
    await endOfTick();
    expect(seen.map(([seq]) => seq)).toEqual([1]);
    await sleep(paceMs + 20);
    expect(seen.map(([seq]) => seq)).toEqual([1, 4]);
    expect(seen[1]![1] - busyAt).toBeGreaterThanOrEqual(paceMs - 1);
  });

  it('is quiet again after BUSY_WINDOW_MS without a notification', async () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20, paceMs: 1000 });
    const seen: number[] = [];
    log.onAdmitted(() => seen.push(log.latestSeq));
    log.append(consoleEvent());
    await endOfTick();
    await sleep(BUSY_WINDOW_MS + 10);
    log.append(consoleEvent());
    await endOfTick();
    expect(seen).toEqual([1, 2]);
  });

  it('paces a busy stream loadPaceMs while a tab loads, and paceMs again once none does', async () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20, paceMs: 5, loadPaceMs: 40 });
    const seen: Array<[number, number]> = [];
    const t0 = performance.now();
    log.onAdmitted(() => seen.push([log.latestSeq, performance.now() - t0]));
    log.setLoading(true);
    log.append(consoleEvent());
    await endOfTick();
    expect(seen.map(([seq]) => seq)).toEqual([1]);
    const busyAt = performance.now() - t0;
    log.append(consoleEvent());
    await endOfTick();
    log.append(consoleEvent());
    await sleep(15);
    // Past paceMs, not yet loadPaceMs.
    expect(seen.map(([seq]) => seq)).toEqual([1]);
    await sleep(40);
    expect(seen.map(([seq]) => seq)).toEqual([1, 3]);
    expect(seen[1]![1] - busyAt).toBeGreaterThanOrEqual(39);
    log.setLoading(false);
    log.append(consoleEvent());
    await sleep(15);
    expect(seen.map(([seq]) => seq)).toEqual([1, 3, 4]);
  });

  it('applies loadPaceMs even when paceMs is 0, and never with loadPaceMs 0', async () => {
    const loadPaced = new EventLog({ maxEvents: 100, maxBytes: 1 << 20, loadPaceMs: 30 });
    const unpaced = new EventLog({ maxEvents: 100, maxBytes: 1 << 20, paceMs: 0, loadPaceMs: 0 });
    const seen = new Map<EventLog, number[]>([
      [loadPaced, []],
      [unpaced, []],
    ]);
    for (const log of [loadPaced, unpaced]) {
      log.onAdmitted(() => seen.get(log)!.push(log.latestSeq));
      log.setLoading(true);
    }
    for (let i = 1; i <= 3; i++) {
      loadPaced.append(consoleEvent());
      unpaced.append(consoleEvent());
      await endOfTick();
    }
    expect(seen.get(unpaced)).toEqual([1, 2, 3]);
    expect(seen.get(loadPaced)).toEqual([1]);
    await sleep(45);
    expect(seen.get(loadPaced)).toEqual([1, 3]);
  });

  it('never paces with paceMs 0 (the default)', async () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20 });
    const seen: number[] = [];
    log.onAdmitted(() => seen.push(log.latestSeq));
    for (let i = 1; i <= 3; i++) {
      log.append(consoleEvent());
      await endOfTick();
    }
    expect(seen).toEqual([1, 2, 3]);
  });
});

describe('EventLog.read', () => {
  const joined = (log: EventLog, from: number, to: number): string =>
    Array.from({ length: to - from + 1 }, (_, i) => log.frame(from + i)!.toString('utf8')).join('');

  it('joins consecutive frames into one buffer and says where the run ends', () => {
    const log = logWith(5);
    const run = log.read(2, 4)!;
    expect([run.from, run.next, run.bytes.toString('utf8')]).toEqual([2, 5, joined(log, 2, 4)]);
  });

  it('returns the stored Buffer itself for a run of one frame', () => {
    const log = logWith(3);
    expect(log.read(3, 3)!.bytes).toBe(log.frame(3));
  });

  it('hands out a run of frames adjacent in a slab as a view of it, not a copy', () => {
    const log = logWith(3);
    const run = log.read(1, 3)!;
    expect(run.bytes.buffer).toBe(log.frame(1)!.buffer);
    expect(run.bytes.toString('utf8')).toBe(joined(log, 1, 3));
  });

  it('copies a run whose frames are not adjacent into memory of its own', () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 24 });
    log.append(consoleEvent('small'));
    log.append(consoleEvent('x'.repeat(SLAB_BYTES / 8))); // text and args: memory of its own
    log.append(consoleEvent('small again'));
    const run = log.read(1, 3)!;
    expect([run.bytes.byteOffset, run.bytes.buffer.byteLength]).toEqual([0, run.bytes.length]);
    expect(run.bytes.toString('utf8')).toBe(joined(log, 1, 3));
  });

  it('clamps the run to the newest event', () => {
    const log = logWith(3);
    expect(log.read(2, 10)!.next).toBe(4);
  });

  it('returns the same Buffer to every caller asking for the same run', () => {
    const log = logWith(4);
    const first = log.read(1, 4)!.bytes;
    expect(log.read(1, 4)!.bytes).toBe(first);
  });

  it('does not return a cached run once newer events were appended', () => {
    const log = logWith(2);
    log.read(1, 2);
    log.append(consoleEvent('later'));
    expect(log.read(1, 3)!.bytes.toString('utf8')).toBe(joined(log, 1, 3));
  });

  it('caps a run at MAX_RUN_BYTES, but always returns at least one frame', () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 24 });
    const big = 'x'.repeat(MAX_RUN_BYTES / 4);
    for (let i = 0; i < 10; i++) log.append(consoleEvent(big));
    const huge = log.append(consoleEvent('y'.repeat(MAX_RUN_BYTES * 2)));
    const run = log.read(1, 10)!;
    const whole = log.read(huge, huge)!;
    expect([run.next - run.from < 10, run.bytes.length <= MAX_RUN_BYTES, run.bytes.toString('utf8')]).toEqual([true, true, joined(log, 1, run.next - 1)]);
    expect(whole.bytes).toBe(log.frame(huge));
  });

  it('returns undefined when the first seq is no longer retained', () => {
    const log = logWith(20, { maxEvents: 5, maxBytes: 1 << 20 });
    expect([log.read(10, 20), log.read(16, 20)?.from]).toEqual([undefined, 16]);
  });
});

describe('resolveStartSeq', () => {
  // Retains seqs 16..25.
  const log = logWith(25, { maxEvents: 10, maxBytes: 1 << 20 });

  it('starts with the next new event when neither Last-Event-ID nor replay is given', () => {
    expect(resolveStartSeq(log, undefined, false)).toBe(26);
  });

  it('starts at the oldest retained event for replay=all', () => {
    expect(resolveStartSeq(log, undefined, true)).toBe(16);
  });

  it('resumes right after Last-Event-ID', () => {
    expect(resolveStartSeq(log, '20', false)).toBe(21);
  });

  it('resumes with new events when Last-Event-ID is the latest seq', () => {
    expect(resolveStartSeq(log, '25', false)).toBe(26);
  });

  it('starts at the oldest retained event when Last-Event-ID + 1 has been evicted', () => {
    expect(resolveStartSeq(log, '3', false)).toBe(16);
  });

  it('starts at the oldest retained event when Last-Event-ID is newer than the latest seq', () => {
    expect(resolveStartSeq(log, '99', false)).toBe(16);
  });

  it('accepts Last-Event-ID 0', () => {
    expect(resolveStartSeq(logWith(3), '0', false)).toBe(1);
  });

  it('lets Last-Event-ID win over replay=all', () => {
    expect(resolveStartSeq(log, '22', true)).toBe(23);
  });

  it('starts at seq 1 on an empty log whatever the request', () => {
    const empty = new EventLog({ maxEvents: 10, maxBytes: 1 << 20 });
    expect([resolveStartSeq(empty, undefined, false), resolveStartSeq(empty, undefined, true), resolveStartSeq(empty, '7', false)]).toEqual([1, 1, 1]);
  });

  it.each(['', '-1', '1.5', ' 3', '3 ', '0x10', '1e3', 'abc', '12345678901234567', '99999999999999999'])(
    'rejects Last-Event-ID %j as invalid_input',
    (value) => {
      expect(() => resolveStartSeq(log, value, false)).toThrow(InvalidLastEventIdError);
    },
  );

  it('rejects with code invalid_input and status 400', () => {
    const error = (() => {
      try {
        resolveStartSeq(log, 'x', false);
      } catch (e) {
        return e as InvalidLastEventIdError;
      }
      return undefined;
    })();
    expect([error?.code, error?.status]).toEqual(['invalid_input', 400]);
  });
});
