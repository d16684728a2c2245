// Replays with the official client (@onkernel/sdk 0.84 `browsers.replays`), unchanged, against
// the agent: a page that changes its background colour at known times and shows a clock is
// recorded, stopped, listed and downloaded; the file is decoded with the encoder's own probe
// (duration) and frames at three known times are checked for their colour, which proves the
// timing, not just that a file exists. The download plays and seeks in real Chromium.

import Kernel from '@onkernel/sdk';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReplayStoppedData } from '../../injected/schema.ts';
import { startRig, TOKEN, type Tab, type TestRig } from './support/harness.ts';
import { openColourPage, waitForPage } from './support/replay-pages.ts';
import { colourAt, near, probeChapters, probeVideo, type Rgb } from './support/video.ts';

const RED: Rgb = [255, 0, 0];
const GREEN: Rgb = [0, 255, 0];
const BLUE: Rgb = [0, 0, 255];

describe('a replay recorded with the official client', () => {
  let rig: TestRig;
  let client: Kernel;
  let dir: string;
  let tab: Tab;
  let replayId: string;
  let startedAtMs: number;
  let finishedAtMs: number;
  let changes: Array<{ colour: string | null; at: number }>;
  let file: string;
  let bytes: Buffer;
  let downloadHeaders: Headers;
  let secondStepAtMs: number;

  /** A step of the automation (POST /telemetry/steps); resolves with the step event's time, Unix ms. */
  const markStep = async (name: string): Promise<number> => {
    const response = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/telemetry/steps`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    });
    expect(response.status).toBe(200);
    const { step_id: stepId } = (await response.json()) as { step_id: string };
    return (await rig.stream.waitForEvent('step', (e) => e.data?.step_id === stepId)).ts / 1000;
  };

  beforeAll(async () => {
    rig = await startRig();
    client = new Kernel({ baseURL: rig.agent.url, apiKey: TOKEN, maxRetries: 0, timeout: 30_000 });
    dir = mkdtempSync(join(tmpdir(), 'bta-replay-'));
    tab = await openColourPage(rig);
    const started = await client.browsers.replays.start(rig.agent.sessionId, { framerate: 10 });
    replayId = started.replay_id;
    startedAtMs = Date.parse(started.started_at!);
    await markStep('the colours begin');
    // Green 1.5 s after the start, blue at 3 s, the end mark at 4.5 s.
    await tab.evaluate(`runColours([[1500, 'rgb(0,255,0)'], [3000, 'rgb(0,0,255)'], [4500, null]])`);
    await waitForPage(tab, 'window.changes.length === 3');
    changes = ((await tab.evaluate('window.changes')) as { result: { value: typeof changes } }).result.value;
    secondStepAtMs = await markStep('the colours are done');
    await client.browsers.replays.stop(replayId, { id: rig.agent.sessionId });
    const listed = (await client.browsers.replays.list(rig.agent.sessionId)).find((r) => r.replay_id === replayId)!;
    finishedAtMs = Date.parse(listed.finished_at!);
    const response = await client.browsers.replays.download(replayId, { id: rig.agent.sessionId });
    downloadHeaders = response.headers;
    bytes = Buffer.from(await response.arrayBuffer());
    file = join(dir, 'replay.mp4');
    writeFileSync(file, bytes);
  }, 90_000);
  afterAll(async () => {
    await rig?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is listed with its start and end', async () => {
    const listed = await client.browsers.replays.list(rig.agent.sessionId);
    expect(listed).toEqual([
      expect.objectContaining({ replay_id: replayId, started_at: new Date(startedAtMs).toISOString(), finished_at: new Date(finishedAtMs).toISOString() }),
    ]);
  });

  it('downloads as H.264 in MP4 with its Content-Type and Content-Length', async () => {
    expect(downloadHeaders.get('content-type')).toBe('video/mp4');
    expect(Number(downloadHeaders.get('content-length'))).toBe(bytes.length);
    const probed = await probeVideo(file);
    expect(probed.codec).toBe('h264');
    expect(probed.formatName).toContain('mp4');
    expect([probed.width, probed.height]).toEqual([640, 360]);
  });

  it('lasts as long as the recording ran, within 5%', async () => {
    const { durationS } = await probeVideo(file);
    const wallS = (finishedAtMs - startedAtMs) / 1000;
    expect(wallS).toBeGreaterThan(4.5);
    expect(Math.abs(durationS - wallS) / wallS).toBeLessThanOrEqual(0.05);
  });

  it('shows at three known times the colour the page had then', async () => {
    const greenAt = changes[0]!.at - startedAtMs;
    const blueAt = changes[1]!.at - startedAtMs;
    const colours = [await colourAt(file, greenAt - 700), await colourAt(file, (greenAt + blueAt) / 2), await colourAt(file, blueAt + 700)];
    expect(colours.map((c, i) => near(c, [RED, GREEN, BLUE][i]!))).toEqual([true, true, true]);
  });

  it('carries the steps marked while it ran as its chapters', async () => {
    const chapters = await probeChapters(file);
    expect(chapters.map((c) => c.title)).toEqual(['the colours begin', 'the colours are done']);
    expect(Math.abs(chapters[1]!.startS * 1000 - (secondStepAtMs - startedAtMs))).toBeLessThan(50);
  });

  it('says in the stream when it ran: replay_started, then replay_stopped (requested)', async () => {
    const stopped = await rig.stream.waitForEvent('replay_stopped', (e) => e.data?.replay_id === replayId);
    const started = rig.stream.ofType('replay_started').find((e) => e.data?.replay_id === replayId)!;
    expect(started).toMatchObject({ category: 'monitor', ts: startedAtMs * 1000, data: { framerate: 10, mime_type: 'video/mp4' } });
    expect(stopped).toMatchObject({ category: 'monitor', ts: finishedAtMs * 1000 });
    expect(stopped.data).toMatchObject<Partial<ReplayStoppedData>>({ reason: 'requested', size_bytes: bytes.length, duration_ms: finishedAtMs - startedAtMs });
  });

  it('answers a Range request with 206 and exactly those bytes', async () => {
    const response = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/replays/${replayId}`, {
      headers: { authorization: `Bearer ${TOKEN}`, range: 'bytes=100-1099' },
    });
    expect(response.status).toBe(206);
    expect(response.headers.get('content-range')).toBe(`bytes 100-1099/${bytes.length}`);
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes.subarray(100, 1100))).toBe(true);
  });

  it('answers HEAD with the headers of the download and no body', async () => {
    const response = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/replays/${replayId}`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect([response.status, response.headers.get('content-length'), response.headers.get('accept-ranges')]).toEqual([200, String(bytes.length), 'bytes']);
    expect((await response.arrayBuffer()).byteLength).toBe(0);
  });

  it('plays and seeks in real Chromium, which fetches it with Range requests through the viewer link', async () => {
    const [listed] = await client.browsers.replays.list(rig.agent.sessionId);
    const player = await rig.driver.newTab();
    await player.send('Page.enable');
    // The link sets the viewer cookie (it grants the replay reads); the video is then opened by its URL.
    await player.navigate(listed!.replay_view_url!);
    await waitForPage(player, `location.pathname.endsWith('/viewer')`);
    expect(new URL((await player.evaluate('location.href')).result.value as string).searchParams.get('replay')).toBe(replayId);
    await player.navigate(`${rig.agent.url}/browsers/${rig.agent.sessionId}/replays/${replayId}`);
    await waitForPage(player, `!!document.querySelector('video') && document.querySelector('video').readyState >= 2`);
    const seeked = await player.evaluate(
      `new Promise((resolve) => { const v = document.querySelector('video'); v.addEventListener('seeked', () => resolve({ t: v.currentTime, ready: v.readyState, duration: v.duration }), { once: true }); v.currentTime = 3.2; })`,
    );
    const { t, ready, duration } = seeked.result.value as { t: number; ready: number; duration: number };
    expect(Math.abs(t - 3.2)).toBeLessThan(0.05);
    expect(ready).toBeGreaterThanOrEqual(2);
    expect(Math.abs(duration - (finishedAtMs - startedAtMs) / 1000)).toBeLessThan(0.5);
    await player.close();
  });

  it('keeps the file under the data directory beside its sidecar', () => {
    const record = JSON.parse(readFileSync(join(rig.agent.config.dataDir!, 'replays', `${replayId}.json`), 'utf8')) as { state: string; file: string };
    expect(record).toMatchObject({ state: 'finished', file: `${replayId}.mp4` });
    expect(readFileSync(join(rig.agent.config.dataDir!, 'replays', record.file)).equals(bytes)).toBe(true);
  });
});
