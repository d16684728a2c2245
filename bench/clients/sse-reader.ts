// One SSE subscriber as the bench sees it: counts frames, seq gaps and bytes, and times the frames
// that carry a workload marker (CLOCK_MONOTONIC at the socket's 'data' event, so the time is when
// the bytes reached this process). A stalled reader connects, takes the headers, and never reads
// again: once Node's small buffer is full the socket stops being read and the kernel buffers fill.
// A count-only reader (page loads) just counts frames on the bytes, the cheapest a consumer can be.

import http from 'node:http';
import { monoMs } from '../lib/processes.ts';

export interface FrameMatch {
  /** Envelope event type, e.g. `console_log`. */
  type: string;
  /** Text the frame must contain; with `numbered`, digits right after it are the marker number. */
  contains: string;
}

export interface ReaderOptions {
  stalled?: boolean;
  /**
   * Count frames only, on the bytes (no text, no seq): the cheapest consumer, for measurements
   * where the reader's own CPU competes with the browser (page loads). No gaps, marks or sizes;
   * `bytes` counts the whole stream, keepalives included.
   */
  countOnly?: boolean;
  match?: FrameMatch;
  /** Record arrival times of markers base..base+count-1 (needs `match`). */
  marks?: { base: number; count: number };
  /** Called for every frame (orchestrator-side readers that wait for specific events). */
  onFrame?: (frame: string, at: number) => void;
  /** Frames of the log's retention window to sum (the agent's --ring-events). */
  retainedWindow?: number;
}

export interface ReaderStats {
  stalled: boolean;
  /** Socket reads ('data' events): what the agent's writes cost this reader in wake-ups. */
  reads: number;
  frames: number;
  keepalives: number;
  bytes: number;
  /** Seq jumps seen (each one a visible loss). */
  gaps: number;
  /** Events skipped over all gaps. */
  missing: number;
  firstSeq: number;
  lastSeq: number;
  matched: number;
  firstMatchAt: number;
  lastMatchAt: number;
  /** Bytes of the newest `retainedWindow` frames: what the agent's log holds of them. */
  retainedBytes: number;
}

const FRAME_END = Buffer.from('\n\n');

/** Counts the frames of an SSE byte stream cut anywhere into chunks, keepalive comments apart. */
export class FrameCounter {
  frames = 0;
  keepalives = 0;
  /** The next byte starts a frame. */
  private atFrameStart = true;
  /** The previous chunk ended with a LF that may be the first half of a frame end. */
  private lfCarry = false;

  push(chunk: Buffer): void {
    const n = chunk.length;
    let i = 0;
    if (this.lfCarry) {
      this.lfCarry = false;
      if (chunk[0] === 10) {
        this.atFrameStart = true;
        i = 1;
      }
    }
    for (;;) {
      if (this.atFrameStart && i < n) {
        this.atFrameStart = false;
        if (chunk[i] === 58 /* ':' */) this.keepalives++;
        else this.frames++;
      }
      if (i >= n) return;
      const end = chunk.indexOf(FRAME_END, i);
      if (end === -1) {
        this.lfCarry = chunk[n - 1] === 10;
        return;
      }
      i = end + 2;
      this.atFrameStart = true;
    }
  }
}

export class SseReader {
  private reads = 0;
  private frames = 0;
  private keepalives = 0;
  private bytes = 0;
  private gaps = 0;
  private missing = 0;
  private firstSeq = 0;
  private lastSeq = 0;
  private matched = 0;
  private firstMatchAt = NaN;
  private lastMatchAt = NaN;
  private buffer = '';
  private readonly counter = new FrameCounter();
  private req: http.ClientRequest | undefined;
  private readonly typeNeedle: string | undefined;
  /** Arrival time per marker number (offset from marks.base); NaN = not seen. */
  readonly markTimes: Float64Array | undefined;
  private readonly sizes: Uint32Array | undefined;
  private sizeIndex = 0;
  private retained = 0;

  private constructor(private readonly options: ReaderOptions) {
    this.typeNeedle = options.match ? `"type":"${options.match.type}"` : undefined;
    if (options.marks) this.markTimes = new Float64Array(options.marks.count).fill(NaN);
    if (options.retainedWindow) this.sizes = new Uint32Array(options.retainedWindow);
  }

  static open(url: string, token: string, options: ReaderOptions = {}): Promise<SseReader> {
    const reader = new SseReader(options);
    return reader.connect(url, token).then(() => reader);
  }

  /** The marker number recorded at index 0 of `markTimes`. */
  get markBase(): number {
    return this.options.marks?.base ?? 0;
  }

  get isStalled(): boolean {
    return this.options.stalled === true;
  }

  stats(): ReaderStats {
    return {
      stalled: this.isStalled,
      reads: this.reads,
      frames: this.frames + this.counter.frames,
      keepalives: this.keepalives + this.counter.keepalives,
      bytes: this.bytes,
      gaps: this.gaps,
      missing: this.missing,
      firstSeq: this.firstSeq,
      lastSeq: this.lastSeq,
      matched: this.matched,
      firstMatchAt: this.firstMatchAt,
      lastMatchAt: this.lastMatchAt,
      retainedBytes: this.retained,
    };
  }

  /** Forget counts and marker times (a new measurement window on the same connection). */
  reset(): void {
    this.matched = 0;
    this.firstMatchAt = NaN;
    this.lastMatchAt = NaN;
    this.gaps = 0;
    this.missing = 0;
    this.markTimes?.fill(NaN);
  }

  close(): void {
    this.req?.destroy();
  }

  private connect(url: string, token: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.req = http.get(url, { headers: { authorization: `Bearer ${token}` }, agent: false }, (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`SSE ${url} answered ${res.statusCode}`));
          res.resume();
          return;
        }
        res.on('error', () => undefined);
        if (this.isStalled) {
          // Connected, never reading: no 'data' listener, paused.
          res.pause();
        } else if (this.options.countOnly) {
          res.on('data', (chunk: Buffer) => this.countFrames(chunk));
        } else {
          res.on('data', (chunk: Buffer) => this.onData(chunk, monoMs()));
        }
        resolve();
      });
      this.req.on('error', reject);
    });
  }

  private onData(chunk: Buffer, at: number): void {
    this.reads++;
    // latin1: one char per byte, so lengths are byte counts; markers and ids are ASCII.
    const text = this.buffer + chunk.toString('latin1');
    let start = 0;
    let end: number;
    while ((end = text.indexOf('\n\n', start)) !== -1) {
      this.onFrame(text.slice(start, end), at);
      start = end + 2;
    }
    this.buffer = start === 0 ? text : text.slice(start);
  }

  private countFrames(chunk: Buffer): void {
    this.reads++;
    this.bytes += chunk.length;
    this.counter.push(chunk);
  }

  private onFrame(frame: string, at: number): void {
    if (frame.charCodeAt(0) === 58 /* ':' */) {
      this.keepalives++;
      return;
    }
    this.frames++;
    this.bytes += frame.length + 2;
    if (this.sizes) {
      const i = this.sizeIndex++ % this.sizes.length;
      this.retained += frame.length + 2 - this.sizes[i]!;
      this.sizes[i] = frame.length + 2;
    }
    const seq = Number(frame.slice(4, frame.indexOf('\n')));
    if (this.lastSeq > 0 && seq !== this.lastSeq + 1) {
      this.gaps++;
      this.missing += Math.max(0, seq - this.lastSeq - 1);
    }
    if (this.firstSeq === 0) this.firstSeq = seq;
    this.lastSeq = seq;
    const match = this.options.match;
    if (match && frame.includes(this.typeNeedle!)) {
      const at0 = frame.indexOf(match.contains);
      if (at0 !== -1) {
        this.matched++;
        if (Number.isNaN(this.firstMatchAt)) this.firstMatchAt = at;
        this.lastMatchAt = at;
        if (this.markTimes) {
          const n = readNumber(frame, at0 + match.contains.length) - this.options.marks!.base;
          if (n >= 0 && n < this.markTimes.length && Number.isNaN(this.markTimes[n]!)) this.markTimes[n] = at;
        }
      }
    }
    this.options.onFrame?.(frame, at);
  }
}

/** The decimal number at `from` in `text` (-1 when there is none). */
export function readNumber(text: string, from: number): number {
  let n = 0;
  let i = from;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) break;
    n = n * 10 + (c - 48);
  }
  return i === from ? -1 : n;
}
