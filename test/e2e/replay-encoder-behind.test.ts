// A slow encoder (docs/replay.md "The encoder"): frames that would queue more than
// MAX_QUEUED_BYTES are dropped, but the closing frame of a stop is always queued, so the video
// reaches the stop time however far behind the encoder is. The encoder is a real ffmpeg, held
// with SIGSTOP so that its stdin fills up.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { locateEncoder } from '../../src/replay/encoder-binary.ts';
import { EncoderProcess } from '../../src/replay/encoder-process.ts';
import { BLACK_JPEG, jpegSize } from '../../src/replay/jpeg.ts';
import { probeVideo } from './support/video.ts';

describe('an encoder that is behind', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bta-encoder-behind-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('drops frames past the queue cap but still takes the closing frame, which ends the video', async () => {
    const binary = await locateEncoder();
    const size = jpegSize(BLACK_JPEG)!;
    const output = join(dir, `behind.${binary.format.extension}`);
    const encoder = new EncoderProcess({ binary, output, box: size, firstFrame: size, framerate: 10 });
    process.kill(encoder.pid!, 'SIGSTOP');
    let atMs = 0;
    while (encoder.write(atMs, BLACK_JPEG)) atMs += 100;
    const written = encoder.framesWritten;
    expect(encoder.write(atMs + 100, BLACK_JPEG)).toBe(false);
    const closingMs = atMs + 60_000;
    expect(encoder.write(closingMs, BLACK_JPEG, true)).toBe(true);
    expect([encoder.framesWritten, encoder.framesDropped]).toEqual([written + 1, 2]);
    process.kill(encoder.pid!, 'SIGCONT');
    const exit = await encoder.finish(60_000);
    expect(exit.code).toBe(0);
    expect((await probeVideo(output)).durationS).toBeGreaterThanOrEqual(closingMs / 1000);
  }, 90_000);
});
