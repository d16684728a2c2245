// The replay service with the real encoder and no browser (docs/replay.md): a recording before
// any tab paints is black and still covers its time; chapters from the provider end up in the
// file; frames come out at a rate; without a data directory the files live in a temporary
// directory removed at close; retention shares the data directory's budget with the event stores.

import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IgnoredFailures } from '../../src/browser/cdp-errors.ts';
import { Heartbeats } from '../../src/heartbeat.ts';
import { ReplayCatalogue, type ReplayRecord } from '../../src/replay/catalogue.ts';
import { extractFrames } from '../../src/replay/frames.ts';
import { ReplayService, type ReplayEvent } from '../../src/replay/replay-service.ts';
import { enforceReplayRetention } from '../../src/replay/retention.ts';
import { colourAt, near, probeChapters, probeVideo } from './support/video.ts';

const logger = pino({ level: 'silent' });
const heartbeats = new Heartbeats(() => undefined);

/** The recording runs for a while: this is recorded time, not a wait for something to happen. */
function record(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe('a recording with no tab to capture', () => {
  let service: ReplayService;
  let dataDir: string;
  let finished: ReplayRecord;
  let file: string;
  const events: ReplayEvent[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'bta-replay-service-'));
    let startedUs = 0;
    service = new ReplayService({
      sessionId: 'service-test',
      dataDir,
      retainBytes: 1024 ** 3,
      retainMs: 3_600_000,
      maxBytes: 64 * 1024 ** 2,
      logger,
      heartbeats,
      failures: new IgnoredFailures(),
      emit: (event) => events.push(event),
      chapters: () => [
        { title: 'step one', startUs: startedUs + 200_000 },
        { title: 'step two', startUs: startedUs + 1_200_000 },
      ],
    });
    const started = await service.start({ framerate: 5 });
    startedUs = started.started_at_ms * 1000;
    await record(2200);
    finished = await service.stop(started.replay_id);
    file = service.catalogue.path(finished.file);
  }, 30_000);
  afterAll(async () => {
    await service?.close('shutdown');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('is black and covers its time', async () => {
    const { durationS } = await probeVideo(file);
    expect(Math.abs(durationS * 1000 - (finished.finished_at_ms! - finished.started_at_ms))).toBeLessThan(250);
    expect(near(await colourAt(file, 1000), [0, 0, 0])).toBe(true);
  });

  it('carries the provider’s chapters, placed from the replay’s start (the first one from 0, as MP4 chapters start)', async () => {
    const chapters = await probeChapters(file);
    expect(chapters.map((c) => c.title)).toEqual(['step one', 'step two']);
    expect(chapters.map((c) => Math.round(c.startS * 10) / 10)).toEqual([0, 1.2]);
  });

  it('gives frames at a rate, from the start to the end', async () => {
    const frames = await extractFrames(file, { rate: 2 });
    const { durationS } = await probeVideo(file);
    expect(frames.length).toBeGreaterThanOrEqual(Math.floor(durationS * 2));
    expect(frames.length).toBeLessThanOrEqual(Math.ceil(durationS * 2) + 1);
    expect(frames.map((f) => f.timeMs).slice(0, 3)).toEqual([0, 500, 1000]);
    expect(frames.every((f) => f.mimeType === 'image/jpeg' && f.data[0] === 0xff && f.data[1] === 0xd8)).toBe(true);
  });

  it('gives no frame for a time past the end', async () => {
    expect(await extractFrames(file, { times: [60_000] })).toEqual([]);
  });

  it('announces replay_started at video time 0 and replay_stopped at its end', () => {
    expect(events.map((e) => [e.type, e.tsUs])).toEqual([
      ['replay_started', finished.started_at_ms * 1000],
      ['replay_stopped', finished.finished_at_ms! * 1000],
    ]);
  });
});

describe('replays without a data directory', () => {
  it('are written to a temporary directory that is removed at close', async () => {
    const service = new ReplayService({
      sessionId: 'ram-only',
      dataDir: undefined,
      retainBytes: 1024 ** 3,
      retainMs: 3_600_000,
      maxBytes: 1024 ** 3,
      logger,
      heartbeats,
      failures: new IgnoredFailures(),
      emit: () => undefined,
    });
    const dir = service.catalogue.dir;
    const started = await service.start({ framerate: 5 });
    await service.stop(started.replay_id);
    expect(existsSync(service.catalogue.path(`${started.replay_id}.mp4`))).toBe(true);
    await service.close('shutdown');
    expect(existsSync(dir)).toBe(false);
  }, 30_000);
});

describe('replay retention', () => {
  let dataDir: string;
  let catalogue: ReplayCatalogue;
  const now = 1_800_000_000_000;

  const replay = (id: string, finishedAgoMs: number | undefined, bytes: number): ReplayRecord => {
    const record: ReplayRecord = {
      version: 1,
      replay_id: id,
      session_id: 's',
      state: finishedAgoMs === undefined ? 'recording' : 'finished',
      started_at_ms: now - (finishedAgoMs ?? 0) - 1000,
      ...(finishedAgoMs === undefined ? {} : { finished_at_ms: now - finishedAgoMs }),
      framerate: 10,
      mime_type: 'video/mp4',
      extension: 'mp4',
      file: finishedAgoMs === undefined ? `${id}.part.mp4` : `${id}.mp4`,
      agent_pid: process.pid,
      encoder: { path: 'ffmpeg', version: 'test' },
    };
    writeFileSync(catalogue.path(record.file), Buffer.alloc(bytes));
    catalogue.write(record);
    return record;
  };

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'bta-replay-retention-'));
    catalogue = new ReplayCatalogue(join(dataDir, 'replays'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('removes finished replays past the age limit, keeps a recording however old', () => {
    replay('old', 5_000_000, 10);
    replay('young', 1000, 10);
    replay('running', undefined, 10);
    enforceReplayRetention({ catalogue, dataDir, retainBytes: 1024 ** 2, retainMs: 3_600_000, now });
    expect(
      catalogue
        .all()
        .map((r) => r.replay_id)
        .sort(),
    ).toEqual(['running', 'young']);
  });

  it('counts the event stores first and removes the oldest finished replays until the directory fits', () => {
    for (const r of catalogue.all()) catalogue.remove(r);
    writeFileSync(join(dataDir, 'session-s.sqlite'), Buffer.alloc(6000));
    replay('first', 3000, 3000);
    replay('second', 2000, 3000);
    replay('recording', undefined, 1000);
    const { leftForRecordings } = enforceReplayRetention({ catalogue, dataDir, retainBytes: 12_000, retainMs: 3_600_000, now });
    expect(catalogue.all().map((r) => r.replay_id)).toEqual(['second', 'recording']);
    expect(leftForRecordings).toBe(12_000 - 6000 - 3000 - 1000);
  });
});
