// What a client can get wrong with replays (docs/replay.md "Errors"): every case answers its
// documented 4xx with the JSON error body, never a 500, and the recording in progress goes on
// unharmed.

import Kernel, { ConflictError } from '@onkernel/sdk';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRig, TOKEN, type TestRig } from './support/harness.ts';
import { probeVideo } from './support/video.ts';
import { openColourPage } from './support/replay-pages.ts';

const READER = 'replay-errors-reader';
const RECORDER = 'replay-errors-recorder';

interface Answer {
  status: number;
  headers: Headers;
  body: { code?: string; message?: string; details?: Array<{ field?: string }> } & Record<string, unknown>;
}

describe('replay requests the agent refuses', () => {
  let rig: TestRig;
  let client: Kernel;
  let base: string;
  let recordingId: string;
  let startedAtMs: number;
  let dir: string;

  const call = async (method: string, path: string, body?: unknown, token = TOKEN, headers: Record<string, string> = {}): Promise<Answer> => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text === '' ? {} : (JSON.parse(text) as Answer['body']) };
  };
  const start = (body?: unknown) => call('POST', '/replays', body);

  beforeAll(async () => {
    rig = await startRig({
      tokens: [
        { token: READER, scopes: ['telemetry:read'] },
        { token: RECORDER, scopes: ['replay'] },
      ],
    });
    client = new Kernel({ baseURL: rig.agent.url, apiKey: TOKEN, maxRetries: 0, timeout: 30_000 });
    base = `${rig.agent.url}/browsers/${rig.agent.sessionId}`;
    dir = mkdtempSync(join(tmpdir(), 'bta-replay-errors-'));
    await openColourPage(rig);
    const started = await client.browsers.replays.start(rig.agent.sessionId);
    recordingId = started.replay_id;
    startedAtMs = Date.parse(started.started_at!);
  }, 60_000);
  afterAll(async () => {
    await rig?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a second start while one records with 409 replay_in_progress naming the running replay, not to be retried', async () => {
    const answer = await start({});
    expect(answer.status).toBe(409);
    expect(answer.body.code).toBe('replay_in_progress');
    expect(answer.body.message).toContain(recordingId);
    expect(answer.headers.get('x-should-retry')).toBe('false');
  });

  it('is a ConflictError for the official client', async () => {
    await expect(client.browsers.replays.start(rig.agent.sessionId, { framerate: 5 })).rejects.toBeInstanceOf(ConflictError);
  });

  it.each([
    ['0', { framerate: 0 }, 'framerate'],
    ['above the maximum', { framerate: 21 }, 'framerate'],
    ['a fraction', { framerate: 2.5 }, 'framerate'],
    ['a string', { framerate: '10' }, 'framerate'],
    ['a max duration of 0', { max_duration_in_seconds: 0 }, 'max_duration_in_seconds'],
    ['record_audio true (no audio here)', { record_audio: true }, 'record_audio'],
    ['an unknown field', { fps: 10 }, 'fps'],
  ])('refuses a start with %s: 400 invalid_input naming the field', async (_name, body, field) => {
    const answer = await start(body);
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('invalid_input');
    expect(answer.body.details?.map((d) => d.field)).toEqual([field]);
  });

  it('refuses a body that is not an object with 400', async () => {
    expect((await start([1, 2])).status).toBe(400);
  });

  it('answers a stop of an unknown replay with 404 not_found', async () => {
    const answer = await call('POST', '/replays/no-such-replay/stop');
    expect([answer.status, answer.body.code]).toEqual([404, 'not_found']);
  });

  it('answers a download of an unknown replay with 404 not_found', async () => {
    const answer = await call('GET', '/replays/no-such-replay');
    expect([answer.status, answer.body.code]).toEqual([404, 'not_found']);
  });

  it('refuses a download of a replay still recording with 409 replay_not_ready, not to be retried', async () => {
    const answer = await call('GET', `/replays/${recordingId}`);
    expect([answer.status, answer.body.code]).toEqual([409, 'replay_not_ready']);
    expect(answer.headers.get('x-should-retry')).toBe('false');
  });

  it('refuses every replay route to a token without the replay scope with 403', async () => {
    const answers = await Promise.all([
      call('POST', '/replays', {}, READER),
      call('GET', '/replays', undefined, READER),
      call('POST', `/replays/${recordingId}/stop`, undefined, READER),
      call('GET', `/replays/${recordingId}`, undefined, READER),
    ]);
    expect(answers.map((a) => [a.status, a.body.code])).toEqual(Array(4).fill([403, 'forbidden']));
  });

  it('gives no viewer link to a token that may not read the telemetry (the viewer shows it)', async () => {
    const answer = await call('GET', '/replays', undefined, RECORDER);
    expect(answer.status).toBe(200);
    expect((answer.body as unknown as Array<Record<string, unknown>>)[0]).not.toHaveProperty('replay_view_url');
  });

  it('refuses the replays to a viewer cookie whose link was minted without the replay scope (403)', async () => {
    const minted = await call('POST', '/viewer/sessions', undefined, READER);
    const opened = await fetch(minted.body.url as string, { redirect: 'manual' });
    const cookie = opened.headers.get('set-cookie')!.split(';')[0]!;
    const answer = await fetch(`${base}/replays`, { headers: { cookie } });
    expect(answer.status).toBe(403);
    expect(((await answer.json()) as { code: string }).code).toBe('forbidden');
  });

  describe('once the recording is stopped', () => {
    let file: string;
    let stopAskedAtMs: number;
    let finishedAtMs: number;

    beforeAll(async () => {
      stopAskedAtMs = Date.now();
      await client.browsers.replays.stop(recordingId, { id: rig.agent.sessionId });
      const [listed] = (await client.browsers.replays.list(rig.agent.sessionId)).filter((r) => r.replay_id === recordingId);
      finishedAtMs = Date.parse(listed!.finished_at!);
      const response = await client.browsers.replays.download(recordingId, { id: rig.agent.sessionId });
      file = join(dir, 'kept.mp4');
      writeFileSync(file, Buffer.from(await response.arrayBuffer()));
    }, 30_000);

    it('kept recording through the refused requests: its video covers the time up to the stop', async () => {
      const { durationS } = await probeVideo(file);
      expect(finishedAtMs).toBeGreaterThanOrEqual(stopAskedAtMs - 5);
      expect(durationS * 1000).toBeGreaterThanOrEqual((stopAskedAtMs - startedAtMs) * 0.95);
      expect(Math.abs(durationS * 1000 - (finishedAtMs - startedAtMs))).toBeLessThanOrEqual(150);
    });

    it('answers a second stop with 409 replay_not_recording', async () => {
      const answer = await call('POST', `/replays/${recordingId}/stop`);
      expect([answer.status, answer.body.code]).toEqual([409, 'replay_not_recording']);
      expect(answer.body.message).toContain('requested');
    });

    it('answers a Range past the end with 416 range_not_satisfiable and the file size', async () => {
      const answer = await call('GET', `/replays/${recordingId}`, undefined, TOKEN, { range: 'bytes=999999999-' });
      expect([answer.status, answer.body.code]).toEqual([416, 'range_not_satisfiable']);
      expect(answer.headers.get('content-range')).toMatch(/^bytes \*\/\d+$/);
    });

    it('serves the whole file for several ranges at once (allowed by HTTP)', async () => {
      const response = await fetch(`${base}/replays/${recordingId}`, { headers: { authorization: `Bearer ${TOKEN}`, range: 'bytes=0-1,5-9' } });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    });

    it('ends a recording with max_duration_in_seconds by itself (replay_stopped reason max_duration)', async () => {
      const started = await client.browsers.replays.start(rig.agent.sessionId, { max_duration_in_seconds: 2 });
      const stopped = await rig.stream.waitForEvent('replay_stopped', (e) => e.data?.replay_id === started.replay_id, 15_000);
      expect(stopped.data?.reason).toBe('max_duration');
      expect(Math.abs(stopped.data!.duration_ms - 2000)).toBeLessThan(300);
      const [listed] = (await client.browsers.replays.list(rig.agent.sessionId)).filter((r) => r.replay_id === started.replay_id);
      expect(listed?.finished_at).not.toBeNull();
    });
  });
});
