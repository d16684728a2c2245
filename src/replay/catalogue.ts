// The replays of a data directory (docs/replay.md "Files"): `<data dir>/replays/`, one JSON
// sidecar per replay beside its video, so replays are listed across restarts and another program
// (the gateway's archive) can read them without the agent:
//
//   <replay_id>.json        the record below (written atomically: temporary file, then rename)
//   <replay_id>.part.mp4    while recording: fragmented MP4 (or .part.webm), plays up to its last fragment
//   <replay_id>.mp4         once finished: the final file (or .webm)
//
// Every session of the directory keeps its replays there; a record names its session. The
// directory is 0700 and the files 0600: a recording shows everything that was on screen.

import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ReplayStopReason } from '../../injected/schema.ts';

export type ReplayState = 'recording' | 'finalizing' | 'finished';

/** Replay ids: 16 URL-safe characters, safe in a file name. */
export const REPLAY_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** One replay's sidecar (docs/replay.md "Files"). Times are Unix ms. */
export interface ReplayRecord {
  version: 1;
  replay_id: string;
  session_id: string;
  state: ReplayState;
  /** Video time 0. */
  started_at_ms: number;
  /** The end of the video; absent while recording. */
  finished_at_ms?: number;
  stop_reason?: ReplayStopReason;
  /** What went wrong (encoder_failed, interrupted). */
  error?: string;
  framerate: number;
  max_duration_in_seconds?: number;
  mime_type: 'video/mp4' | 'video/webm';
  extension: 'mp4' | 'webm';
  /** The file to serve, a name in the replays directory: the part file while recording, the final one after. */
  file: string;
  size_bytes?: number;
  /** Frames written; absent for an interrupted recording (its counts died with the agent). */
  frames?: number;
  dropped_frames?: number;
  /** The picture size, once the first frame came. */
  width?: number;
  height?: number;
  /** The agent process that records it (an interrupted recording's is gone). */
  agent_pid: number;
  /** The encoder process while recording. */
  encoder_pid?: number;
  encoder: { path: string; version: string };
}

export function newReplayId(): string {
  return randomBytes(12).toString('base64url');
}

export class ReplayCatalogue {
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** The part file name of a replay being recorded. */
  static partName(id: string, extension: string): string {
    return `${id}.part.${extension}`;
  }

  static finalName(id: string, extension: string): string {
    return `${id}.${extension}`;
  }

  path(name: string): string {
    return join(this.dir, name);
  }

  /** Writes a record atomically: readers see the old one or the new one, never half of one. */
  write(record: ReplayRecord): void {
    const target = join(this.dir, `${record.replay_id}.json`);
    const work = `${target}.tmp-${process.pid}`;
    writeFileSync(work, `${JSON.stringify(record, null, 1)}\n`, { mode: 0o600 });
    renameSync(work, target);
  }

  /** The record of `id`, or undefined (unknown, unreadable). */
  get(id: string): ReplayRecord | undefined {
    if (!REPLAY_ID_PATTERN.test(id)) return undefined;
    return readRecord(join(this.dir, `${id}.json`));
  }

  /** Every readable record of the directory, oldest first. */
  all(): ReplayRecord[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    return names
      .filter((name) => name.endsWith('.json') && REPLAY_ID_PATTERN.test(name.slice(0, -5)))
      .map((name) => readRecord(join(this.dir, name)))
      .filter((record): record is ReplayRecord => record !== undefined)
      .sort((a, b) => a.started_at_ms - b.started_at_ms);
  }

  /** The replays of one session, oldest first. */
  ofSession(sessionId: string): ReplayRecord[] {
    return this.all().filter((record) => record.session_id === sessionId);
  }

  /** Bytes of a replay's files on disk (the part file, the final one). */
  bytesOf(record: ReplayRecord): number {
    let bytes = 0;
    for (const name of [ReplayCatalogue.partName(record.replay_id, record.extension), ReplayCatalogue.finalName(record.replay_id, record.extension)]) {
      try {
        bytes += statSync(join(this.dir, name)).size;
      } catch {
        // Not there.
      }
    }
    return bytes;
  }

  /** Removes a replay: its files first, the record last (a crash in between leaves a record of a missing file, removed next time). */
  remove(record: ReplayRecord): void {
    for (const name of [ReplayCatalogue.partName(record.replay_id, record.extension), ReplayCatalogue.finalName(record.replay_id, record.extension)]) {
      rmSync(join(this.dir, name), { force: true });
    }
    rmSync(join(this.dir, `${record.replay_id}.json`), { force: true });
  }
}

function readRecord(path: string): ReplayRecord | undefined {
  try {
    const record = JSON.parse(readFileSync(path, 'utf8')) as ReplayRecord;
    if (record.version !== 1 || typeof record.replay_id !== 'string' || typeof record.session_id !== 'string' || typeof record.started_at_ms !== 'number')
      return undefined;
    return record;
  } catch {
    return undefined;
  }
}
