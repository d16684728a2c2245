// The Playwright trace archive (docs/export.md "Playwright trace"): a zip streamed while the
// history is read. A zip's entries follow one another, so the history is read once per entry
// kind, each pass asking only for the event types it needs: the pictures (`resources/`), the
// response bodies (`resources/`), the actions and page events (`trace.trace`), the network
// (`trace.network`), and the error list (`errors.trace`). Memory stays bounded: one page of
// events, the requests in flight, and one list entry per picture. A replay's pictures, when the
// caller gives them (docs/export.md "Screencast"), join the screenshots as the screencast.

import { PassThrough, pipeline, Readable } from 'node:stream';
import { EVENT_TYPES, parseFilter, type EventFilter } from '../stream/event-filter.ts';
import type { EventType, TelemetryEvent } from '../../injected/schema.ts';
import { contextOf } from '../event-data.ts';
import { HAR_EVENT_TYPES, HarBuilder, type HarEntry } from './har.ts';
import { SnapshotTraceWriter } from './snapshot-trace.ts';
import { TraceBuilder, contextOptionsLine, errorLines, pngSize, resourceLine, type TraceContextInfo, type TraceFrame } from './trace.ts';

/** One stored event: its seq and its JSON text (as the source keeps it). */
export interface TraceRow {
  seq: number;
  text: string;
}

/** Where the events come from: the agent's history, or the gateway's archive. */
export interface TraceEventSource {
  /**
   * Rows matching `filter` in the export's window and seq bound, oldest first, `pageSize` at a
   * time. A page's array is the caller's, and a pass may empty it: a source that keeps no other
   * hold on the texts while the pass works on them (the agent's history does not) lets them go.
   * `fromStart`: from the oldest retained row, whatever the window's start (the snapshots a
   * window's first snapshots refer to).
   */
  pages(filter: EventFilter | undefined, pageSize: number, fromStart?: boolean): AsyncIterable<TraceRow[]>;
  /** The window's start (Unix µs), when it has one. */
  readonly sinceTs?: number;
  /** An upper bound of the bytes of every event the source holds, when it knows one cheaply. */
  storedBytes?(): number | undefined;
  /** The event of a row. */
  event(row: TraceRow): TelemetryEvent;
}

/** A picture of the screencast besides the screenshots (a replay's frame, src/replay/trace-screencast.ts). */
export interface ScreencastPicture {
  /** Its name under `resources/`, unique in the trace. */
  name: string;
  /** Unix µs. */
  ts: number;
  width: number;
  height: number;
  data: Buffer;
}

export interface TraceRequest {
  sessionId: string;
  /** Pictures for the screencast, in time order, read once while the archive is written. */
  screencast?: () => AsyncIterable<ScreencastPicture>;
  targetIds?: ReadonlySet<string>;
  navSeqs?: ReadonlySet<number>;
  creator: { name: string; version: string };
  /** The most event bytes (stored JSON) a trace is built from. */
  maxBytes: number;
}

/** The window holds more than `maxBytes` of events: the http layer answers 413 naming the filters. */
export class TraceTooLargeError extends Error {
  override name = 'TraceTooLargeError';
  constructor(
    readonly bytes: number,
    readonly maxBytes: number,
  ) {
    super(
      `the trace of this window would be built from more than ${mib(maxBytes)} MiB of events (limit ${mib(maxBytes)} MiB): narrow it with since and until (a time window), target_id (one tab) or nav_seq (one page of a tab)`,
    );
  }
}

/**
 * Events per history page; screenshots (up to 1 MiB of base64 each) one at a time. What a pass holds
 * while the zip takes its output outlives the young generation's collections and waits for a full
 * one, so the pages are small (docs/export.md "Playwright trace").
 */
const PAGE_EVENTS = 100;
const PAGE_SCREENSHOTS = 1;

/** Characters per piece handed to the zip. */
const PIECE_CHARS = 1 << 16;
/** Base64 characters decoded at a time (a multiple of 4: each piece decodes alone). */
const DECODE_CHARS = 1 << 14;
const PLAIN_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const SCREENSHOT_TYPES: EventType[] = ['monitor_screenshot'];
const SNAPSHOT_TYPES: EventType[] = ['page_snapshot'];
/** Snapshots per history page (a page's first one holds its whole document). */
const PAGE_SNAPSHOTS = 10;
/** The HAR's request events: the network pass reads them, the trace pass need not. */
const REQUEST_TYPES = new Set<string>(['network_request', 'network_response', 'network_loading_failed']);

/**
 * Check the window's size against the cap (before any byte is sent: a 413 is still possible).
 * Stops reading at the cap.
 */
export async function checkTraceSize(source: TraceEventSource, request: TraceRequest): Promise<void> {
  // A store smaller than the cap cannot hold a window over it: no need to count (the response starts at once).
  const bound = source.storedBytes?.();
  if (bound !== undefined && bound <= request.maxBytes) return;
  let bytes = 0;
  const others = EVENT_TYPES.filter((type) => type !== 'monitor_screenshot');
  const passes: Array<[EventFilter | undefined, number]> = [
    [narrow(others, request, false), PAGE_EVENTS],
    [parseFilter({ type: SCREENSHOT_TYPES }), PAGE_SCREENSHOTS],
  ];
  for (const [filter, pageSize] of passes) {
    for await (const rows of source.pages(filter, pageSize)) {
      for (const row of rows) bytes += row.text.length;
      if (bytes > request.maxBytes) throw new TraceTooLargeError(bytes, request.maxBytes);
    }
  }
}

/**
 * The trace's zip as a stream; the entries are produced as the zip is read. yazl is loaded on the
 * first export, not at start-up.
 */
export async function traceArchive(source: TraceEventSource, request: TraceRequest, onError: (err: Error) => void): Promise<Readable> {
  const { default: yazl } = await import('yazl');
  const zip = new yazl.ZipFile();
  const output = new PassThrough();
  pipeline(zip.outputStream, output, () => undefined);
  let gone = false;
  /** Settles the entry being written when the client goes away (one listener, not one per entry). */
  let abandon: (() => void) | undefined;
  output.once('close', () => {
    gone = true;
    abandon?.();
  });

  const add = (name: string, body: Readable, compress: boolean): Promise<void> =>
    new Promise((resolve, reject) => {
      abandon = resolve;
      body.once('end', resolve);
      body.once('error', reject);
      zip.addReadStreamLazy(name, { compress }, handOver(body));
    });

  const drive = async (): Promise<void> => {
    const frames: TraceFrame[] = [];
    for await (const shot of screenshots(source)) {
      if (gone) return;
      frames.push(shot.frame);
      await add(`resources/${shot.frame.name}`, Readable.from(base64Pieces(shot.png)), false);
    }
    if (request.screencast) {
      for await (const picture of request.screencast()) {
        if (gone) return;
        frames.push({ name: picture.name, ts: picture.ts, width: picture.width, height: picture.height });
        await add(`resources/${picture.name}`, Readable.from([picture.data]), false);
      }
      // One film strip, in time order (the trace pass writes each picture before the first later event).
      frames.sort((a, b) => a.ts - b.ts);
    }
    const bodies = new Set<number>();
    for await (const body of responseBodies(source, request)) {
      if (gone) return;
      bodies.add(body.seq);
      await add(`resources/${bodyName(body.seq)}`, Readable.from([body.bytes]), true);
    }
    const info: TraceContextInfo = { sessionId: request.sessionId, startTs: 0, title: `browser session ${request.sessionId}` };
    const builder = new TraceBuilder();
    await add('trace.trace', Readable.from(pieces(concat(traceLines(source, request, info, builder, frames), snapshotLines(source, request, builder)))), true);
    if (gone) return;
    await add('trace.network', Readable.from(pieces(networkLines(source, request, bodies))), true);
    if (gone) return;
    if (builder.errors.length > 0) await add('errors.trace', Readable.from([errorLines(info, builder.errors)]), true);
    zip.end();
  };
  drive().catch((err: unknown) => {
    onError(err as Error);
    output.destroy(err as Error);
  });
  return output;
}

// ---- the passes ----------------------------------------------------------------------------------

async function* screenshots(source: TraceEventSource): AsyncGenerator<{ frame: TraceFrame; png: string }> {
  // Screenshots are of the active tab and carry no target: every one in the window is kept.
  for await (const rows of source.pages(parseFilter({ type: SCREENSHOT_TYPES }), PAGE_SCREENSHOTS)) {
    // The pictures taken out, then the envelopes let go before the pictures go out (the zip takes a while).
    const shots = rows.map((row) => decodeScreenshot(source, row));
    rows.length = 0;
    for (let i = 0; i < shots.length; i++) {
      const shot = shots[i];
      shots[i] = undefined;
      if (shot !== undefined) yield shot;
    }
  }
}

function decodeScreenshot(source: TraceEventSource, row: TraceRow): { frame: TraceFrame; png: string } | undefined {
  const event = source.event(row);
  const png = event.type === 'monitor_screenshot' ? event.data?.png : undefined;
  if (png === undefined) return undefined;
  const size = pngSize(Buffer.from(png.slice(0, 32), 'base64'));
  return size === undefined ? undefined : { frame: { name: `screenshot-${row.seq}.png`, ts: event.ts, ...size }, png };
}

/**
 * Base64 text as bytes, a piece at a time. A whole picture decoded at once is a buffer outside the
 * heap that, still in the zip's hands at a young collection, waits for a full one (its memory is
 * not given back to the system in between); pieces are let go of as they are written. Text that
 * is not plain base64 (line breaks, padding inside) is decoded whole, as the pieces would differ.
 */
function* base64Pieces(text: string): Generator<Buffer> {
  if (!PLAIN_BASE64.test(text)) {
    yield Buffer.from(text, 'base64');
    return;
  }
  const length = text.length;
  for (let at = 0; at < length; at += DECODE_CHARS) {
    const piece = Buffer.from(text.slice(at, at + DECODE_CHARS), 'base64');
    // Let go of the text with the last piece: the stream keeps this generator a while.
    if (at + DECODE_CHARS >= length) text = '';
    yield piece;
  }
}

async function* responseBodies(source: TraceEventSource, request: TraceRequest): AsyncGenerator<{ seq: number; bytes: Buffer }> {
  const filter = narrow(['network_response'], request, false);
  for await (const rows of source.pages(filter, PAGE_EVENTS)) {
    for (const row of rows) {
      const event = source.event(row);
      const data = event.type === 'network_response' ? event.data : undefined;
      if (data?.body === undefined) continue;
      yield { seq: row.seq, bytes: Buffer.from(data.body, data.body_encoding === 'base64' ? 'base64' : 'utf8') };
    }
  }
}

async function* traceLines(
  source: TraceEventSource,
  request: TraceRequest,
  info: TraceContextInfo,
  builder: TraceBuilder,
  frames: TraceFrame[],
): AsyncGenerator<string> {
  const types = EVENT_TYPES.filter((type) => !REQUEST_TYPES.has(type) && type !== 'monitor_screenshot' && type !== 'page_snapshot');
  const filter = narrow(types, request, true);
  let started = false;
  let next = 0;
  let lastTs = 0;
  const start = (ts: number): string => {
    started = true;
    info.startTs = frames.length > 0 ? Math.min(ts, frames[0]!.ts) : ts;
    // The viewport as the screenshots show it (the viewer's default otherwise).
    if (frames.length > 0) info.viewport = { width: frames[0]!.width, height: frames[0]!.height };
    return contextOptionsLine(info, 'library');
  };
  for await (const rows of source.pages(filter, PAGE_EVENTS)) {
    let out = '';
    for (const row of rows) {
      const event = source.event(row);
      if (!started) out += start(event.ts);
      while (next < frames.length && frames[next]!.ts <= event.ts) out += builder.frame(frames[next++]!);
      out += builder.add(event);
      lastTs = Math.max(lastTs, event.ts);
    }
    yield out;
  }
  let out = '';
  if (!started) out += start(frames[0]?.ts ?? Date.now() * 1000);
  while (next < frames.length) out += builder.frame(frames[next++]!);
  yield out + builder.end(Math.max(lastTs, frames[frames.length - 1]?.ts ?? 0));
}

/**
 * The frame snapshots (docs/export.md "Snapshots in the trace"), after every action line: the
 * viewer learns a snapshot's phase from the before and after lines that name it, so those must
 * come first. Read from the oldest retained snapshot, since a window's first ones refer to
 * earlier ones; written from the window's start.
 */
async function* snapshotLines(source: TraceEventSource, request: TraceRequest, builder: TraceBuilder): AsyncGenerator<string> {
  const writer = new SnapshotTraceWriter(builder);
  const since = source.sinceTs;
  for await (const rows of source.pages(narrow(SNAPSHOT_TYPES, request, true), PAGE_SNAPSHOTS, true)) {
    let out = '';
    for (let i = 0; i < rows.length; i++) {
      const event = source.event(rows[i]!);
      rows[i] = EMPTY_ROW;
      out += writer.add(event, since === undefined || event.ts >= since);
    }
    yield out;
  }
}

async function* concat(...parts: Array<AsyncIterable<string>>): AsyncGenerator<string> {
  for (const part of parts) yield* part;
}

const EMPTY_ROW: TraceRow = { seq: 0, text: '' };

async function* networkLines(source: TraceEventSource, request: TraceRequest, bodies: ReadonlySet<number>): AsyncGenerator<string> {
  // The entries as objects (HarOptions.onEntry), not JSON text parsed again.
  const ended: HarEntry[] = [];
  const har = new HarBuilder({ creator: request.creator, navSeqs: request.navSeqs, onEntry: (entry) => ended.push(entry) });
  har.begin();
  const filter = narrow([...HAR_EVENT_TYPES], request, false);
  for await (const rows of source.pages(filter, PAGE_EVENTS)) {
    let out = '';
    for (const row of rows) {
      const event = source.event(row);
      har.add(event);
      if (ended.length === 0) continue;
      // The request this event ended (its response, failure, redirect hop, or a socket's close).
      const withBody = event.type === 'network_response' && event.data?.body !== undefined && bodies.has(row.seq);
      const targetId = contextOf(event)?.target_id;
      for (const entry of ended) out += resourceLine(entry, targetId, withBody ? bodyName(row.seq) : undefined);
      ended.length = 0;
    }
    yield out;
  }
  // The requests that never ended (the pages are not part of a trace).
  har.end();
  yield ended.map((entry) => resourceLine(entry, undefined)).join('');
}

// ---- helpers -------------------------------------------------------------------------------------

/**
 * The history filter of a pass: its types, the tabs asked for, and (for the trace pass only; the
 * HAR applies it itself, see HarOptions.navSeqs) the navigations asked for.
 */
function narrow(types: readonly string[] | undefined, request: TraceRequest, withNavSeq: boolean): EventFilter | undefined {
  const filter = parseFilter({ type: types ? [...types] : undefined, target_id: request.targetIds ? [...request.targetIds] : undefined });
  if (!withNavSeq || request.navSeqs === undefined) return filter;
  return { ...filter, navSeqs: request.navSeqs };
}

/**
 * The read-stream function of a zip entry. The zip keeps it (with its entry) until the archive
 * ends, so it lets go of the stream once handed over: a kept stream would keep its bytes (every
 * picture and body of the archive) until then.
 */
function handOver(body: Readable): (cb: (err: Error | null, stream: Readable) => void) => void {
  let pending: Readable | undefined = body;
  return (cb) => {
    const stream = pending!;
    pending = undefined;
    cb(null, stream);
  };
}

function bodyName(seq: number): string {
  return `body-${seq}`;
}

/** Lines gathered into pieces of about PIECE_CHARS. */
async function* pieces(lines: AsyncIterable<string>): AsyncGenerator<string> {
  let piece = '';
  for await (const text of lines) {
    piece += text;
    if (piece.length >= PIECE_CHARS) {
      yield piece;
      piece = '';
    }
  }
  if (piece !== '') yield piece;
}

function mib(bytes: number): number {
  return Math.round(bytes / (1 << 20));
}
