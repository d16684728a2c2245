// Replays through the gateway (docs/replay.md "Through the gateway"), with the official client
// unchanged and a real agent program: start, a page whose colour changes at known times, stop,
// list, download; the file decoded (duration, colours at three known times); Range passed on; the
// gateway's own viewer link at the replay opens the viewer and lets real Chromium play and seek the
// video through the gateway.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Kernel from '@onkernel/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayRig } from './support/gateway-harness.ts';
import { AgentProgram } from './support/gateway-processes.ts';
import { gatewaySuite } from './support/gateway-suite.ts';
import { startReplayRig } from './support/replay-rig.ts';
import { Driver, type Tab } from '../../../test/e2e/support/harness.ts';
import { COLOUR_PAGE, waitForPage } from '../../../test/e2e/support/replay-pages.ts';
import { colourAt, near, probeVideo } from '../../../test/e2e/support/video.ts';

const AGENT_TOKEN = 'agent-token-of-the-gateway-replay-tests';
const suite = gatewaySuite('gateway-replay-test', COLOUR_PAGE);

describe('replays through the gateway', () => {
  let rig: GatewayRig;
  let agent: AgentProgram;
  let driver: Driver;
  let tab: Tab;
  let client: Kernel;
  let id: string;
  let replayId: string;
  let startedAtMs: number;
  let finishedAtMs: number;
  let changes: Array<{ at: number }>;
  let bytes: Buffer;
  let file: string;
  let dir: string;
  let viewUrl: string | undefined;

  beforeAll(async () => {
    ({ rig, agent, id, driver, tab, client } = await startReplayRig(
      suite,
      suite.storages.fresh('sqlite').then((storage) => GatewayRig.start(storage)),
      AGENT_TOKEN,
    ));
    dir = mkdtempSync(join(tmpdir(), 'bta-gateway-replay-'));

    const started = await client.browsers.replays.start(id, { framerate: 10 });
    replayId = started.replay_id;
    startedAtMs = Date.parse(started.started_at!);
    viewUrl = started.replay_view_url;
    await tab.evaluate(`runColours([[1500, 'rgb(0,255,0)'], [3000, 'rgb(0,0,255)'], [4500, null]])`);
    await waitForPage(tab, 'window.changes.length === 3');
    changes = ((await tab.evaluate('window.changes')) as { result: { value: typeof changes } }).result.value;
    await client.browsers.replays.stop(replayId, { id });
    const listed = (await client.browsers.replays.list(id)).find((r) => r.replay_id === replayId)!;
    finishedAtMs = Date.parse(listed.finished_at!);
    const response = await client.browsers.replays.download(replayId, { id });
    bytes = Buffer.from(await response.arrayBuffer());
    file = join(dir, 'through-gateway.mp4');
    writeFileSync(file, bytes);
  }, 120_000);
  afterAll(async () => {
    await driver?.close().catch(() => undefined);
    await agent?.stop();
    await rig?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('starts with the gateway’s own viewer link, never the agent’s address', () => {
    expect(viewUrl?.startsWith(`${rig.url}/browsers/${id}/viewer/open?code=`)).toBe(true);
    expect(viewUrl).toContain(`replay=${replayId}`);
    expect(viewUrl).not.toContain(new URL(agent.url).host);
  });

  it('lists the replay with its start and end', async () => {
    const listed = await client.browsers.replays.list(id);
    expect(listed).toEqual([
      expect.objectContaining({ replay_id: replayId, started_at: new Date(startedAtMs).toISOString(), finished_at: new Date(finishedAtMs).toISOString() }),
    ]);
  });

  it('downloads an H.264 video as long as the recording ran (within 5%), the page’s colours at three known times', async () => {
    const probed = await probeVideo(file);
    expect(probed.codec).toBe('h264');
    const wallS = (finishedAtMs - startedAtMs) / 1000;
    expect(Math.abs(probed.durationS - wallS) / wallS).toBeLessThanOrEqual(0.05);
    const greenAt = changes[0]!.at - startedAtMs;
    const blueAt = changes[1]!.at - startedAtMs;
    const colours = [await colourAt(file, greenAt - 700), await colourAt(file, (greenAt + blueAt) / 2), await colourAt(file, blueAt + 700)];
    expect(
      colours.map((c, i) =>
        near(
          c,
          (
            [
              [255, 0, 0],
              [0, 255, 0],
              [0, 0, 255],
            ] as const
          )[i]! as [number, number, number],
        ),
      ),
    ).toEqual([true, true, true]);
  });

  it('passes a Range request on: 206 with exactly those bytes', async () => {
    const response = await rig.fetch(`/browsers/${id}/replays/${replayId}`, { headers: { range: 'bytes=200-999' } });
    expect(response.status).toBe(206);
    expect(response.headers.get('content-range')).toBe(`bytes 200-999/${bytes.length}`);
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes.subarray(200, 1000))).toBe(true);
  });

  it('passes the agent’s refusals on as they are (a second stop: 409 replay_not_recording)', async () => {
    const response = await rig.fetch(`/browsers/${id}/replays/${replayId}/stop`, { method: 'POST' });
    expect(response.status).toBe(409);
    expect(((await response.json()) as { code: string }).code).toBe('replay_not_recording');
  });

  it('opens the viewer at the replay with the gateway’s link, whose cookie lets Chromium play and seek the video', async () => {
    const [listed] = await client.browsers.replays.list(id);
    const player = await driver.newTab();
    await player.send('Page.enable');
    await player.navigate(listed!.replay_view_url!);
    await waitForPage(player, `location.pathname.endsWith('/viewer')`);
    expect(new URL((await player.evaluate('location.href')).result.value as string).searchParams.get('replay')).toBe(replayId);
    await player.navigate(`${rig.url}/browsers/${id}/replays/${replayId}`);
    await waitForPage(player, `!!document.querySelector('video') && document.querySelector('video').readyState >= 2`);
    const seeked = await player.evaluate(
      `new Promise((resolve) => { const v = document.querySelector('video'); v.addEventListener('seeked', () => resolve({ t: v.currentTime, ready: v.readyState }), { once: true }); v.currentTime = 2.5; })`,
    );
    const { t, ready } = seeked.result.value as { t: number; ready: number };
    expect(Math.abs(t - 2.5)).toBeLessThan(0.05);
    expect(ready).toBeGreaterThanOrEqual(2);
    await player.close();
  });
});
