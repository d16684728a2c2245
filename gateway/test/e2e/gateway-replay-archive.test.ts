// The gateway's archive of replays (docs/gateway.md "Replays"), on SQLite and PostgreSQL, with the
// official client unchanged and a real agent program: a replay stopped by hand and one the
// DELETE stopped are both archived before the DELETE answers, and once the agent process is gone
// the list and the downloads (Content-Type, Content-Length, Range) come from the gateway's
// database, byte for byte the agent's files. Without a DELETE, the follower archives a replay
// when its replay_stopped comes, so a VM that vanishes after it loses nothing.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Kernel from '@onkernel/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, GatewayRig } from './support/gateway-harness.ts';
import { AgentProgram, eventually } from './support/gateway-processes.ts';
import { gatewaySuite } from './support/gateway-suite.ts';
import { startReplayRig } from './support/replay-rig.ts';
import { ChromiumProcess } from '../../../src/browser/chromium-launcher.ts';
import { Driver, type Tab } from '../../../test/e2e/support/harness.ts';
import { unzipEntries } from '../../../test/e2e/support/playwright-trace.ts';
import { COLOUR_PAGE, waitForPage } from '../../../test/e2e/support/replay-pages.ts';
import { probeVideo } from '../../../test/e2e/support/video.ts';

const AGENT_TOKEN = 'agent-token-of-the-gateway-replay-archive-tests';
const suite = gatewaySuite('gateway-replay-archive-test', COLOUR_PAGE);

describe.each(BACKENDS)('archived replays on %s', (backend) => {
  let rig: GatewayRig;
  let agent: AgentProgram;
  let driver: Driver;
  let tab: Tab;
  let client: Kernel;
  let id: string;
  let stoppedId: string;
  let runningId: string;
  let stoppedBytes: Buffer;
  let dir: string;

  beforeAll(async () => {
    // Nobody follows the stream: what is archived is the DELETE's doing.
    const gateway = suite.storages.fresh(backend).then((storage) => GatewayRig.start(storage, { archiveFollow: false }));
    ({ rig, agent, id, driver, tab, client } = await startReplayRig(suite, gateway, AGENT_TOKEN));
    dir = mkdtempSync(join(tmpdir(), 'bta-gateway-replay-archive-'));

    stoppedId = (await client.browsers.replays.start(id, { framerate: 10 })).replay_id;
    await tab.evaluate(`runColours([[1000, 'rgb(0,255,0)']])`);
    await waitForPage(tab, 'window.changes.length === 1');
    await client.browsers.replays.stop(stoppedId, { id });
    stoppedBytes = Buffer.from(await (await client.browsers.replays.download(stoppedId, { id })).arrayBuffer());
    runningId = (await client.browsers.replays.start(id, { framerate: 10 })).replay_id;
    await tab.evaluate(`runColours([[1000, 'rgb(0,0,255)']])`);
    await waitForPage(tab, 'window.changes.length === 2');
    await driver.close();
    // The DELETE stops the running replay; both are archived before it answers.
    await client.browsers.deleteByID(id);
    await agent.stop();
  }, 120_000);
  afterAll(async () => {
    await driver?.close().catch(() => undefined);
    await agent?.stop();
    await rig?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('lists both replays after the agent is gone, finished, each with the gateway’s viewer link', async () => {
    const listed = await client.browsers.replays.list(id);
    expect(listed.map((r) => [r.replay_id, r.finished_at !== null, r.replay_view_url?.startsWith(`${rig.url}/browsers/${id}/viewer/open?code=`)])).toEqual([
      [stoppedId, true, true],
      [runningId, true, true],
    ]);
  });

  it('serves the replay stopped by hand byte for byte, with its type and length', async () => {
    const response = await rig.fetch(`/browsers/${id}/replays/${stoppedId}`);
    const body = Buffer.from(await response.arrayBuffer());
    expect([response.status, response.headers.get('content-type'), response.headers.get('content-length'), body.equals(stoppedBytes)]).toEqual([
      200,
      'video/mp4',
      String(stoppedBytes.length),
      true,
    ]);
  });

  it('answers a Range request with 206 and exactly those bytes, across a chunk boundary', async () => {
    const end = Math.min(stoppedBytes.length - 1, 262_144 + 999);
    const response = await rig.fetch(`/browsers/${id}/replays/${stoppedId}`, { headers: { range: `bytes=200-${end}` } });
    const body = Buffer.from(await response.arrayBuffer());
    expect([response.status, response.headers.get('content-range'), body.equals(stoppedBytes.subarray(200, end + 1))]).toEqual([
      206,
      `bytes 200-${end}/${stoppedBytes.length}`,
      true,
    ]);
  });

  it('answers a range past the end with 416 and the error body', async () => {
    const response = await rig.fetch(`/browsers/${id}/replays/${stoppedId}`, { headers: { range: `bytes=${stoppedBytes.length}-` } });
    expect([response.status, ((await response.json()) as { code: string }).code]).toEqual([416, 'range_not_satisfiable']);
  });

  it('serves the replay the DELETE stopped as a video the probe decodes', async () => {
    const response = await client.browsers.replays.download(runningId, { id });
    const file = join(dir, `${backend}-running.mp4`);
    writeFileSync(file, Buffer.from(await response.arrayBuffer()));
    const probed = await probeVideo(file);
    expect([probed.codec, probed.durationS > 0.5]).toEqual(['h264', true]);
  });

  it('opens the archive viewer at a replay with its replay_view_url, the player loading the archived video', async () => {
    const [listed] = await client.browsers.replays.list(id);
    const chromium = await ChromiumProcess.launch();
    const browser = await Driver.connect(chromium.browserWsUrl);
    try {
      const page = await browser.firstPage();
      await page.send('Page.enable');
      await page.navigate(listed!.replay_view_url!);
      await waitForPage(page, `(document.querySelector('.player video')?.readyState ?? 0) >= 2`);
      const shown = (await page.evaluate(`[document.querySelector('.player').dataset.replayId, document.querySelector('.player video').duration]`)) as {
        result: { value: [string, number] };
      };
      const [replay, duration] = shown.result.value;
      expect([replay, duration > 0.5]).toEqual([stoppedId, true]);
    } finally {
      await browser.close().catch(() => undefined);
      await chromium.close();
    }
  });

  it('puts both archived replays’ pictures in the ended session’s trace as its screencast, each a JPEG resource', async () => {
    const response = await rig.fetch(`/browsers/${id}/trace`);
    const entries = unzipEntries(Buffer.from(await response.arrayBuffer()));
    const frames = entries
      .get('trace.trace')!
      .toString('utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; sha1?: string })
      .filter((l) => l.type === 'screencast-frame');
    const of = (replay: string) => frames.filter((f) => f.sha1!.startsWith(`replay-${replay}-`));
    const jpegs = frames.every((f) =>
      entries
        .get(`resources/${f.sha1}`)
        ?.subarray(0, 2)
        .equals(Buffer.from([0xff, 0xd8])),
    );
    expect([response.status, of(stoppedId).length > 2, of(runningId).length > 2, jpegs]).toEqual([200, true, true, true]);
  });

  it('answers 404 with the error body for a replay the archive does not hold', async () => {
    const response = await rig.fetch(`/browsers/${id}/replays/rp_notarchived0000`);
    expect([response.status, ((await response.json()) as { code: string }).code]).toEqual([404, 'not_found']);
  });
});

describe.each(BACKENDS)('a replay archived by the follower on %s, its agent then killed without a DELETE', (backend) => {
  let rig: GatewayRig;
  let agent: AgentProgram;
  let id: string;
  let replayId: string;
  let bytes: Buffer;

  beforeAll(async () => {
    [rig, agent] = await Promise.all([
      suite.storages.fresh(backend).then((storage) => GatewayRig.start(storage, { archiveLeaseMs: 500, archiveSilenceMs: 1500 })),
      AgentProgram.start(suite.bundles, AGENT_TOKEN),
    ]);
    id = agent.sessionId;
    expect((await rig.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: AGENT_TOKEN })).status).toBe(201);
    const driver = await Driver.connect(agent.browserWsUrl());
    const tab = await driver.firstPage();
    await tab.navigate(suite.fixtures.url('/page'));
    await waitForPage(tab, 'typeof window.runColours === "function"');
    const client = rig.sdk(rig.adminKey, { maxRetries: 0 });
    replayId = (await client.browsers.replays.start(id, { framerate: 10 })).replay_id;
    await tab.evaluate(`runColours([[800, 'rgb(0,255,0)']])`);
    await waitForPage(tab, 'window.changes.length === 1');
    await client.browsers.replays.stop(replayId, { id });
    bytes = Buffer.from(await (await client.browsers.replays.download(replayId, { id })).arrayBuffer());
    await eventually(
      () => rig.logLines.find((line) => line.msg === 'replay archived' && (line as { replay_id?: string }).replay_id === replayId),
      'the replay archived',
    );
    await driver.close().catch(() => undefined);
    await agent.kill();
    await eventually(async () => {
      const list = (await (await rig.fetch('/browsers?status=all&limit=100')).json()) as Array<{ session_id: string; status: string }>;
      return list.find((s) => s.session_id === id && s.status === 'ended');
    }, 'the session ended by the agent’s silence');
  }, 120_000);
  afterAll(async () => {
    await agent?.kill();
    await rig?.close();
  });

  it('lists and serves the replay byte for byte once the agent is gone', async () => {
    const listed = (await (await rig.fetch(`/browsers/${id}/replays`)).json()) as Array<{ replay_id: string }>;
    const body = Buffer.from(await (await rig.fetch(`/browsers/${id}/replays/${replayId}`)).arrayBuffer());
    expect([listed.map((r) => r.replay_id), body.equals(bytes)]).toEqual([[replayId], true]);
  });
});
