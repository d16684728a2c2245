// The bench's cheapest SSE consumer counts frames on raw bytes: its counts must not depend on where
// the socket cut the stream.

import { describe, expect, it } from 'vitest';
import { FrameCounter } from '../../bench/clients/sse-reader.ts';
import { KEEPALIVE_FRAME, eventFrameText } from '../../src/stream/sse-frame.ts';

/** A stream of `events` event frames with a keepalive after every `keepaliveEvery`-th one. */
function stream(events: number, keepaliveEvery: number): Buffer {
  const parts: Buffer[] = [];
  for (let seq = 1; seq <= events; seq++) {
    // Data with LFs next to the frame end and inside JSON strings (escaped, as on the wire).
    parts.push(Buffer.from(eventFrameText(seq, JSON.stringify({ seq, event: { text: `line ${seq}\n\nnext` } }))));
    if (seq % keepaliveEvery === 0) parts.push(KEEPALIVE_FRAME);
  }
  return Buffer.concat(parts);
}

function count(bytes: Buffer, cuts: number[]): { frames: number; keepalives: number } {
  const counter = new FrameCounter();
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    counter.push(bytes.subarray(from, cut));
    from = cut;
  }
  return { frames: counter.frames, keepalives: counter.keepalives };
}

describe('FrameCounter', () => {
  const bytes = stream(50, 7);
  const expected = { frames: 50, keepalives: 7 };

  it('counts events and keepalives in one chunk', () => {
    expect(count(bytes, [])).toEqual(expected);
  });

  it('counts the same when every byte is its own chunk', () => {
    expect(
      count(
        bytes,
        Array.from({ length: bytes.length - 1 }, (_, i) => i + 1),
      ),
    ).toEqual(expected);
  });

  it('counts the same whatever the cuts, including between the two LFs of a frame end', () => {
    const ends: number[] = [];
    for (let i = bytes.indexOf('\n\n'); i !== -1; i = bytes.indexOf('\n\n', i + 2)) ends.push(i + 1);
    expect(count(bytes, ends)).toEqual(expected);
    let seed = 7;
    const random = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 200; round++) {
      const cuts = new Set<number>();
      const k = 1 + Math.floor(random() * 40);
      for (let i = 0; i < k; i++) cuts.add(1 + Math.floor(random() * (bytes.length - 1)));
      expect(
        count(
          bytes,
          [...cuts].sort((a, b) => a - b),
        ),
      ).toEqual(expected);
    }
  });

  it('counts a frame when its first byte arrives', () => {
    const counter = new FrameCounter();
    counter.push(Buffer.from('id: 1\ndata: {}\n\nid'));
    expect(counter.frames).toBe(2);
    counter.push(Buffer.from(': 2\ndata: {}\n'));
    counter.push(Buffer.from('\n: keepalive\n\n'));
    expect(counter).toMatchObject({ frames: 2, keepalives: 1 });
  });
});
