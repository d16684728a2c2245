// Checking a replay's video: ffprobe (the encoder's own probe, from the dev dependency
// @ffprobe-installer/linux-x64) for the duration, and the colour of a frame at a video time from
// the replay kit's frame extraction (PNG, decoded here).

import { execFile } from 'node:child_process';
import { accessSync, chmodSync, constants, copyFileSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { inflateSync } from 'node:zlib';
import { extractFrames } from '../../../src/replay/frames.ts';

const execFileAsync = promisify(execFile);

let probe: string | undefined;

/**
 * The ffprobe binary. Its file mode in the package may lack the execute bit for other users
 * (npm installed it as another one): then a copy with it is used.
 */
export function ffprobePath(): string {
  if (probe) return probe;
  const packaged = join(dirname(createRequire(import.meta.url).resolve('@ffprobe-installer/linux-x64/package.json')), 'ffprobe');
  try {
    accessSync(packaged, constants.X_OK);
    probe = packaged;
  } catch {
    const copy = join(mkdtempSync(join(tmpdir(), 'bta-ffprobe-')), 'ffprobe');
    copyFileSync(packaged, copy);
    chmodSync(copy, 0o755);
    probe = copy;
  }
  return probe;
}

export interface ProbedVideo {
  durationS: number;
  codec: string;
  width: number;
  height: number;
  formatName: string;
}

export async function probeVideo(file: string): Promise<ProbedVideo> {
  const { stdout } = await execFileAsync(ffprobePath(), [
    '-v',
    'error',
    '-show_entries',
    'format=duration,format_name:stream=codec_name,width,height',
    '-select_streams',
    'v:0',
    '-of',
    'json',
    file,
  ]);
  const out = JSON.parse(stdout) as {
    format: { duration: string; format_name: string };
    streams: Array<{ codec_name: string; width: number; height: number }>;
  };
  const stream = out.streams[0]!;
  return { durationS: Number(out.format.duration), codec: stream.codec_name, width: stream.width, height: stream.height, formatName: out.format.format_name };
}

/** Chapters as ffprobe reads them. */
export async function probeChapters(file: string): Promise<Array<{ title: string; startS: number }>> {
  const { stdout } = await execFileAsync(ffprobePath(), ['-v', 'error', '-show_chapters', '-of', 'json', file]);
  const out = JSON.parse(stdout) as { chapters: Array<{ start_time: string; tags?: { title?: string } }> };
  return out.chapters.map((c) => ({ title: c.tags?.title ?? '', startS: Number(c.start_time) }));
}

export type Rgb = [number, number, number];

/** The colour at the middle of the frame shown at `timeMs` (undefined: no frame then). */
export async function colourAt(file: string, timeMs: number): Promise<Rgb | undefined> {
  const [frame] = await extractFrames(file, { times: [timeMs], image: 'png', maxWidth: 32, maxHeight: 32 });
  if (!frame) return undefined;
  const png = decodePng(frame.data);
  const at = (Math.floor(png.height / 2) * png.width + Math.floor(png.width / 2)) * png.channels;
  return [png.pixels[at]!, png.pixels[at + 1]!, png.pixels[at + 2]!];
}

/** Near a colour: every channel within `tolerance` (video compression shifts colours a little). */
export function near(actual: Rgb | undefined, expected: Rgb, tolerance = 40): boolean {
  return actual !== undefined && actual.every((c, i) => Math.abs(c - expected[i]!) <= tolerance);
}

/** An 8-bit RGB or RGBA, non-interlaced PNG (what ffmpeg's png encoder writes) to its pixels. */
export function decodePng(data: Buffer): { width: number; height: number; channels: number; pixels: Buffer } {
  let at = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (at < data.length) {
    const length = data.readUInt32BE(at);
    const type = data.toString('latin1', at + 4, at + 8);
    const body = data.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const bitDepth = body[8]!;
      const colourType = body[9]!;
      if (bitDepth !== 8 || (colourType !== 2 && colourType !== 6) || body[12] !== 0)
        throw new Error(`unsupported PNG: depth ${bitDepth}, colour type ${colourType}`);
      channels = colourType === 2 ? 3 : 4;
    } else if (type === 'IDAT') idat.push(body);
    else if (type === 'IEND') break;
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[y * stride + x - channels]! : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x]! : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels]! : 0;
      let predictor = 0;
      if (filter === 1) predictor = a;
      else if (filter === 2) predictor = b;
      else if (filter === 3) predictor = Math.floor((a + b) / 2);
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      pixels[y * stride + x] = (line[x]! + predictor) & 0xff;
    }
  }
  return { width, height, channels, pixels };
}
