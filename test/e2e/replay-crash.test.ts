// Crash safety of a recording (docs/replay.md "Crash safety"): the file is written as fragments
// while recording, so a kill -9 of the agent (the built agent, as users run it) or of the encoder
// leaves a replay that is listed and plays up to within 2 s of the kill.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../injected/schema.ts';
import type { ReplayRecord } from '../../src/replay/catalogue.ts';
import { AgentProcess, cleanEnv, embeddedChromium, waitUntil } from './support/agent-process.ts';
import { Driver, FixtureServer, startRig, TOKEN, type TestRig } from './support/harness.ts';
import { COLOUR_PAGE, openColourPage, waitForPage } from './support/replay-pages.ts';
import { colourAt, near, probeVideo } from './support/video.ts';

const SESSION = 'replay-crash';
const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

/** The recording runs for a while: this is recorded time, not a wait for something to happen. */
function record(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe('a kill -9 of the agent while it records', () => {
  let dataDir: string;
  let dir: string;
  let server: FixtureServer;
  let agent: AgentProcess | undefined;
  let replayId: string;
  let startedAtMs: number;
  let killedAtMs: number;
  let greenAtMs: number;
  let url: string;
  let file: string;

  const start = async () => {
    agent = AgentProcess.start(['--port', '0', '--token', TOKEN, '--session-id', SESSION, '--screenshots', 'off'], cleanEnv({ DATA_DIR: dataDir }));
    return (await agent.listening()).url;
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'bta-replay-crash-'));
    dir = mkdtempSync(join(tmpdir(), 'bta-replay-crash-out-'));
    server = await new FixtureServer().start();
    url = await start();
    const driver = await Driver.connect((await embeddedChromium(agent!)).browserWsUrl);
    const tab = await driver.newTab();
    await tab.send('Page.enable');
    await tab.navigate(server.route('/colours.html', COLOUR_PAGE));
    await waitForPage(tab, 'typeof window.runColours === "function"');
    const started = (await (await fetch(`${url}/browsers/${SESSION}/replays`, { method: 'POST', headers, body: '{}' })).json()) as {
      replay_id: string;
      started_at: string;
    };
    replayId = started.replay_id;
    startedAtMs = Date.parse(started.started_at);
    await tab.evaluate(`runColours([[1500, 'rgb(0,255,0)']])`);
    await waitForPage(tab, 'window.changes.length === 1');
    greenAtMs = ((await tab.evaluate('window.changes[0].at')) as { result: { value: number } }).result.value;
    await record(1500);
    const killed = agent!;
    killed.child.kill('SIGKILL');
    killedAtMs = Date.now();
    await killed.waitForExit(5_000);
    await driver.close().catch(() => undefined);
    url = await start();
    const response = await fetch(`${url}/browsers/${SESSION}/replays/${replayId}`, { headers });
    expect(response.status).toBe(200);
    file = join(dir, 'after-kill.mp4');
    writeFileSync(file, Buffer.from(await response.arrayBuffer()));
  }, 120_000);
  afterAll(async () => {
    await agent?.stop();
    await server?.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists the replay after the restart, finished', async () => {
    const listed = (await (await fetch(`${url}/browsers/${SESSION}/replays`, { headers })).json()) as Array<{
      replay_id: string;
      finished_at: string | null;
      stop_reason?: string;
    }>;
    expect(listed).toEqual([expect.objectContaining({ replay_id: replayId, stop_reason: 'interrupted' })]);
    expect(Math.abs(Date.parse(listed[0]!.finished_at!) - killedAtMs)).toBeLessThanOrEqual(2000);
  });

  it('plays up to within 2 s of the kill, showing the page as it was then', async () => {
    const { durationS } = await probeVideo(file);
    expect(durationS * 1000).toBeGreaterThanOrEqual(killedAtMs - startedAtMs - 2000);
    expect(near(await colourAt(file, greenAtMs - startedAtMs + 700), [0, 255, 0])).toBe(true);
  });

  it('says so in the history: replay_stopped with reason interrupted', async () => {
    const stopped = (await (await fetch(`${url}/browsers/${SESSION}/telemetry/events?type=replay_stopped`, { headers })).json()) as Envelope[];
    expect(stopped.map((e) => [(e.event.data as { replay_id: string }).replay_id, (e.event.data as { reason: string }).reason])).toEqual([
      [replayId, 'interrupted'],
    ]);
  });
});

describe('a kill -9 of the encoder while it records', () => {
  let rig: TestRig;
  let dir: string;

  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
    dir = mkdtempSync(join(tmpdir(), 'bta-replay-encoder-'));
  });
  afterAll(async () => {
    await rig?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stops the recording (encoder_failed) and keeps a file that plays up to within 2 s of the kill', async () => {
    await openColourPage(rig);
    const base = `${rig.agent.url}/browsers/${rig.agent.sessionId}`;
    const started = (await (await fetch(`${base}/replays`, { method: 'POST', headers, body: '{}' })).json()) as { replay_id: string; started_at: string };
    const sidecar = join(rig.agent.config.dataDir!, 'replays', `${started.replay_id}.json`);
    await waitUntil(() => (JSON.parse(readFileSync(sidecar, 'utf8')) as ReplayRecord).encoder_pid !== undefined, 'the encoder to start', 10_000);
    await record(2500);
    process.kill((JSON.parse(readFileSync(sidecar, 'utf8')) as ReplayRecord).encoder_pid!, 'SIGKILL');
    const killedAtMs = Date.now();
    const stopped = await rig.stream.waitForEvent('replay_stopped', (e) => e.data?.replay_id === started.replay_id, 15_000);
    expect(stopped.data).toMatchObject({ reason: 'encoder_failed', error: expect.stringContaining('SIGKILL') });
    const response = await fetch(`${base}/replays/${started.replay_id}`, { headers });
    expect(response.status).toBe(200);
    const file = join(dir, 'encoder-killed.mp4');
    writeFileSync(file, Buffer.from(await response.arrayBuffer()));
    const { durationS } = await probeVideo(file);
    expect(durationS * 1000).toBeGreaterThanOrEqual(killedAtMs - Date.parse(started.started_at) - 2000);
  }, 60_000);
});
