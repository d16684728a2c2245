// The trace archive's screenshot pass (docs/export.md "Playwright trace", "Limits") on an
// in-memory source: a picture goes out in 16 KiB pieces decoded from its base64 text, byte for
// byte the picture, also when the text is not plain base64; the pass empties the pages it is given.

import { inflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { traceArchive, type TraceEventSource, type TraceRow } from '../../src/export/trace-archive.ts';
import type { EventFilter } from '../../src/stream/event-filter.ts';

const T0 = 1_800_000_000_000_000;

/** A PNG's signature and IHDR (1280×720), then `bytes` of varied data. */
function png(bytes: number, seed: number): Buffer {
  const head = Buffer.from('89504e470d0a1a0a0000000d4948445200000500000002d00802000000', 'hex');
  const body = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) body[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff;
  return Buffer.concat([head, body]);
}

/** The entries of a zip by name, read through its central directory. */
function unzip(zip: Buffer): Map<string, Buffer> {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  const count = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  const entries = new Map<string, Buffer>();
  for (let i = 0; i < count; i++) {
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const data = zip.subarray(start, start + compressed);
    entries.set(name, method === 8 ? inflateRawSync(data) : Buffer.from(data));
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

function source(events: Map<number, TelemetryEvent>, pagesSeen: TraceRow[][]): TraceEventSource {
  return {
    async *pages(filter: EventFilter | undefined, pageSize: number): AsyncGenerator<TraceRow[]> {
      const rows = [...events]
        .filter(([, event]) => filter?.types === undefined || filter.types.has(event.type))
        .map(([seq, event]) => ({ seq, text: JSON.stringify({ seq, event }) }));
      for (let at = 0; at < rows.length; at += pageSize) {
        const page = rows.slice(at, at + pageSize);
        pagesSeen.push(page);
        yield page;
      }
    },
    event: (row) => (JSON.parse(row.text) as { event: TelemetryEvent }).event,
  };
}

async function archive(events: Map<number, TelemetryEvent>, pagesSeen: TraceRow[][] = []): Promise<Map<string, Buffer>> {
  const request = { sessionId: 's1', creator: { name: 'test', version: '0' }, maxBytes: 2 ** 30 };
  const chunks: Buffer[] = [];
  for await (const chunk of await traceArchive(source(events, pagesSeen), request, (err) => expect.fail(err.message))) chunks.push(chunk as Buffer);
  return unzip(Buffer.concat(chunks));
}

const shot = (dtMs: number, base64: string): TelemetryEvent => ({
  ts: T0 + dtMs * 1000,
  type: 'monitor_screenshot',
  source: { kind: 'agent' },
  data: { png: base64 },
});

describe('the trace archive', () => {
  it('writes each screenshot byte for byte, in pieces, across piece boundaries', async () => {
    // 16 KiB of base64 is 12 KiB of bytes: sizes around and across the piece size.
    const pictures = [png(12_288 - 29, 1), png(12_288 - 28, 2), png(100_000, 3), png(10, 4)];
    const events = new Map(pictures.map((p, i) => [i + 1, shot(i * 1000, p.toString('base64'))]));
    const pagesSeen: TraceRow[][] = [];
    const entries = await archive(events, pagesSeen);
    pictures.forEach((p, i) => expect(entries.get(`resources/screenshot-${i + 1}.png`)?.equals(p)).toBe(true));
    const frames = entries
      .get('trace.trace')!
      .toString('utf8')
      .split('\n')
      .filter((line) => line.includes('"screencast-frame"'));
    expect(frames).toHaveLength(pictures.length);
    expect(JSON.parse(frames[0]!)).toMatchObject({ sha1: 'screenshot-1.png', width: 1280, height: 720 });
    // The screenshot pass lets go of its pages' texts.
    const shotPages = pagesSeen.slice(0, pictures.length);
    expect(shotPages.every((page) => page.length === 0)).toBe(true);
  });

  it('writes a screenshot whose base64 is not plain (line breaks, padding) as its bytes', async () => {
    const picture = png(40_000, 5);
    const wrapped = picture.toString('base64').replace(/(.{76})/g, '$1\n');
    const entries = await archive(new Map([[7, shot(0, wrapped)]]));
    expect(entries.get('resources/screenshot-7.png')?.equals(picture)).toBe(true);
  });
});
