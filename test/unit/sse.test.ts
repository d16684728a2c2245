import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { EventLog, MAX_RUN_BYTES } from '../../src/stream/event-log.ts';
import { KEEPALIVE_COMMENT, KEEPALIVE_FRAME, eventFrameText } from '../../src/stream/sse-frame.ts';
import { SseSubscriber } from '../../src/stream/sse-subscriber.ts';
import { StreamClosedError, StreamHub } from '../../src/stream/stream-hub.ts';

function event(text = 'hello'): TelemetryEvent {
  return { ts: 1_700_000_000_000_000, type: 'console_log', source: { kind: 'cdp' }, data: { level: 'log', text, args: [] } };
}

const range = (from: number, to: number): number[] => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

/** Subscribers write at the end of the tick that appended (one write per run of events). */
const endOfTick = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));

/** A subscriber whose sink stalled on the first event: it is blocked from the next tick on. */
async function blockedAfterOneEvent(log: EventLog): Promise<{ sink: RecordingSink; subscriber: SseSubscriber }> {
  const sink = new RecordingSink(16);
  sink.stall();
  const subscriber = new SseSubscriber(log, sink, 1, { keepaliveMs: 1000 });
  log.append(event());
  await endOfTick();
  return { sink, subscriber };
}

/** Seqs of the `id:` lines in raw SSE text. */
function seqsIn(text: string): number[] {
  return [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
}

/** An in-memory response: records every chunk; `stall()` makes it stop accepting (backpressure). */
class RecordingSink extends Writable {
  readonly chunks: Buffer[] = [];
  private stalled = false;
  private held: Array<() => void> = [];

  constructor(highWaterMark = 64) {
    super({ highWaterMark });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.chunks.push(chunk);
    if (this.stalled) this.held.push(callback);
    else callback();
  }

  stall(): void {
    this.stalled = true;
  }

  release(): void {
    this.stalled = false;
    const held = this.held;
    this.held = [];
    for (const callback of held) callback();
  }

  get text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }

  get seqs(): number[] {
    return seqsIn(this.text);
  }

  listenersOfInterest(): number {
    return ['drain', 'close', 'finish', 'error'].reduce((n, name) => n + this.listenerCount(name), 0);
  }
}

describe('SSE framing', () => {
  it('encodes an event frame as id, data and a blank line', () => {
    expect(eventFrameText(7, '{"seq":7}')).toBe('id: 7\ndata: {"seq":7}\n\n');
  });

  it('encodes the keepalive as a comment frame', () => {
    expect(KEEPALIVE_FRAME.toString('utf8')).toBe(': keepalive\n\n');
  });

  it('never writes an event: field', () => {
    expect(eventFrameText(1, '{"event":{"type":"x"}}')).not.toMatch(/^event:/m);
  });
});

describe('SseSubscriber', () => {
  let log: EventLog;

  beforeEach(() => {
    vi.useFakeTimers();
    log = new EventLog({ maxEvents: 8, maxBytes: 1 << 20 });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes events appended after it opens, in seq order, at the end of the tick', async () => {
    const sink = new RecordingSink();
    new SseSubscriber(log, sink, 1, { keepaliveMs: 1000 });
    log.append(event());
    log.append(event());
    const sameTick = sink.chunks.length;
    await endOfTick();
    expect([sameTick, sink.seqs]).toEqual([0, [1, 2]]);
  });

  it('writes the events of one tick with a single write', async () => {
    const sink = new RecordingSink(1 << 20);
    new SseSubscriber(log, sink, 1, { keepaliveMs: 1000 });
    for (let i = 0; i < 3; i++) log.append(event());
    await endOfTick();
    log.append(event());
    await endOfTick();
    expect([sink.chunks.length, sink.seqs]).toEqual([2, [1, 2, 3, 4]]);
  });

  it('replays retained events from its start seq before new ones', async () => {
    for (let i = 0; i < 5; i++) log.append(event());
    const sink = new RecordingSink();
    new SseSubscriber(log, sink, 3, { keepaliveMs: 1000 });
    log.append(event());
    await endOfTick();
    expect(sink.seqs).toEqual([3, 4, 5, 6]);
  });

  it('writes the very Buffer the log stores when a tick admitted one event', async () => {
    const sink = new RecordingSink();
    new SseSubscriber(log, sink, 1, { keepaliveMs: 1000 });
    log.append(event());
    await endOfTick();
    expect(sink.chunks[0]).toBe(log.frame(1));
  });

  it('stops writing when the sink pushes back', async () => {
    const { sink } = await blockedAfterOneEvent(log);
    log.append(event());
    log.append(event());
    await endOfTick();
    expect(sink.seqs).toEqual([1]);
  });

  it('resumes on drain with the next seq', async () => {
    const { sink } = await blockedAfterOneEvent(log);
    log.append(event());
    log.append(event());
    const drained = new Promise((resolve) => sink.once('drain', resolve));
    sink.release();
    await drained;
    expect(sink.seqs).toEqual([1, 2, 3]);
  });

  it('does not advance its cursor while blocked (it holds no queue)', async () => {
    const { subscriber } = await blockedAfterOneEvent(log);
    for (let i = 0; i < 5; i++) log.append(event());
    await endOfTick();
    expect([subscriber.isBlocked, subscriber.nextSeq]).toEqual([true, 2]);
  });

  it('continues from the oldest retained event after its cursor left the log', async () => {
    const { sink, subscriber } = await blockedAfterOneEvent(log);
    for (let i = 0; i < 19; i++) log.append(event());
    const drained = new Promise((resolve) => sink.once('drain', resolve));
    sink.release();
    await drained;
    expect([sink.seqs, subscriber.skippedEvents]).toEqual([[1, ...range(13, 20)], 11]);
  });

  it('writes a keepalive after keepaliveMs without any frame', () => {
    const sink = new RecordingSink();
    new SseSubscriber(log, sink, 1, { keepaliveMs: 50 });
    vi.advanceTimersByTime(49);
    const before = sink.chunks.length;
    vi.advanceTimersByTime(1);
    expect([before, sink.text]).toEqual([0, KEEPALIVE_FRAME.toString()]);
  });

  it('writes no keepalive while frames keep coming within keepaliveMs', async () => {
    const sink = new RecordingSink();
    new SseSubscriber(log, sink, 1, { keepaliveMs: 50 });
    for (let i = 0; i < 5; i++) {
      vi.advanceTimersByTime(40);
      log.append(event());
      await endOfTick();
    }
    expect(sink.text).not.toContain(KEEPALIVE_COMMENT);
  });

  it('writes the next keepalive keepaliveMs after the last frame', async () => {
    const sink = new RecordingSink();
    new SseSubscriber(log, sink, 1, { keepaliveMs: 50 });
    vi.advanceTimersByTime(40);
    log.append(event());
    await endOfTick();
    vi.advanceTimersByTime(49);
    const before = sink.text.includes(KEEPALIVE_COMMENT);
    vi.advanceTimersByTime(1);
    expect([before, sink.text.endsWith(KEEPALIVE_FRAME.toString())]).toEqual([false, true]);
  });

  it('uses a single timer however many events are written', () => {
    const sink = new RecordingSink();
    new SseSubscriber(log, sink, 1, { keepaliveMs: 50 });
    for (let i = 0; i < 100; i++) log.append(event());
    expect(vi.getTimerCount()).toBe(1);
  });

  it('end() writes every admitted event, then ends the sink', async () => {
    for (let i = 0; i < 3; i++) log.append(event());
    const sink = new RecordingSink();
    const subscriber = new SseSubscriber(log, sink, 2, { keepaliveMs: 1000 });
    log.append(event());
    await subscriber.end();
    expect([sink.seqs, sink.writableFinished]).toEqual([[2, 3, 4], true]);
  });

  it('end() waits for a blocked sink to drain before ending it', async () => {
    const sink = new RecordingSink(16);
    sink.stall();
    const subscriber = new SseSubscriber(log, sink, 1, { keepaliveMs: 1000 });
    for (let i = 0; i < 4; i++) log.append(event());
    const ended = subscriber.end();
    sink.release();
    await ended;
    expect([sink.seqs, sink.writableFinished]).toEqual([[1, 2, 3, 4], true]);
  });

  it('end() gives up and destroys the sink once the flush timeout passes', async () => {
    const sink = new RecordingSink(16);
    sink.stall();
    const subscriber = new SseSubscriber(log, sink, 1, { keepaliveMs: 1000, flushTimeoutMs: 2000 });
    log.append(event());
    log.append(event());
    const ended = subscriber.end();
    vi.advanceTimersByTime(2000);
    await ended;
    expect([sink.destroyed, sink.writableFinished]).toEqual([true, false]);
  });

  it('end() does not write events appended after it was called', async () => {
    const sink = new RecordingSink(16);
    sink.stall();
    const subscriber = new SseSubscriber(log, sink, 1, { keepaliveMs: 1000 });
    log.append(event());
    const ended = subscriber.end();
    log.append(event());
    sink.release();
    await ended;
    expect(sink.seqs).toEqual([1]);
  });

  it('releases its log listener, timers and sink listeners when the client goes away', async () => {
    const sink = new RecordingSink();
    const subscriber = new SseSubscriber(log, sink, 1, { keepaliveMs: 50 });
    const closed = new Promise((resolve) => sink.once('close', resolve));
    sink.destroy();
    await closed;
    expect([subscriber.isClosed, log.listenerCount, vi.getTimerCount(), sink.listenersOfInterest()]).toEqual([true, 0, 0, 0]);
  });

  it('releases everything once end() completes', async () => {
    const sink = new RecordingSink();
    const subscriber = new SseSubscriber(log, sink, 1, { keepaliveMs: 50 });
    await subscriber.end();
    expect([log.listenerCount, vi.getTimerCount(), sink.listenersOfInterest()]).toEqual([0, 0, 0]);
  });

  it('owns nothing when opened on a sink that is already gone', () => {
    const sink = new RecordingSink();
    sink.destroy();
    const subscriber = new SseSubscriber(log, sink, 1, { keepaliveMs: 50 });
    expect([subscriber.isClosed, log.listenerCount, vi.getTimerCount()]).toEqual([true, 0, 0]);
  });

  it('closes itself when the sink throws on write, without disturbing the producer', async () => {
    const sink = new RecordingSink();
    const subscriber = new SseSubscriber(log, sink, 1, { keepaliveMs: 50 });
    sink.write = () => {
      throw new Error('broken sink');
    };
    const seq = log.append(event());
    await endOfTick();
    expect([seq, subscriber.isClosed, log.listenerCount, log.append(event())]).toEqual([1, true, 0, 2]);
  });
});

describe('StreamHub', () => {
  let log: EventLog;
  let hub: StreamHub;

  beforeEach(() => {
    log = new EventLog({ maxEvents: 8, maxBytes: 1 << 20 });
    hub = new StreamHub(log, { keepaliveMs: 60_000 });
  });

  it('counts open subscribers', () => {
    hub.open(new RecordingSink(), 1);
    hub.open(new RecordingSink(), 1);
    expect(hub.subscriberCount).toBe(2);
  });

  it('writes the same Buffer to every subscriber, for one event and for a run of them', async () => {
    const a = new RecordingSink(1 << 20);
    const b = new RecordingSink(1 << 20);
    hub.open(a, 1);
    hub.open(b, 1);
    log.append(event());
    await endOfTick();
    log.append(event());
    log.append(event());
    await endOfTick();
    expect([a.chunks.length, a.seqs, a.chunks[0] === b.chunks[0], a.chunks[1] === b.chunks[1]]).toEqual([2, [1, 2, 3], true, true]);
  });

  it('forgets a subscriber whose client went away', async () => {
    const sink = new RecordingSink();
    hub.open(sink, 1);
    const closed = new Promise((resolve) => sink.once('close', resolve));
    sink.destroy();
    await closed;
    expect([hub.subscriberCount, log.listenerCount]).toEqual([0, 0]);
  });

  it('closeAll() ends every stream after flushing the admitted events', async () => {
    const a = new RecordingSink();
    const b = new RecordingSink();
    hub.open(a, 1);
    hub.open(b, 1);
    log.append(event());
    log.append(event());
    await hub.closeAll();
    expect([a.seqs, b.seqs, a.writableFinished, b.writableFinished, hub.subscriberCount]).toEqual([[1, 2], [1, 2], true, true, 0]);
  });

  it('refuses new subscribers after closeAll()', async () => {
    await hub.closeAll();
    expect(() => hub.open(new RecordingSink(), 1)).toThrow(StreamClosedError);
  });

  it('sums the events its subscribers skipped', async () => {
    const sink = new RecordingSink(16);
    sink.stall();
    hub.open(sink, 1);
    log.append(event());
    await endOfTick();
    for (let i = 0; i < 19; i++) log.append(event());
    const drained = new Promise((resolve) => sink.once('drain', resolve));
    sink.release();
    await drained;
    expect(hub.skippedEvents).toBe(11);
  });
});

// ---- Over real sockets -------------------------------------------------------------------------

/** A minimal SSE reader over node:http. */
class SseClient {
  private text = '';
  private readonly listeners = new Set<() => void>();
  ended = false;

  constructor(
    readonly request: http.ClientRequest,
    readonly response: http.IncomingMessage,
    paused: boolean,
  ) {
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      this.text += chunk;
      this.notify();
    });
    response.on('end', () => {
      this.ended = true;
      this.notify();
    });
    response.on('error', () => undefined);
    if (paused) response.pause();
  }

  get seqs(): number[] {
    return seqsIn(this.text);
  }

  get raw(): string {
    return this.text;
  }

  resume(): void {
    this.response.resume();
  }

  /** Resolves when `condition` holds after some received data; rejects after `timeoutMs`. */
  until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!condition()) return;
        clearTimeout(timer);
        this.listeners.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.listeners.delete(check);
        reject(new Error(`condition not met within ${timeoutMs} ms; received seqs ${this.seqs.slice(-5).join(',')}`));
      }, timeoutMs);
      this.listeners.add(check);
    });
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

/** Polls a server-side condition (no event to wait on); fails after `timeoutMs`. */
async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

interface Fixture {
  log: EventLog;
  hub: StreamHub;
  subscribers: SseSubscriber[];
  responses: http.ServerResponse[];
  connect(options?: { from?: number; paused?: boolean }): Promise<SseClient>;
  close(): Promise<void>;
}

async function startFixture(options: { maxEvents: number; keepaliveMs?: number; flushTimeoutMs?: number }): Promise<Fixture> {
  const log = new EventLog({ maxEvents: options.maxEvents, maxBytes: 1 << 30 });
  const hub = new StreamHub(log, { keepaliveMs: options.keepaliveMs ?? 60_000, flushTimeoutMs: options.flushTimeoutMs ?? 2000 });
  const subscribers: SseSubscriber[] = [];
  const responses: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    const from = new URL(req.url ?? '/', 'http://localhost').searchParams.get('from');
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    res.flushHeaders();
    responses.push(res);
    subscribers.push(hub.open(res, from === null ? log.latestSeq + 1 : Number(from)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const clients: SseClient[] = [];
  return {
    log,
    hub,
    subscribers,
    responses,
    connect: ({ from, paused = false } = {}) =>
      new Promise((resolve, reject) => {
        const path = from === undefined ? '/' : `/?from=${from}`;
        const request = http.get({ host: '127.0.0.1', port, path, agent: false }, (response) => {
          const client = new SseClient(request, response, paused);
          clients.push(client);
          resolve(client);
        });
        request.on('error', reject);
      }),
    close: async () => {
      for (const client of clients) client.request.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const BIG_TEXT = 'x'.repeat(16 * 1024);

/** Appends 16 KiB events until `done()`, yielding to I/O regularly so sockets make progress. */
async function appendUntil(log: EventLog, done: () => boolean): Promise<void> {
  for (let i = 0; i < 20_000 && !done(); i++) {
    log.append(event(BIG_TEXT));
    if (i % 8 === 7) await new Promise((resolve) => setImmediate(resolve));
  }
  if (!done()) throw new Error('condition not reached');
}

describe('SSE over a real socket', () => {
  let fixture: Fixture | undefined;

  afterEach(async () => {
    await fixture?.close();
    fixture = undefined;
  });

  it('delivers an appended event to an idle client', async () => {
    fixture = await startFixture({ maxEvents: 64 });
    const client = await fixture.connect();
    await waitFor(() => fixture!.hub.subscriberCount === 1);
    const seq = fixture.log.append(event());
    await client.until(() => client.seqs.includes(seq));
    expect(client.seqs).toEqual([1]);
  });

  it('keeps delivering every event to a reading client while another client is stalled', async () => {
    fixture = await startFixture({ maxEvents: 4096 });
    const { log, subscribers } = fixture;
    await fixture.connect({ paused: true });
    const reader = await fixture.connect();
    await waitFor(() => subscribers.length === 2);
    await appendUntil(log, () => subscribers[0]!.isBlocked);
    const marker = log.append(event('marker'));
    const stalledAtMarker = subscribers[0]!.isBlocked;
    await reader.until(() => reader.seqs.includes(marker));
    expect([stalledAtMarker, reader.seqs]).toEqual([true, range(1, marker)]);
  });

  it('buffers at most one write (one frame, or a run of at most MAX_RUN_BYTES) beyond the socket high-water mark for a stalled client', async () => {
    fixture = await startFixture({ maxEvents: 64 });
    const { log, subscribers, responses } = fixture;
    await fixture.connect({ paused: true });
    await waitFor(() => subscribers.length === 1);
    await appendUntil(log, () => subscribers[0]!.isBlocked);
    for (let i = 0; i < 200; i++) log.append(event(BIG_TEXT));
    const frameBytes = log.frame(log.latestSeq)!.length;
    const chunkFraming = 16;
    await endOfTick();
    expect(responses[0]!.writableLength).toBeLessThanOrEqual(responses[0]!.writableHighWaterMark + Math.max(frameBytes, MAX_RUN_BYTES) + chunkFraming);
  });

  it('resumes a stalled client from the oldest retained event, leaving a visible gap', async () => {
    fixture = await startFixture({ maxEvents: 64 });
    const { log, subscribers } = fixture;
    const slow = await fixture.connect({ paused: true });
    await waitFor(() => subscribers.length === 1);
    await appendUntil(log, () => subscribers[0]!.isBlocked);
    const lastWritten = subscribers[0]!.nextSeq - 1;
    for (let i = 0; i < 200; i++) log.append(event(BIG_TEXT));
    slow.resume();
    await slow.until(() => slow.seqs.at(-1) === log.latestSeq, 10_000);
    expect(slow.seqs).toEqual([...range(1, lastWritten), ...range(log.oldestSeq, log.latestSeq)]);
  });

  it('writes keepalives to an idle client', async () => {
    fixture = await startFixture({ maxEvents: 64, keepaliveMs: 50 });
    const client = await fixture.connect();
    await client.until(() => client.raw.length > 0);
    expect(client.raw.startsWith(KEEPALIVE_FRAME.toString())).toBe(true);
  });

  it('closeAll() delivers every admitted event, then ends the response', async () => {
    fixture = await startFixture({ maxEvents: 64 });
    const { log, hub } = fixture;
    for (let i = 0; i < 3; i++) log.append(event());
    const client = await fixture.connect({ from: 1 });
    await waitFor(() => hub.subscriberCount === 1);
    log.append(event());
    await hub.closeAll();
    await client.until(() => client.ended);
    expect(client.seqs).toEqual([1, 2, 3, 4]);
  });

  it('closeAll() drops a client that stopped reading once the flush timeout passes', async () => {
    fixture = await startFixture({ maxEvents: 4096, flushTimeoutMs: 100 });
    const { log, hub, subscribers, responses } = fixture;
    await fixture.connect({ paused: true });
    await waitFor(() => subscribers.length === 1);
    await appendUntil(log, () => subscribers[0]!.isBlocked);
    // Far more than any socket buffer can absorb, so the flush cannot complete.
    for (let i = 0; i < 2000; i++) log.append(event(BIG_TEXT));
    await hub.closeAll();
    expect([hub.subscriberCount, log.listenerCount, responses[0]!.destroyed]).toEqual([0, 0, true]);
  });

  it('releases the subscriber when the client disconnects', async () => {
    fixture = await startFixture({ maxEvents: 64 });
    const { log, hub } = fixture;
    const client = await fixture.connect();
    await waitFor(() => hub.subscriberCount === 1);
    client.request.destroy();
    await waitFor(() => hub.subscriberCount === 0);
    expect(log.listenerCount).toBe(0);
  });
});
