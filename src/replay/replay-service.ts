// The replays of this session (docs/replay.md): at most one recording at a time, the replays of
// the data directory listed across restarts, a recording an earlier agent left behind (kill -9)
// finalized at start, retention with the event stores' budget, and the replay_started /
// replay_stopped events. What the HTTP routes and the agent's wiring use.
//
// Owns: the current recording and its screencast capture (only while one runs: no recording, no
// screencast), the finalizations in progress, a subscription to the shared 1 s beat (the
// recording's keepalive and size check; retention once a minute), and, without a data directory,
// a temporary directory removed at close.

import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ReplayStartedData, ReplayStopReason, ReplayStoppedData } from '../../injected/schema.ts';
import type { Heartbeats } from '../heartbeat.ts';
import type { IgnoredFailures } from '../browser/cdp-errors.ts';
import { newReplayId, ReplayCatalogue, type ReplayRecord } from './catalogue.ts';
import { locateEncoder, type EncoderBinary } from './encoder-binary.ts';
import { chaptersOf, finalizeFile, ReplayRecording, type ChapterProvider } from './recording.ts';
import { enforceReplayRetention } from './retention.ts';
import { ScreencastCapture, type CaptureScope } from './screencast.ts';

/** `framerate` (docs/replay.md "API"): the default, and the range accepted. */
export const DEFAULT_FRAMERATE = 10;
export const MIN_FRAMERATE = 1;
/** Above this the official client says a GPU is needed; this agent encodes on the CPU. */
export const MAX_FRAMERATE = 20;
export const MAX_DURATION_SECONDS = 86_400;
/** How long a download waits for a replay being finalized before answering 409. */
export const FINALIZE_WAIT_MS = 10_000;
/** Retention runs every this many beats (seconds), and after every recording. */
const RETENTION_BEATS = 60;
/** How long the encoder an earlier agent left behind gets to finish its file. */
const ORPHAN_ENCODER_WAIT_MS = 5_000;
/** Below this left of the budget, a recording is refused (it would stop at once). */
const MIN_ROOM_BYTES = 1024 * 1024;

export type ReplayErrorCode = 'not_found' | 'replay_in_progress' | 'replay_not_recording' | 'replay_not_ready' | 'replay_unavailable';

/** A replay operation refused (docs/replay.md "Errors"); the HTTP layer answers it. */
export class ReplayError extends Error {
  override name = 'ReplayError';
  constructor(
    readonly code: ReplayErrorCode,
    message: string,
    /** Set when trying again later can succeed (a replay being finalized): seconds to wait. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export type ReplayEvent = { type: 'replay_started'; data: ReplayStartedData; tsUs: number } | { type: 'replay_stopped'; data: ReplayStoppedData; tsUs: number };

export interface ReplayServiceOptions {
  sessionId: string;
  /** The data directory (replays go to `<dataDir>/replays`); undefined: a temporary directory removed at close. */
  dataDir: string | undefined;
  retainBytes: number;
  retainMs: number;
  /** --replay-max-bytes: the size cap of one recording. */
  maxBytes: number;
  /** --ffmpeg-path. */
  ffmpegPath?: string;
  logger: Logger;
  /** The agent's beats (retention, the duration cap) and its count of best-effort CDP failures. */
  heartbeats: Heartbeats;
  failures: IgnoredFailures;
  /** replay_started and replay_stopped, to the session's event log. */
  emit: (event: ReplayEvent) => void;
  /** The chapters of a finished recording (docs/replay.md "Chapters"); none when absent. */
  chapters?: ChapterProvider;
  now?: () => number;
}

export interface StartParams {
  framerate: number;
  maxDurationSeconds?: number;
}

/** A replay's file, ready to serve. */
export interface ReplayFile {
  path: string;
  size: number;
  mimeType: string;
  record: ReplayRecord;
}

export class ReplayService {
  readonly catalogue: ReplayCatalogue;
  /** The encoder, found in the background from the start (its path and version are logged). */
  readonly encoder: Promise<EncoderBinary>;
  private current: { recording: ReplayRecording; capture: ScreencastCapture; stopBeat: () => void } | undefined;
  private readonly finalizing = new Map<string, Promise<ReplayRecord>>();
  private scope: CaptureScope | undefined;
  private readonly now: () => number;
  private readonly temporaryDir: string | undefined;
  private readonly stopRetentionBeat: () => void;
  /** Budget bytes the recording may still use beyond what it holds (the last retention pass). */
  private roomLeft = Infinity;
  private closed = false;

  constructor(private readonly options: ReplayServiceOptions) {
    this.now = options.now ?? Date.now;
    if (options.dataDir === undefined) this.temporaryDir = mkdtempSync(join(tmpdir(), 'bta-replays-'));
    this.catalogue = new ReplayCatalogue(this.temporaryDir ?? join(options.dataDir!, 'replays'));
    this.encoder = locateEncoder({ ffmpegPath: options.ffmpegPath });
    this.encoder.then(
      (binary) =>
        options.logger.info({ encoder: binary.path, source: binary.source, version: binary.version, format: binary.format.mimeType }, 'replay encoder'),
      (err: unknown) => options.logger.warn({ err: (err as Error).message }, 'replays are unavailable: no encoder'),
    );
    this.recoverInterrupted();
    this.retain();
    this.stopRetentionBeat = options.heartbeats.of(1000).every(RETENTION_BEATS, () => this.retain());
  }

  /** The CDP connection's targets to capture from (undefined while the browser is not connected). */
  bind(scope: CaptureScope | undefined): void {
    this.scope = scope;
    this.current?.capture.bind(scope);
  }

  /** This session's replays, oldest first. */
  list(): ReplayRecord[] {
    return this.catalogue
      .ofSession(this.options.sessionId)
      .map((record) => (record.replay_id === this.current?.recording.id ? this.current.recording.info : record));
  }

  /** The id of the recording in progress, if any. */
  get recordingId(): string | undefined {
    return this.current?.recording.id;
  }

  async start(params: StartParams): Promise<ReplayRecord> {
    if (this.closed) throw new ReplayError('replay_unavailable', 'the session is ending');
    this.refuseWhileRecording();
    let binary: EncoderBinary;
    try {
      binary = await this.encoder;
    } catch (err) {
      throw new ReplayError('replay_unavailable', `no encoder to record with: ${(err as Error).message}`);
    }
    // Checked again: another start may have won while the encoder was looked up.
    this.refuseWhileRecording();
    this.retain();
    if (this.roomLeft < MIN_ROOM_BYTES) {
      throw new ReplayError(
        'replay_unavailable',
        'no room left for a recording: the data directory is at --retain-bytes (the event stores take their share first)',
      );
    }
    const id = newReplayId();
    const recording: ReplayRecording = new ReplayRecording({
      id,
      sessionId: this.options.sessionId,
      framerate: params.framerate,
      ...(params.maxDurationSeconds === undefined ? {} : { maxDurationMs: params.maxDurationSeconds * 1000 }),
      maxBytes: (): number => Math.min(this.options.maxBytes, recording.bytesOnDisk() + this.roomLeft),
      binary,
      catalogue: this.catalogue,
      logger: this.options.logger,
      ...(this.options.chapters === undefined ? {} : { chapters: this.options.chapters }),
      now: this.now,
      requestStop: (reason, error) => {
        if (this.current?.recording === recording) void this.stopCurrent(reason, error);
      },
    });
    const capture = new ScreencastCapture((frame) => recording.offer(frame), this.options.failures, this.options.logger, this.now);
    let beats = 0;
    const stopBeat = this.options.heartbeats.of(1000).every(1, () => {
      // The budget left is re-read every 10 s while recording (a directory listing and stats).
      if (++beats % 10 === 0) this.retain();
      recording.beat();
    });
    this.current = { recording, capture, stopBeat };
    capture.bind(this.scope);
    const info = recording.info;
    this.options.logger.info({ replay_id: id, framerate: params.framerate, max_duration_in_seconds: params.maxDurationSeconds }, 'replay started');
    this.options.emit({
      type: 'replay_started',
      tsUs: recording.startedAtMs * 1000,
      data: {
        replay_id: id,
        framerate: params.framerate,
        ...(params.maxDurationSeconds === undefined ? {} : { max_duration_in_seconds: params.maxDurationSeconds }),
        mime_type: info.mime_type,
      },
    });
    return info;
  }

  /** Stops the recording `id` and resolves once its file is final. */
  async stop(id: string): Promise<ReplayRecord> {
    const record = this.ownRecord(id);
    if (this.current?.recording.id === id) return this.stopCurrent('requested');
    const pending = this.finalizing.get(id);
    const when = record.finished_at_ms === undefined ? '' : ` at ${new Date(record.finished_at_ms).toISOString()}`;
    throw new ReplayError(
      'replay_not_recording',
      `replay ${id} is not recording: it stopped${when} (${record.stop_reason ?? 'interrupted'})${pending ? ' and is being finalized' : ''}`,
    );
  }

  /**
   * The file of replay `id` once it is final: a replay being finalized is waited for (up to
   * `waitMs`); one still recording, or not final in time, is refused with replay_not_ready.
   */
  async file(id: string, waitMs = FINALIZE_WAIT_MS): Promise<ReplayFile> {
    let record = this.ownRecord(id);
    if (this.current?.recording.id === id) {
      throw new ReplayError('replay_not_ready', `replay ${id} is still recording: stop it first (POST .../replays/${id}/stop)`);
    }
    if (record.state !== 'finished') {
      const pending = this.finalizing.get(id);
      const finished = pending === undefined ? undefined : await withTimeout(pending, waitMs);
      if (finished === undefined) throw new ReplayError('replay_not_ready', `replay ${id} is being finalized; try again shortly`, 1);
      record = finished;
    }
    const path = this.catalogue.path(record.file);
    let size: number;
    try {
      size = statSync(path).size;
    } catch {
      throw new ReplayError('not_found', `replay ${id} has no file (removed by retention, or nothing was recorded)`);
    }
    return { path, size, mimeType: record.mime_type, record };
  }

  /**
   * Ends the recording in progress, if any (`session_deleted`, `shutdown`), and waits for every
   * finalization. Idempotent; later starts are refused.
   */
  async close(reason: 'session_deleted' | 'shutdown'): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.current) void this.stopCurrent(reason);
    this.stopRetentionBeat();
    await Promise.allSettled([...this.finalizing.values()]);
    if (this.temporaryDir !== undefined) rmSync(this.temporaryDir, { recursive: true, force: true });
  }

  private refuseWhileRecording(): void {
    const running = this.current?.recording;
    if (running) {
      throw new ReplayError(
        'replay_in_progress',
        `replay ${running.id} is recording since ${new Date(running.startedAtMs).toISOString()}; one recording at a time: stop it first (POST .../replays/${running.id}/stop)`,
      );
    }
  }

  /** The record of one of this session's replays; not_found otherwise. */
  private ownRecord(id: string): ReplayRecord {
    if (this.current?.recording.id === id) return this.current.recording.info;
    const record = this.catalogue.get(id);
    if (record === undefined || record.session_id !== this.options.sessionId) throw new ReplayError('not_found', `replay ${id} not found`);
    return record;
  }

  /** Stops the recording in progress (the caller checked there is one). */
  private stopCurrent(reason: ReplayStopReason, error?: string): Promise<ReplayRecord> {
    const current = this.current!;
    this.current = undefined;
    current.capture.close();
    current.stopBeat();
    const { recording } = current;
    const done = recording.stop(reason, error).then((record) => {
      this.finalizing.delete(recording.id);
      this.announceStopped(record);
      this.retain();
      return record;
    });
    this.finalizing.set(recording.id, done);
    done.catch((err: unknown) => {
      this.finalizing.delete(recording.id);
      this.options.logger.error({ replay_id: recording.id, err }, 'replay: stopping failed');
    });
    return done;
  }

  private announceStopped(record: ReplayRecord): void {
    const finishedAt = record.finished_at_ms ?? record.started_at_ms;
    const data: ReplayStoppedData = {
      replay_id: record.replay_id,
      reason: record.stop_reason ?? 'interrupted',
      duration_ms: Math.max(0, finishedAt - record.started_at_ms),
      size_bytes: record.size_bytes ?? 0,
      ...(record.frames === undefined ? {} : { frames: record.frames }),
      ...(record.dropped_frames ? { dropped_frames: record.dropped_frames } : {}),
      ...(record.error === undefined ? {} : { error: record.error }),
    };
    this.options.logger.info({ ...data }, 'replay stopped');
    if (record.session_id === this.options.sessionId) this.options.emit({ type: 'replay_stopped', tsUs: finishedAt * 1000, data });
  }

  private retain(): void {
    try {
      const { leftForRecordings } = enforceReplayRetention({
        catalogue: this.catalogue,
        dataDir: this.options.dataDir,
        retainBytes: this.options.retainBytes,
        retainMs: this.options.retainMs,
        now: this.now(),
        removed: (record, why) => this.options.logger.info({ replay_id: record.replay_id, session_id: record.session_id, why }, 'replay removed by retention'),
      });
      this.roomLeft = leftForRecordings;
    } catch (err) {
      this.options.logger.warn({ err: (err as Error).message }, 'replay retention failed');
    }
  }

  /**
   * Recordings left `recording` or `finalizing` by an agent that is gone (kill -9, a power loss):
   * their encoder saw its input end and wrote what it held; they are finalized now, in the
   * background (a download waits for it), stopped `interrupted` at the file's last write.
   */
  private recoverInterrupted(): void {
    for (const record of this.catalogue.all()) {
      if (record.state === 'finished') continue;
      if (record.agent_pid !== process.pid && isAlive(record.agent_pid)) continue;
      const done = this.recover(record).then(
        (finished) => {
          this.finalizing.delete(record.replay_id);
          this.announceStopped(finished);
          return finished;
        },
        (err: unknown) => {
          this.finalizing.delete(record.replay_id);
          this.options.logger.error({ replay_id: record.replay_id, err }, 'replay: recovering an interrupted recording failed');
          throw err;
        },
      );
      done.catch(() => undefined);
      this.finalizing.set(record.replay_id, done);
    }
  }

  private async recover(record: ReplayRecord): Promise<ReplayRecord> {
    if (record.encoder_pid !== undefined) await endOrphanEncoder(record.encoder_pid, record.replay_id);
    const part = this.catalogue.path(ReplayCatalogue.partName(record.replay_id, record.extension));
    let lastWrite = record.finished_at_ms ?? record.started_at_ms;
    try {
      lastWrite = Math.max(record.started_at_ms, statSync(part).mtimeMs);
    } catch {
      // No part file: it was renamed already, or nothing was recorded.
    }
    const interrupted: ReplayRecord = {
      ...record,
      state: 'finalizing',
      finished_at_ms: record.finished_at_ms ?? Math.round(lastWrite),
      stop_reason: record.stop_reason ?? 'interrupted',
      error: record.error ?? `the agent (pid ${record.agent_pid}) ended without finalizing it`,
    };
    delete interrupted.encoder_pid;
    this.catalogue.write(interrupted);
    this.options.logger.warn({ replay_id: record.replay_id, agent_pid: record.agent_pid }, 'replay: finalizing a recording an earlier agent left behind');
    let binary: EncoderBinary;
    try {
      binary = await this.encoder;
    } catch {
      // No encoder now: the fragments are kept as they are (they play).
      return finalizeFile(
        this.catalogue,
        interrupted,
        { path: '/nonexistent', format: { extension: record.extension, mimeType: record.mime_type, encoder: 'libx264' } },
        this.options.logger,
        undefined,
      );
    }
    return finalizeFile(this.catalogue, interrupted, binary, this.options.logger, chaptersOf(interrupted, this.options.chapters, this.options.logger));
  }
}

/** Waits for an earlier agent's encoder of `replayId` to exit (it is finishing its file); killed after a while. */
async function endOrphanEncoder(pid: number, replayId: string): Promise<void> {
  const isOurs = () => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(replayId);
    } catch {
      return false;
    }
  };
  const deadline = Date.now() + ORPHAN_ENCODER_WAIT_MS;
  while (isOurs() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  if (isOurs()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.catch(() => undefined),
    new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
