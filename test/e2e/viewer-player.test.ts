// The viewer's replay player (docs/viewer.md "The player"), end to end: a real agent records a real
// Chromium tab with the official client (a navigation, a console error, a request and a computer
// action inside the recording), and the viewer page, opened in the same Chromium by the replay's
// own `replay_view_url`, plays it in step with the timeline: selecting an event seeks the video to
// its moment (within one frame), playing moves the timeline's cursor, and the errors, navigations
// and actions are marks on the scrubber.

import Kernel from '@onkernel/sdk';
import { mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRig, TOKEN, type Tab, type TestRig } from './support/harness.ts';
import { COLOUR_PAGE, openColourPage, waitForPage } from './support/replay-pages.ts';

const FRAMERATE = 10;
/** One frame of the recording, in seconds. */
const FRAME_S = 1 / FRAMERATE;

describe('the replay player in the viewer', () => {
  let rig: TestRig;
  let tab: Tab;
  let viewer: Tab;
  let client: Kernel;
  let replayId: string;
  let viewUrl: string;
  let startedAtMs: number;
  const at: Record<'error' | 'request' | 'navigation' | 'action', number> = { error: 0, request: 0, navigation: 0, action: 0 };
  let actionId: string;

  /** The video's position (s) that stands for the session's moment `ts` (unix µs). */
  const videoTimeOf = (ts: number) => (ts / 1000 - startedAtMs) / 1000;

  /** Evaluates in the viewer tab, by value. */
  const inViewer = async <T>(expression: string): Promise<T> => {
    const { result, exceptionDetails } = (await viewer.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true })) as {
      result: { value: T };
      exceptionDetails?: { text: string };
    };
    if (exceptionDetails) throw new Error(`viewer: ${exceptionDetails.text}`);
    return result.value;
  };

  /** The video's currentTime once it has seeked (and no seek is pending). */
  const seekedTime = () =>
    inViewer<number>(
      `new Promise((resolve) => { const v = document.querySelector('.player video'); if (!v.seeking) resolve(v.currentTime); else v.addEventListener('seeked', () => resolve(v.currentTime), { once: true }); })`,
    );

  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
    tab = await openColourPage(rig);
    client = new Kernel({ baseURL: rig.agent.url, apiKey: TOKEN, maxRetries: 0, timeout: 30_000 });
    const id = rig.agent.sessionId;
    const started = await client.browsers.replays.start(id, { framerate: FRAMERATE });
    replayId = started.replay_id;
    viewUrl = started.replay_view_url!;
    startedAtMs = Date.parse(started.started_at!);

    const again = rig.server.route('/colours-again.html', COLOUR_PAGE);
    await tab.navigate(again);
    at.navigation = (await rig.stream.waitForEvent('page_navigation', (e) => e.data!.url === again)).ts;
    await waitForPage(tab, 'typeof window.runColours === "function"');
    await tab.evaluate(`setTimeout(() => console.error('player-error'), 400); setTimeout(() => fetch('/player-request'), 800)`);
    at.error = (await rig.stream.waitForEvent('console_error', (e) => JSON.stringify(e.data).includes('player-error'))).ts;
    at.request = (await rig.stream.waitForEvent('network_request', (e) => String(e.data!.url).endsWith('/player-request'))).ts;
    await client.browsers.computer.batch(id, { actions: [{ type: 'move_mouse', move_mouse: { x: 40, y: 40 } }] });
    const action = await rig.stream.waitForEvent('computer_action');
    at.action = action.ts;
    actionId = action.data!.action_id;
    // The page keeps painting (its clock) for a while after the last event.
    await tab.evaluate(`runColours([[700, 'rgb(0,0,255)']])`);
    await waitForPage(tab, 'window.changes.length === 1');
    await client.browsers.replays.stop(replayId, { id });
    // A second, later replay: the viewer must open at the one whose link it was given, not the newest.
    const later = await client.browsers.replays.start(id, { framerate: FRAMERATE });
    await client.browsers.replays.stop(later.replay_id, { id });

    viewer = await rig.driver.newTab();
    await viewer.send('Page.enable');
    await viewer.send('Emulation.setDeviceMetricsOverride', { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false });
    await viewer.navigate(viewUrl);
    await waitForPage(viewer, `document.querySelector('.conn-status')?.dataset.state === 'live'`);
    await waitForPage(viewer, `(document.querySelector('.player video')?.readyState ?? 0) >= 2`);
  }, 90_000);

  afterAll(async () => {
    await rig?.close();
  });

  it('opens at the replay of its replay_view_url, not the newest one', async () => {
    expect(await inViewer<string>(`document.querySelector('.player').dataset.replayId`)).toBe(replayId);
  });

  it('takes its link once: the same replay_view_url again is 401', async () => {
    const response = await fetch(viewUrl, { redirect: 'manual' });
    expect(response.status).toBe(401);
  });

  it('seeks the video to a console error selected in the list, within one frame', async () => {
    await inViewer(`document.getElementById('tab-console').click()`);
    const row = `[...document.querySelectorAll('#panel-console .console-row:not([hidden])')].find((r) => r.textContent.includes('player-error'))`;
    await waitForPage(viewer, `!!${row}`);
    await inViewer(`${row}.click()`);
    expect(Math.abs((await seekedTime()) - videoTimeOf(at.error))).toBeLessThanOrEqual(FRAME_S);
  });

  it('seeks the video to a request selected in the network list, within one frame', async () => {
    await inViewer(`document.getElementById('tab-network').click()`);
    const row = `[...document.querySelectorAll('#panel-network .vrow:not([hidden])')].find((r) => r.textContent.includes('/player-request'))`;
    await waitForPage(viewer, `!!${row}`);
    await inViewer(`${row}.click()`);
    expect(Math.abs((await seekedTime()) - videoTimeOf(at.request))).toBeLessThanOrEqual(FRAME_S);
  });

  it('seeks the video to an action selected on the timeline, within one frame', async () => {
    await waitForPage(
      viewer,
      `(() => { const c = document.querySelector('.timeline-canvas'); if (c.dataset.selectedAction !== ${JSON.stringify(actionId)}) c.dispatchEvent(new KeyboardEvent('keydown', { key: '[' })); return c.dataset.selectedAction === ${JSON.stringify(actionId)}; })()`,
    );
    expect(Math.abs((await seekedTime()) - videoTimeOf(at.action))).toBeLessThanOrEqual(FRAME_S);
  });

  it('marks the error, the navigation and the action on the scrubber at their moments', async () => {
    const marks = await inViewer<Array<[string, number]>>(
      `[...document.querySelectorAll('.player .scrub-mark')].map((m) => [m.dataset.kind, Number(m.dataset.ts)])`,
    );
    expect(
      [
        ['error', at.error],
        ['navigation', at.navigation],
        ['action', at.action],
      ].map(([kind, ts]) => marks.some(([k, t]) => k === kind && t === ts)),
    ).toEqual([true, true, true]);
    // A test artifact, as the other viewer tests leave theirs.
    const { data } = (await viewer.send('Page.captureScreenshot', { format: 'png' })) as { data: string };
    mkdirSync('.tmp/viewer', { recursive: true });
    writeFileSync('.tmp/viewer/player.png', Buffer.from(data, 'base64'));
  });

  it('seeks the video to a navigation chosen on the scrubber, within one frame', async () => {
    await inViewer(`document.querySelector('.player .scrub-mark[data-kind="navigation"][data-ts="${at.navigation}"]').click()`);
    expect(Math.abs((await seekedTime()) - videoTimeOf(at.navigation))).toBeLessThanOrEqual(FRAME_S);
  });

  it('moves the timeline’s cursor while playing, with the video’s position', async () => {
    await inViewer(`(() => { const v = document.querySelector('.player video'); v.currentTime = 0.2; })()`);
    await seekedTime();
    const before = Number(await inViewer<string>(`document.querySelector('.timeline-canvas').dataset.cursor`));
    await inViewer(`document.querySelector('.player video').play()`);
    // Half a second of playing later, the cursor has moved with the video.
    const moved = await inViewer<{ cursor: number; time: number }>(
      `new Promise((resolve) => { const v = document.querySelector('.player video'); const c = document.querySelector('.timeline-canvas'); const check = () => { if (v.currentTime >= 0.7) { v.pause(); resolve({ cursor: Number(c.dataset.cursor), time: v.currentTime }); } else requestAnimationFrame(check); }; check(); })`,
    );
    expect(Math.abs(before - (startedAtMs + 200) * 1000)).toBeLessThanOrEqual(FRAME_S * 1e6);
    // The cursor follows within a frame of the page (rAF) behind the video.
    expect(Math.abs(moved.cursor - (startedAtMs + moved.time * 1000) * 1000)).toBeLessThanOrEqual(FRAME_S * 1e6);
    expect(moved.cursor - before).toBeGreaterThanOrEqual(400_000);
  });
});
