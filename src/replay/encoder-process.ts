// One ffmpeg process encoding one recording (docs/replay.md "The encoder"): frames go to its stdin
// as a Matroska stream as they come (matroska-frames.ts) and it writes the fragmented file. Owned
// by the recording: ended by finish() (stdin closed, the encoder writes its last fragment and
// exits), or killed. It outlives a kill -9 of the agent just long enough to see its stdin close
// and write what it holds, so such a file plays to its last frame.
//
// A slow encoder never holds the browser or the agent: a frame that would queue more than
// MAX_QUEUED_BYTES for its stdin is dropped and counted, never buffered without bound.

import { spawn, type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import type { Logger } from 'pino';
import type { EncoderBinary } from './encoder-binary.ts';
import { recordArgs, type PictureBox } from './ffmpeg-args.ts';
import { frameCluster, streamHeader } from './matroska-frames.ts';

/** Bytes that may wait for the encoder's stdin (a few frames) before frames are dropped. */
export const MAX_QUEUED_BYTES = 4 * 1024 * 1024;
/** The encoder runs below the browser's priority: under load the browser's pages come first (docs/replay.md "Costs"). */
export const ENCODER_NICE = 10;
/** What is kept of the encoder's stderr, for the error of an encoder that failed. */
const STDERR_TAIL_CHARS = 2000;

export interface EncoderExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The end of what it wrote to stderr. */
  stderr: string;
}

export interface EncoderProcessOptions {
  binary: EncoderBinary;
  output: string;
  box: PictureBox;
  /**
   * The pixel size of the first frame, announced in the stream header: ffmpeg's MJPEG decoding
   * fails on the frames after the first when the header announces another size than the first
   * frame's (measured with ffmpeg 4.1); later frames may change size.
   */
  firstFrame: { width: number; height: number };
  framerate: number;
  logger?: Logger;
}

export class EncoderProcess {
  private readonly child: ChildProcess;
  private stderrTail = '';
  private exit: EncoderExit | undefined;
  private readonly exited: Promise<EncoderExit>;
  private ended = false;
  framesWritten = 0;
  framesDropped = 0;
  /** The last frame's time written, ms. */
  lastTimeMs = -1;

  constructor(private readonly options: EncoderProcessOptions) {
    const args = recordArgs({
      format: options.binary.format,
      box: options.box,
      framerate: options.framerate,
      fpsModeOption: options.binary.fpsModeOption,
      output: options.output,
    });
    this.child = spawn(options.binary.path, args, { stdio: ['pipe', 'ignore', 'pipe'] });
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exit = { code, signal, stderr: this.stderrTail.trim() };
        resolve(this.exit);
      });
      // A binary that cannot be started at all (removed since it was found) exits at once.
      this.child.once('error', (err) => {
        this.exit ??= { code: null, signal: null, stderr: err.message };
        resolve(this.exit);
      });
    });
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL_CHARS);
    });
    // EPIPE once the encoder is gone: its exit says what happened.
    this.child.stdin!.on('error', () => undefined);
    if (this.child.pid !== undefined) {
      try {
        setPriority(this.child.pid, ENCODER_NICE);
      } catch {
        // Not permitted here: it runs at the agent's priority.
      }
    }
    this.child.stdin!.write(streamHeader({ width: options.firstFrame.width, height: options.firstFrame.height, framerate: options.framerate }));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The exit, once the process ended. */
  get exitStatus(): EncoderExit | undefined {
    return this.exit;
  }

  /** Resolves when the process exits (for whatever reason). */
  whenExited(): Promise<EncoderExit> {
    return this.exited;
  }

  /**
   * Hands one frame to the encoder at `timeMs` (ms from video time 0, after the previous frame's);
   * false when it was dropped (the encoder is behind, ended, or the time does not move forward).
   * `closing` frames (the last one or two at a stop, which make the video reach the stop time) are
   * queued even when the encoder is behind: they are bounded and the video's end depends on them.
   */
  write(timeMs: number, jpeg: Buffer, closing = false): boolean {
    const stdin = this.child.stdin!;
    if (this.ended || this.exit !== undefined || !stdin.writable || timeMs <= this.lastTimeMs) {
      this.framesDropped++;
      return false;
    }
    if (!closing && stdin.writableLength > MAX_QUEUED_BYTES) {
      this.framesDropped++;
      return false;
    }
    for (const piece of frameCluster(timeMs, jpeg)) stdin.write(piece);
    this.lastTimeMs = timeMs;
    this.framesWritten++;
    return true;
  }

  /**
   * No more frames: the encoder writes what it holds and exits. Killed when it has not exited
   * within `timeoutMs` (a hung encoder does not hold a stop or a shutdown).
   */
  async finish(timeoutMs: number): Promise<EncoderExit> {
    this.ended = true;
    this.child.stdin!.end();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    await Promise.race([this.exited, deadline]);
    clearTimeout(timer);
    if (this.exit === undefined) {
      this.options.logger?.warn({ pid: this.pid, timeout_ms: timeoutMs }, 'replay encoder did not finish in time; killed');
      this.child.kill('SIGKILL');
    }
    return this.exited;
  }

  /** Ends the process at once (its last fragment is lost). */
  kill(): void {
    this.ended = true;
    if (this.exit === undefined) this.child.kill('SIGKILL');
  }
}
