// Pictures out of a replay file (docs/replay.md "Frames"), decoded by the same ffmpeg that
// recorded it: for the agent and the gateway (the package entry `browser-telemetry-agent/replay`),
// e.g. the Playwright trace's screencast and a screenshot at a moment of the session.
//
// The contract:
// - A frame at video time t (ms from video time 0, which is the replay's `started_at`) is the
//   picture a player shows at t: the last frame whose timestamp is at or before t. A page that did
//   not paint keeps its picture; the recording repeats it at least once a second.
// - `times`: one picture per requested time, in the order asked; a time before 0 or past the end
//   of the video gives none (the result has fewer entries; each says its time).
// - `rate`: pictures every 1/rate s from `fromMs` (default 0) until `toMs` (default: the end of
//   the video), at most `maxFrames` (default 10,000).
// - `image`: `jpeg` (default; quality 2 best to 31, default 3) or `png`. `maxWidth`/`maxHeight`
//   shrink the pictures to fit, keeping the aspect ratio (never enlarging).
// - Works on a finished file and on a part file still being written or left by a crash (it reads
//   what is there). Rejects when the file cannot be read as video, or no encoder is found.
// - Each call runs ffmpeg: one process for `rate`, one per time for `times` (one after another).

import { spawn } from 'node:child_process';
import { frameArgs } from './ffmpeg-args.ts';
import { locateEncoder } from './encoder-binary.ts';
import { JpegStreamSplitter } from './jpeg.ts';

export interface FrameRequest {
  /** Video times, ms. Exclusive with `rate`. */
  times?: readonly number[];
  /** Pictures per second. Exclusive with `times`. */
  rate?: number;
  fromMs?: number;
  toMs?: number;
  maxFrames?: number;
  image?: 'jpeg' | 'png';
  jpegQuality?: number;
  maxWidth?: number;
  maxHeight?: number;
  /** The ffmpeg to run; by default the one replays are recorded with (--ffmpeg-path, PATH, the npm package). */
  ffmpegPath?: string;
}

export interface ExtractedFrame {
  /** Video time of the picture asked for, ms. */
  timeMs: number;
  mimeType: 'image/jpeg' | 'image/png';
  data: Buffer;
}

const DEFAULT_MAX_FRAMES = 10_000;

export async function extractFrames(file: string, request: FrameRequest): Promise<ExtractedFrame[]> {
  if ((request.times === undefined) === (request.rate === undefined)) throw new RangeError('extractFrames: give either times or rate');
  if (request.rate !== undefined && !(request.rate > 0 && Number.isFinite(request.rate))) throw new RangeError('extractFrames: rate must be a positive number');
  const binary = request.ffmpegPath === undefined ? await locateEncoder() : { path: request.ffmpegPath };
  const image = request.image ?? 'jpeg';
  const mimeType = image === 'jpeg' ? 'image/jpeg' : 'image/png';
  const shared = {
    input: file,
    image,
    ...(request.maxWidth === undefined ? {} : { maxWidth: request.maxWidth }),
    ...(request.maxHeight === undefined ? {} : { maxHeight: request.maxHeight }),
    ...(request.jpegQuality === undefined ? {} : { jpegQuality: request.jpegQuality }),
  } as const;
  if (request.rate !== undefined) {
    const fromMs = Math.max(0, request.fromMs ?? 0);
    const maxFrames = request.maxFrames ?? DEFAULT_MAX_FRAMES;
    const pictures = await runForPictures(
      binary.path,
      frameArgs({ ...shared, fromMs, rate: request.rate, ...(request.toMs === undefined ? {} : { toMs: request.toMs }), frames: maxFrames }),
      image,
    );
    return pictures.slice(0, maxFrames).map((data, i) => ({ timeMs: fromMs + (i * 1000) / request.rate!, mimeType, data }));
  }
  const frames: ExtractedFrame[] = [];
  for (const timeMs of request.times!) {
    if (!(timeMs >= 0)) continue;
    const [data] = await runForPictures(binary.path, frameArgs({ ...shared, fromMs: timeMs }), image);
    if (data) frames.push({ timeMs, mimeType, data });
  }
  return frames;
}

function runForPictures(path: string, args: string[], image: 'jpeg' | 'png'): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(path, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const splitter = image === 'jpeg' ? new JpegStreamSplitter() : new PngStreamSplitter();
    const pictures: Buffer[] = [];
    let stderr = '';
    let failure: Error | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      try {
        pictures.push(...splitter.push(chunk));
      } catch (err) {
        failure ??= err as Error;
        child.kill('SIGKILL');
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-2000)));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (failure) reject(failure);
      else if (code !== 0) reject(new Error(`ffmpeg could not read the frames (${signal ?? `code ${code}`}): ${stderr.trim().slice(-500)}`));
      else resolve(pictures);
    });
  });
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Splits concatenated PNGs: the signature, then chunks (length, type, data, CRC) up to IEND. */
export class PngStreamSplitter {
  private buffer: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Buffer[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const pictures: Buffer[] = [];
    for (;;) {
      const end = this.pictureEnd();
      if (end === undefined) break;
      pictures.push(this.buffer.subarray(0, end));
      this.buffer = this.buffer.subarray(end);
    }
    return pictures;
  }

  private pictureEnd(): number | undefined {
    const data = this.buffer;
    if (data.length < PNG_SIGNATURE.length) return undefined;
    if (data.compare(PNG_SIGNATURE, 0, 8, 0, 8) !== 0) throw new Error('not a PNG stream');
    let at = PNG_SIGNATURE.length;
    while (at + 8 <= data.length) {
      const length = data.readUInt32BE(at);
      const type = data.toString('latin1', at + 4, at + 8);
      const next = at + 12 + length;
      if (next > data.length) return undefined;
      if (type === 'IEND') return next;
      at = next;
    }
    return undefined;
  }
}
