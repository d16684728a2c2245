// A recording ends with the session and is kept (docs/replay.md "Limits"): DELETE of the session
// stops it (`session_deleted`), an agent shutdown finalizes it (`shutdown`); the files stay in the
// data directory and the next agent of the session lists them. The tab in front is followed: a
// new tab, a tab brought to the front through the agent's CDP endpoint, the active tab closed.

import Kernel from '@onkernel/sdk';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startAgent } from '../../src/agent.ts';
import type { ReplayRecord } from '../../src/replay/catalogue.ts';
import { startRig, TOKEN, type TestRig } from './support/harness.ts';
import { openColourPage } from './support/replay-pages.ts';
import { colourAt, near, probeVideo } from './support/video.ts';

const clientFor = (url: string) => new Kernel({ baseURL: url, apiKey: TOKEN, maxRetries: 0, timeout: 30_000 });

function sidecar(dataDir: string, id: string): ReplayRecord {
  return JSON.parse(readFileSync(join(dataDir, 'replays', `${id}.json`), 'utf8')) as ReplayRecord;
}

describe('a recording when its session ends', () => {
  let dataDir: string;

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'bta-replay-end-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('is stopped by DELETE of the session and kept, replay_stopped (session_deleted) reaching the stream first', async () => {
    const rig = await startRig({ dataDir, sessionId: 'replay-end', screenshots: false });
    try {
      await openColourPage(rig);
      const client = clientFor(rig.agent.url);
      const { replay_id: id } = await client.browsers.replays.start('replay-end');
      await client.browsers.deleteByID('replay-end');
      await rig.stream.waitForEnd();
      expect(rig.stream.ofType('replay_stopped').map((e) => [e.data?.replay_id, e.data?.reason])).toEqual([[id, 'session_deleted']]);
      const record = sidecar(dataDir, id);
      expect(record).toMatchObject({ state: 'finished', stop_reason: 'session_deleted' });
      expect((await probeVideo(join(dataDir, 'replays', record.file))).codec).toBe('h264');
    } finally {
      await rig.close();
    }
  }, 60_000);

  it('is finalized by the agent shutdown and listed by the next agent of the session', async () => {
    let rig: TestRig | undefined = await startRig({ dataDir, sessionId: 'replay-shutdown', screenshots: false });
    let id: string;
    try {
      await openColourPage(rig);
      ({ replay_id: id } = await clientFor(rig.agent.url).browsers.replays.start('replay-shutdown'));
    } finally {
      await rig.close();
      rig = undefined;
    }
    expect(sidecar(dataDir, id)).toMatchObject({ state: 'finished', stop_reason: 'shutdown' });
    const next = await startAgent({ port: 0, token: TOKEN, logLevel: 'silent', dataDir, sessionId: 'replay-shutdown', screenshots: false });
    try {
      const listed = await clientFor(next.url).browsers.replays.list('replay-shutdown');
      expect(listed.map((r) => [r.replay_id, r.finished_at !== null])).toEqual([[id, true]]);
    } finally {
      await next.close();
    }
  }, 60_000);

  it('lists only the replays of its own session from a shared data directory', async () => {
    const other = await startAgent({ port: 0, token: TOKEN, logLevel: 'silent', dataDir, sessionId: 'replay-other', screenshots: false });
    try {
      expect(await clientFor(other.url).browsers.replays.list('replay-other')).toEqual([]);
    } finally {
      await other.close();
    }
  }, 60_000);
});

describe('the tab a recording follows', () => {
  let rig: TestRig;
  let dir: string;

  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
    dir = mkdtempSync(join(tmpdir(), 'bta-replay-tabs-'));
  });
  afterAll(async () => {
    await rig?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is the tab in front: a new tab, one brought to the front through the CDP endpoint, the previous one when it closes', async () => {
    const client = clientFor(rig.agent.url);
    const red = await openColourPage(rig);
    const { replay_id: id, started_at } = await client.browsers.replays.start(rig.agent.sessionId);
    const startedAt = Date.parse(started_at!);
    const marks: number[] = [];
    const mark = () => marks.push(Date.now() - startedAt);
    await waitForSeconds(1.2);
    mark();
    // A new tab comes to the front: blue.
    const blue = await openColourPage(rig);
    await blue.evaluate(`document.body.style.background = 'rgb(0,0,255)'`);
    await waitForSeconds(1.2);
    mark();
    // An automation client brings the first tab to the front through the agent's CDP endpoint.
    await activateThroughAgent(rig, red.targetId);
    await waitForSeconds(1.2);
    mark();
    // The blue tab to the front again, then closed: back to the red one.
    await red.evaluate(`document.body.style.background = 'rgb(0,255,0)'`);
    await activateThroughAgent(rig, blue.targetId);
    await blue.close();
    await waitPageGone(rig, blue.targetId);
    await waitForSeconds(1.2);
    mark();
    await client.browsers.replays.stop(id, { id: rig.agent.sessionId });
    const file = join(dir, 'tabs.mp4');
    writeFileSync(file, Buffer.from(await (await client.browsers.replays.download(id, { id: rig.agent.sessionId })).arrayBuffer()));
    const colours = await Promise.all(marks.map((t) => colourAt(file, t - 200)));
    expect(
      colours.map((c, i) =>
        near(
          c,
          [
            [255, 0, 0],
            [0, 0, 255],
            [255, 0, 0],
            [0, 255, 0],
          ][i] as [number, number, number],
        ),
      ),
    ).toEqual([true, true, true, true]);
  }, 90_000);
});

/** `Target.activateTarget` sent by an automation client through the agent's CDP endpoint. */
async function activateThroughAgent(rig: TestRig, targetId: string): Promise<void> {
  const ws = new WebSocket(`ws://${new URL(rig.agent.url).host}/browsers/${rig.agent.sessionId}/cdp`, { headers: { authorization: `Bearer ${TOKEN}` } });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const answered = new Promise((resolve) => ws.once('message', resolve));
  ws.send(JSON.stringify({ id: 1, method: 'Target.activateTarget', params: { targetId } }));
  await answered;
  ws.close();
}

/** The recording runs for a while: this is recorded time, not a wait for something to happen. */
function waitForSeconds(seconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}

async function waitPageGone(rig: TestRig, targetId: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { targetInfos } = (await rig.driver.send('Target.getTargets')) as { targetInfos: Array<{ targetId: string }> };
    if (!targetInfos.some((t) => t.targetId === targetId)) return;
    if (Date.now() > deadline) throw new Error('the tab did not close');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
