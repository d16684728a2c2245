// The encoder's command lines (docs/replay.md "Formats"), pure: what the recorder, the finalizer
// and the frame extraction run.

import type { ReplayFormat } from './encoder-binary.ts';

/** The picture every frame is scaled into (letterboxed), even-sized for 4:2:0 video. */
export interface PictureBox {
  width: number;
  height: number;
}

export interface RecordArgsOptions {
  format: ReplayFormat;
  box: PictureBox;
  /** The frame rate cap, also the keyframe spacing's base. */
  framerate: number;
  /** The option that keeps the frames' own timestamps: `-fps_mode` (ffmpeg ≥ 5.1) or `-vsync` (older). */
  fpsModeOption: '-fps_mode' | '-vsync';
  output: string;
}

/**
 * Fragment length of the MP4 being written, µs: a kill -9 of the encoder loses at most the
 * fragment in progress (docs/replay.md "Crash safety").
 */
export const FRAGMENT_US = 1_000_000;
/** Bit rate cap of the video (a page full of motion stays within the bytes-per-minute budget). */
export const MAX_BITRATE = '900k';

/**
 * ffmpeg reading the Matroska frame stream (matroska-frames.ts) on stdin and writing the replay
 * while recording: MP4 fragments of at most FRAGMENT_US (moov first and empty, so the file plays
 * up to its last fragment whatever happens to the process), or WebM clusters of at most 1 s.
 * Keyframes every 2 × framerate frames: 2 s of video when the page paints at the full rate; a
 * page that does not paint gets one only every 2 × framerate keepalive repeats, so a still page
 * costs almost nothing (docs/replay.md "Formats").
 */
export function recordArgs(options: RecordArgsOptions): string[] {
  const { box, format } = options;
  const input = [
    '-hide_banner',
    '-loglevel',
    'error',
    // Start encoding at the first frame: the stream header says all there is to know.
    '-probesize',
    '32',
    '-analyzeduration',
    '0',
    '-f',
    'matroska',
    '-i',
    'pipe:0',
  ];
  const filter = `scale=${box.width}:${box.height}:force_original_aspect_ratio=decrease,pad=${box.width}:${box.height}:(ow-iw)/2:(oh-ih)/2,format=yuv420p`;
  const keyframes = String(2 * options.framerate);
  const video =
    format.encoder === 'libx264'
      ? [
          '-c:v',
          'libx264',
          '-preset',
          'veryfast',
          '-tune',
          'zerolatency',
          '-crf',
          '28',
          '-maxrate',
          MAX_BITRATE,
          '-bufsize',
          '1800k',
          '-g',
          keyframes,
          '-threads',
          '1',
        ]
      : ['-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', MAX_BITRATE, '-crf', '30', '-g', keyframes, '-threads', '1'];
  const container =
    format.extension === 'mp4'
      ? ['-f', 'mp4', '-movflags', 'frag_keyframe+empty_moov+default_base_moof', '-frag_duration', String(FRAGMENT_US)]
      : ['-f', 'webm', '-live', '1', '-cluster_time_limit', String(FRAGMENT_US / 1000)];
  return [...input, '-vf', filter, ...video, options.fpsModeOption, 'vfr', '-an', ...container, '-y', options.output];
}

/**
 * The finalizing remux (docs/replay.md "Stop"): the fragments copied, not re-encoded, into a file
 * that carries its duration and index (MP4: the index first, `faststart`, so a player starts
 * without fetching the end), with the chapters of `chapters` (an ffmetadata file) when given.
 */
export function remuxArgs(input: string, output: string, format: ReplayFormat, chapters?: string): string[] {
  const chapterInputs = chapters === undefined ? [] : ['-f', 'ffmetadata', '-i', chapters];
  const chapterMaps = chapters === undefined ? [] : ['-map_metadata', '1', '-map_chapters', '1'];
  const container = format.extension === 'mp4' ? ['-f', 'mp4', '-movflags', '+faststart'] : ['-f', 'webm'];
  return ['-hide_banner', '-loglevel', 'error', '-i', input, ...chapterInputs, '-map', '0:v', ...chapterMaps, '-c', 'copy', ...container, '-y', output];
}

/** A chapter: its title and where it starts, ms from video time 0. */
export interface ChapterMark {
  title: string;
  startMs: number;
}

/**
 * An ffmetadata file of chapters: each runs until the next one starts, the last until
 * `durationMs`. Marks outside the video are left out; titles are escaped as the format wants.
 */
export function chapterMetadata(marks: readonly ChapterMark[], durationMs: number): string | undefined {
  const inside = marks
    .filter((mark) => mark.startMs >= 0 && mark.startMs < durationMs)
    .map((mark) => ({ title: mark.title, startMs: Math.round(mark.startMs) }))
    .sort((a, b) => a.startMs - b.startMs);
  if (inside.length === 0) return undefined;
  const lines = [';FFMETADATA1'];
  inside.forEach((mark, i) => {
    const end = i + 1 < inside.length ? inside[i + 1]!.startMs : Math.round(durationMs);
    lines.push('[CHAPTER]', 'TIMEBASE=1/1000', `START=${mark.startMs}`, `END=${Math.max(end, mark.startMs)}`, `title=${escapeMetadata(mark.title)}`);
  });
  return `${lines.join('\n')}\n`;
}

/** ffmetadata values: `=`, `;`, `#`, `\` and line breaks are escaped with a backslash. */
function escapeMetadata(value: string): string {
  return value.replace(/[=;#\\\n]/g, (c) => `\\${c}`).replace(/\r/g, '');
}

export interface FrameArgsOptions {
  input: string;
  /** The first frame's time, ms from video time 0. */
  fromMs: number;
  /** Frames per second from `fromMs`; one frame when undefined. */
  rate?: number;
  /** Video time to stop at (exclusive), ms; the end of the video when undefined. */
  toMs?: number;
  image: 'jpeg' | 'png';
  /** Downscale to fit (never upscale). */
  maxWidth?: number;
  maxHeight?: number;
  /** JPEG quality, 2 (best) to 31 (ffmpeg's qscale). */
  jpegQuality?: number;
  frames?: number;
}

/**
 * Frames as a player shows them: at time t, the last frame whose timestamp is at or before t (a
 * page that did not paint keeps its picture). Seeking without dropping the frames before the
 * seek point (`-noaccurate_seek`) and keeping the file's timestamps (`-copyts`), the fps filter
 * starting at `fromMs` and rounding down emits, for each output time, the frame current then.
 */
export function frameArgs(options: FrameArgsOptions): string[] {
  const from = (options.fromMs / 1000).toFixed(3);
  const rate = options.rate ?? 1000;
  // The last frame is held for one output step: the fps filter ends its output at the last frame's
  // own time rounded down, so without it the step that frame falls in would be missing.
  const filters = [`tpad=stop_mode=clone:stop_duration=${(1 / rate).toFixed(3)}`, `fps=fps=${rate}:start_time=${from}:round=down`];
  if (options.maxWidth !== undefined || options.maxHeight !== undefined) {
    const w = options.maxWidth ?? -1;
    const h = options.maxHeight ?? -1;
    // Fit inside the box, never enlarge.
    filters.push(`scale=w='min(iw,${w === -1 ? 'iw' : w})':h='min(ih,${h === -1 ? 'ih' : h})':force_original_aspect_ratio=decrease`);
  }
  const output =
    options.image === 'jpeg'
      ? ['-c:v', 'mjpeg', '-pix_fmt', 'yuvj420p', '-q:v', String(options.jpegQuality ?? 3), '-f', 'image2pipe']
      : ['-c:v', 'png', '-f', 'image2pipe'];
  const until = options.toMs === undefined ? [] : ['-to', (options.toMs / 1000).toFixed(3)];
  const count = options.rate === undefined ? ['-frames:v', '1'] : options.frames === undefined ? [] : ['-frames:v', String(options.frames)];
  return [
    '-hide_banner',
    '-loglevel',
    'error',
    '-nostdin',
    '-noaccurate_seek',
    '-ss',
    from,
    '-copyts',
    '-i',
    options.input,
    ...until,
    '-vf',
    filters.join(','),
    ...count,
    '-an',
    ...output,
    'pipe:1',
  ];
}
