// The replay's frames as the Playwright trace's screencast (docs/export.md "Screencast"), on real
// Chromium with the official client: a page whose colour changes at known times is recorded, and
// the exported trace carries `screencast-frame` lines with their JPEG resources, a picture every
// 1/4 s over the whole recording, each showing the page as it was at its moment (three colours
// checked); Playwright's own trace viewer (`show-trace`) draws them as its film strip.

import Kernel from '@onkernel/sdk';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { locateEncoder } from '../../src/replay/encoder-binary.ts';
import { jpegSize } from '../../src/replay/jpeg.ts';
import { SCREENCAST_MAX_RATE } from '../../src/replay/trace-screencast.ts';
import { startRig, TOKEN, type TestRig } from './support/harness.ts';
import { openTraceViewer, unzipEntries } from './support/playwright-trace.ts';
import { openColourPage, waitForPage } from './support/replay-pages.ts';
import { decodePng, near, type Rgb } from './support/video.ts';

interface FrameLine {
  type: 'screencast-frame';
  pageId: string;
  sha1: string;
  width: number;
  height: number;
  timestamp: number;
}

describe('the trace’s screencast from a replay', () => {
  let rig: TestRig;
  let dir: string;
  let zip: string;
  let entries: Map<string, Buffer>;
  let frames: FrameLine[];
  let startedAtMs: number;
  let finishedAtMs: number;
  let changes: Array<{ at: number }>;

  /** The colour in the middle of a JPEG resource. */
  const colourOf = async (name: string): Promise<Rgb> => {
    const file = join(dir, name);
    writeFileSync(file, entries.get(`resources/${name}`)!);
    // The encoder's own decoder turns the JPEG into a small PNG.
    const { path: ffmpeg } = await locateEncoder();
    const png = decodePng(
      execFileSync(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-i', file, '-vf', 'scale=32:32', '-c:v', 'png', '-f', 'image2pipe', 'pipe:1']),
    );
    const at = (Math.floor(png.height / 2) * png.width + Math.floor(png.width / 2)) * png.channels;
    return [png.pixels[at]!, png.pixels[at + 1]!, png.pixels[at + 2]!];
  };
  /** The frame shown at `ms` (unix): the last at or before it. */
  const frameAt = (ms: number) => frames.filter((f) => f.timestamp <= ms).at(-1)!;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bta-trace-screencast-'));
    zip = join(dir, 'session.trace.zip');
    // No monitor screenshots: every picture of the film strip is the replay's.
    rig = await startRig({ screenshots: false });
    const tab = await openColourPage(rig);
    const client = new Kernel({ baseURL: rig.agent.url, apiKey: TOKEN, maxRetries: 0, timeout: 30_000 });
    const id = rig.agent.sessionId;
    const started = await client.browsers.replays.start(id, { framerate: 10 });
    startedAtMs = Date.parse(started.started_at!);
    await tab.evaluate(`runColours([[1000, 'rgb(0,255,0)'], [2000, 'rgb(0,0,255)'], [3000, null]])`);
    await waitForPage(tab, 'window.changes.length === 3');
    changes = (await tab.evaluate('window.changes')).result.value as typeof changes;
    await client.browsers.replays.stop(started.replay_id, { id });
    finishedAtMs = Date.parse((await client.browsers.replays.list(id))[0]!.finished_at!);
    const response = await fetch(`${rig.agent.url}/browsers/${id}/trace`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    const bytes = Buffer.from(await response.arrayBuffer());
    writeFileSync(zip, bytes);
    entries = unzipEntries(bytes);
    frames = entries
      .get('trace.trace')!
      .toString('utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as FrameLine)
      .filter((l) => l.type === 'screencast-frame');
  }, 90_000);

  afterAll(async () => {
    await rig?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('writes a screencast-frame line per picture, each naming a JPEG resource of its size', () => {
    const checked = frames.map((f) => {
      const data = entries.get(`resources/${f.sha1}`);
      const size = data && jpegSize(data);
      return f.sha1.endsWith('.jpeg') && size?.width === f.width && size.height === f.height;
    });
    expect([frames.length > 0, checked.every(Boolean)]).toEqual([true, true]);
  });

  it(`covers the recording with a picture every 1/${SCREENCAST_MAX_RATE} s, from its start to within one step of its end`, () => {
    const stepMs = 1000 / SCREENCAST_MAX_RATE;
    const gaps = frames.slice(1).map((f, i) => f.timestamp - frames[i]!.timestamp);
    expect(Math.abs(frames[0]!.timestamp - startedAtMs)).toBeLessThanOrEqual(1);
    expect(gaps.every((gap) => Math.abs(gap - stepMs) <= 1)).toBe(true);
    expect(finishedAtMs - frames.at(-1)!.timestamp).toBeLessThanOrEqual(stepMs);
  });

  it('shows the page as it was at each moment: red, then green, then blue', async () => {
    const greenAt = changes[0]!.at;
    const blueAt = changes[1]!.at;
    const colours = [
      await colourOf(frameAt(greenAt - 400).sha1),
      await colourOf(frameAt((greenAt + blueAt) / 2).sha1),
      await colourOf(frameAt(blueAt + 600).sha1),
    ];
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
          )[i]! as Rgb,
        ),
      ),
    ).toEqual([true, true, true]);
  });

  it('is drawn as the film strip by Playwright’s own trace viewer, its pictures loading', async () => {
    const viewer = await openTraceViewer(zip, dir);
    try {
      const strip = viewer.page.locator('.film-strip-frame');
      await strip.first().waitFor({ timeout: 20_000 });
      const urls = await strip.evaluateAll((nodes) => nodes.map((n) => /url\("?([^")]+)"?\)/.exec((n as HTMLElement).style.backgroundImage)?.[1] ?? ''));
      const width = await viewer.page.evaluate(async (url) => (await createImageBitmap(await (await fetch(url)).blob())).width, urls[0]!);
      expect([urls.length > 1, urls.every((u) => u.includes('replay-')), width]).toEqual([true, true, frames[0]!.width]);
    } finally {
      await viewer.browser.close();
      viewer.process.kill();
    }
  }, 60_000);
});
