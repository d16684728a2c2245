// One recording (docs/replay.md "Capture", "Stop"): the frames the screencast sends, at most
// `framerate` a second, handed to its encoder as they come, with their own times; when the page
// does not paint, the last picture is repeated once a second (a file cut by a crash still reaches
// its last second, and the still page costs one tiny frame a second); stopped on request, at its
// limits (duration, size) or when its encoder dies; then finalized: the encoder writes its last
// fragment, the fragments are copied into the final file with its duration and chapters, and the
// sidecar says it is finished.
//
// Owns: the encoder process, one timer (the frame held back by the rate cap) and one for the
// duration limit. The 1 s keepalive and the size check run on the process's shared beat, called
// by the service (`beat()`).

import { execFile } from 'node:child_process';
import { renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { ReplayStopReason } from '../../injected/schema.ts';
import { ReplayCatalogue, type ReplayRecord } from './catalogue.ts';
import type { EncoderBinary } from './encoder-binary.ts';
import { EncoderProcess, type EncoderExit } from './encoder-process.ts';
import { chapterMetadata, remuxArgs, type PictureBox } from './ffmpeg-args.ts';
import { BLACK_JPEG, jpegSize } from './jpeg.ts';
import { MAX_HEIGHT, MAX_WIDTH, type ScreenFrame } from './screencast.ts';

/** With no paint for this long, the last picture is written again (on the 1 s beat). */
export const KEEPALIVE_MS = 900;
/** The picture size while no tab has painted: the capture's cap. */
const DEFAULT_BOX: PictureBox = { width: MAX_WIDTH, height: MAX_HEIGHT };
/** How long the encoder may take to write its last fragment and exit. */
const ENCODER_FINISH_MS = 10_000;
/** How long the finalizing copy may take (a 10-minute recording takes well under a second). */
const REMUX_TIMEOUT_MS = 60_000;

/** A chapter from the provider: a title and when it starts, Unix µs (steps, docs/replay.md "Chapters"). */
export interface Chapter {
  title: string;
  startUs: number;
}
/**
 * The chapters of a recording, asked once when it is finalized with its time window (Unix µs,
 * end exclusive); marks outside the window are left out anyway. A `() => [...]` will do.
 */
export type ChapterProvider = (window: { fromUs: number; untilUs: number }) => ReadonlyArray<Chapter>;

export interface RecordingOptions {
  id: string;
  sessionId: string;
  framerate: number;
  maxDurationMs?: number;
  /** The size cap now: --replay-max-bytes, or less when the directory's budget has less left. */
  maxBytes: () => number;
  binary: EncoderBinary;
  catalogue: ReplayCatalogue;
  logger: Logger;
  chapters?: ChapterProvider;
  /** Unix ms. */
  now: () => number;
  /** Asks the service to stop this recording (a limit was reached, the encoder died). */
  requestStop: (reason: ReplayStopReason, error?: string) => void;
}

export class ReplayRecording {
  readonly id: string;
  readonly startedAtMs: number;
  private record: ReplayRecord;
  private encoder: EncoderProcess | undefined;
  /** The last picture written, and its video time (ms). */
  private lastJpeg: Buffer | undefined;
  private lastWrittenMs = -1;
  /** A frame held back by the rate cap, written when its slot comes unless a newer one replaces it. */
  private held: ScreenFrame | undefined;
  private heldTimer: NodeJS.Timeout | undefined;
  private durationTimer: NodeJS.Timeout | undefined;
  private stopping: Promise<ReplayRecord> | undefined;
  private readonly minGapMs: number;

  constructor(private readonly options: RecordingOptions) {
    this.id = options.id;
    this.startedAtMs = options.now();
    this.minGapMs = 1000 / options.framerate;
    this.record = {
      version: 1,
      replay_id: options.id,
      session_id: options.sessionId,
      state: 'recording',
      started_at_ms: this.startedAtMs,
      framerate: options.framerate,
      ...(options.maxDurationMs === undefined ? {} : { max_duration_in_seconds: options.maxDurationMs / 1000 }),
      mime_type: options.binary.format.mimeType,
      extension: options.binary.format.extension,
      file: ReplayCatalogue.partName(options.id, options.binary.format.extension),
      agent_pid: process.pid,
      encoder: { path: options.binary.path, version: options.binary.version },
    };
    options.catalogue.write(this.record);
    if (options.maxDurationMs !== undefined) {
      this.durationTimer = setTimeout(() => options.requestStop('max_duration'), options.maxDurationMs);
      this.durationTimer.unref();
    }
  }

  get info(): ReplayRecord {
    return this.record;
  }

  get isStopping(): boolean {
    return this.stopping !== undefined;
  }

  /** A frame of the tab in front. */
  offer(frame: ScreenFrame): void {
    if (this.stopping) return;
    const at = Math.max(0, Math.round(frame.timeMs - this.startedAtMs));
    if (this.lastWrittenMs < 0) {
      // The first picture opens the video at time 0 (the screencast sends it as it starts).
      this.write(0, frame.jpeg);
      return;
    }
    if (at - this.lastWrittenMs >= this.minGapMs) {
      this.dropHeld();
      this.write(Math.max(at, this.lastWrittenMs + 1), frame.jpeg);
      return;
    }
    // Too soon after the last one: held, so the page's final picture of a burst is not lost.
    this.held = frame;
    if (this.heldTimer === undefined) {
      const slot = this.lastWrittenMs + this.minGapMs;
      this.heldTimer = setTimeout(() => this.writeHeld(), Math.max(0, slot - (this.options.now() - this.startedAtMs)));
      this.heldTimer.unref();
    }
  }

  /** Every second: the keepalive repeat, the size cap, the encoder's health. */
  beat(): void {
    if (this.stopping) return;
    const exit = this.encoder?.exitStatus;
    if (exit !== undefined) {
      this.options.requestStop('encoder_failed', describeExit(exit));
      return;
    }
    const now = this.elapsedMs();
    if (this.lastWrittenMs < 0) {
      // Nothing painted since the start (no tab yet): the video starts black. The first beat may
      // come right after the start (the beat is shared), before the screencast's first frame.
      if (now >= KEEPALIVE_MS) this.write(0, BLACK_JPEG, DEFAULT_BOX);
    } else if (this.held === undefined && now - this.lastWrittenMs >= KEEPALIVE_MS && this.lastJpeg) {
      this.write(now, this.lastJpeg);
    }
    if (this.bytesOnDisk() >= this.options.maxBytes()) this.options.requestStop('max_size');
  }

  /** Bytes of the file being written. */
  bytesOnDisk(): number {
    try {
      return statSync(this.options.catalogue.path(this.record.file)).size;
    } catch {
      return 0;
    }
  }

  /**
   * Stops (once; later calls get the same result): the last picture is written at the stop time so
   * the video covers the wall time, the encoder finishes, the file is finalized.
   */
  stop(reason: ReplayStopReason, error?: string): Promise<ReplayRecord> {
    this.stopping ??= this.finish(reason, error);
    return this.stopping;
  }

  private async finish(reason: ReplayStopReason, error: string | undefined): Promise<ReplayRecord> {
    const endMs = this.elapsedMs();
    clearTimeout(this.durationTimer);
    if (this.held) {
      const held = this.held;
      this.dropHeld();
      const at = Math.max(Math.round(held.timeMs - this.startedAtMs), Math.ceil(this.lastWrittenMs + this.minGapMs));
      if (at < endMs) this.write(at, held.jpeg, undefined, true);
    }
    if (this.lastWrittenMs < 0) this.write(0, BLACK_JPEG, DEFAULT_BOX, true);
    if (this.lastJpeg && endMs > this.lastWrittenMs) this.write(endMs, this.lastJpeg, undefined, true);
    const encoder = this.encoder!;
    const exit = await encoder.finish(ENCODER_FINISH_MS);
    if (reason === 'encoder_failed') error ??= describeExit(exit);
    this.record = {
      ...this.record,
      state: 'finalizing',
      finished_at_ms: this.startedAtMs + Math.max(endMs, 0),
      stop_reason: reason,
      ...(error === undefined ? {} : { error }),
      frames: encoder.framesWritten,
      dropped_frames: encoder.framesDropped,
    };
    delete this.record.encoder_pid;
    this.options.catalogue.write(this.record);
    this.record = await finalizeFile(
      this.options.catalogue,
      this.record,
      this.options.binary,
      this.options.logger,
      chaptersOf(this.record, this.options.chapters, this.options.logger),
    );
    return this.record;
  }

  private writeHeld(): void {
    this.heldTimer = undefined;
    const held = this.held;
    this.held = undefined;
    if (!held || this.stopping) return;
    const at = Math.max(Math.round(held.timeMs - this.startedAtMs), Math.ceil(this.lastWrittenMs + this.minGapMs));
    this.write(at, held.jpeg);
  }

  private dropHeld(): void {
    clearTimeout(this.heldTimer);
    this.heldTimer = undefined;
    this.held = undefined;
  }

  private write(atMs: number, jpeg: Buffer, box?: PictureBox, closing = false): void {
    if (!this.encoder) this.startEncoder(box ?? boxOf(jpeg), jpegSize(jpeg) ?? DEFAULT_BOX);
    if (this.encoder!.write(atMs, jpeg, closing)) {
      this.lastWrittenMs = atMs;
      this.lastJpeg = jpeg;
    }
  }

  private startEncoder(box: PictureBox, firstFrame: { width: number; height: number }): void {
    const encoder = new EncoderProcess({
      binary: this.options.binary,
      output: this.options.catalogue.path(this.record.file),
      box,
      firstFrame,
      framerate: this.options.framerate,
      logger: this.options.logger,
    });
    this.encoder = encoder;
    this.record = { ...this.record, width: box.width, height: box.height, ...(encoder.pid === undefined ? {} : { encoder_pid: encoder.pid }) };
    this.options.catalogue.write(this.record);
    void encoder.whenExited().then((exit) => {
      if (!this.stopping) this.options.requestStop('encoder_failed', describeExit(exit));
    });
  }

  private elapsedMs(): number {
    return Math.max(0, Math.round(this.options.now() - this.startedAtMs));
  }
}

/** The ffmetadata chapters of a stopped recording from `provider`; none when it has none or fails. */
export function chaptersOf(record: ReplayRecord, provider: ChapterProvider | undefined, logger: Logger): string | undefined {
  if (!provider || record.finished_at_ms === undefined) return undefined;
  try {
    const chapters = provider({ fromUs: record.started_at_ms * 1000, untilUs: record.finished_at_ms * 1000 });
    const marks = chapters.map((chapter) => ({ title: chapter.title, startMs: chapter.startUs / 1000 - record.started_at_ms }));
    return chapterMetadata(marks, record.finished_at_ms - record.started_at_ms);
  } catch (err) {
    logger.warn({ replay_id: record.replay_id, err: (err as Error).message }, 'replay: no chapters (reading them failed)');
    return undefined;
  }
}

/** The picture box of a first frame: its size, even (4:2:0 video), within the cap. */
function boxOf(jpeg: Buffer): PictureBox {
  const size = jpegSize(jpeg);
  if (!size) return DEFAULT_BOX;
  const even = (n: number, max: number) => Math.max(2, Math.min(max, n + (n % 2)));
  return { width: even(size.width, DEFAULT_BOX.width), height: even(size.height, DEFAULT_BOX.height) };
}

function describeExit(exit: EncoderExit): string {
  const how = exit.signal !== null ? `killed by ${exit.signal}` : `exited with code ${exit.code}`;
  return exit.stderr === '' ? `the encoder ${how}` : `the encoder ${how}: ${exit.stderr.slice(-500)}`;
}

/**
 * Turns a replay's part file into its final file (also for a recording an earlier agent left
 * behind): the fragments copied with `remuxArgs`, the chapters added; when the copy fails, the
 * part file itself becomes the final file (it plays, without the duration in its header). The
 * record is written `finished` with the file's size.
 */
export async function finalizeFile(
  catalogue: ReplayCatalogue,
  record: ReplayRecord,
  binary: Pick<EncoderBinary, 'path' | 'format'>,
  logger: Logger,
  chapters: string | undefined,
): Promise<ReplayRecord> {
  const part = catalogue.path(ReplayCatalogue.partName(record.replay_id, record.extension));
  const finalName = ReplayCatalogue.finalName(record.replay_id, record.extension);
  const final = catalogue.path(finalName);
  const work = `${final}.tmp-${process.pid}`;
  const chaptersFile = chapters === undefined ? undefined : `${part}.chapters.txt`;
  const format = binary.format.extension === record.extension ? binary.format : { ...binary.format, extension: record.extension, mimeType: record.mime_type };
  try {
    if (chaptersFile) writeFileSync(chaptersFile, chapters!, { mode: 0o600 });
    await run(binary.path, remuxArgs(part, work, format, chaptersFile));
    renameSync(work, final);
    rmSync(part, { force: true });
  } catch (err) {
    rmSync(work, { force: true });
    logger.warn(
      { replay_id: record.replay_id, err: (err as Error).message },
      'replay: the finalizing copy failed; the recorded fragments are kept as the file',
    );
    try {
      renameSync(part, final);
    } catch {
      // No part file either: nothing was recorded.
    }
  } finally {
    if (chaptersFile) rmSync(chaptersFile, { force: true });
  }
  let size = 0;
  try {
    size = statSync(final).size;
  } catch {
    // Nothing to serve; the record says 0 bytes.
  }
  const finished: ReplayRecord = { ...record, state: 'finished', file: finalName, size_bytes: size };
  catalogue.write(finished);
  return finished;
}

function run(path: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(path, args, { timeout: REMUX_TIMEOUT_MS }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`${err.message.split('\n')[0]} ${stderr.slice(-500)}`));
      else resolve();
    });
  });
}
