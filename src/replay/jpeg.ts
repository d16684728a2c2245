// What the replay code reads of a JPEG: its pixel size (the encoder's picture box is the first
// frame's), and where one picture ends in a stream of them (the frames the encoder decodes back
// out of a replay, src/replay/frames.ts). Walks the marker segments (ITU T.81 B.1); no decoding.

const SOI = 0xd8;
const EOI = 0xd9;
const SOS = 0xda;

/** Start-of-frame markers that carry the picture size (baseline, progressive, lossless, ...). */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

/** The pixel size of a JPEG, or undefined when the bytes are not one. */
export function jpegSize(data: Buffer): { width: number; height: number } | undefined {
  if (data.length < 4 || data[0] !== 0xff || data[1] !== SOI) return undefined;
  let at = 2;
  while (at + 4 <= data.length) {
    if (data[at] !== 0xff) return undefined;
    const marker = data[at + 1]!;
    // Fill bytes before a marker.
    if (marker === 0xff) {
      at++;
      continue;
    }
    const length = data.readUInt16BE(at + 2);
    if (isStartOfFrame(marker)) {
      if (at + 9 > data.length) return undefined;
      const height = data.readUInt16BE(at + 5);
      const width = data.readUInt16BE(at + 7);
      return width > 0 && height > 0 ? { width, height } : undefined;
    }
    if (marker === SOS || marker === EOI) return undefined;
    at += 2 + length;
  }
  return undefined;
}

/**
 * Splits a stream of concatenated JPEGs (ffmpeg's `image2pipe` output) into pictures as its bytes
 * arrive. Inside the entropy-coded data a 0xFF byte is always followed by 0x00 (stuffing) or a
 * restart marker, so the end marker FF D9 found there is the picture's end.
 */
export class JpegStreamSplitter {
  private buffer: Buffer = Buffer.alloc(0);
  /** Where the scan of the current picture resumes. */
  private scanAt = 0;
  /** The position of the current picture's entropy-coded data, once its SOS was passed. */
  private inScan = false;

  /** Feeds bytes; returns the pictures completed by them. */
  push(chunk: Buffer): Buffer[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const pictures: Buffer[] = [];
    for (;;) {
      const end = this.findEnd();
      if (end === undefined) break;
      pictures.push(this.buffer.subarray(0, end));
      this.buffer = this.buffer.subarray(end);
      this.scanAt = 0;
      this.inScan = false;
    }
    return pictures;
  }

  /** Bytes held that do not make a whole picture. */
  get pending(): number {
    return this.buffer.length;
  }

  /** The end (exclusive) of the first whole picture in the buffer, or undefined. */
  private findEnd(): number | undefined {
    const data = this.buffer;
    if (this.scanAt === 0) {
      if (data.length < 2) return undefined;
      if (data[0] !== 0xff || data[1] !== SOI) throw new Error('not a JPEG stream');
      this.scanAt = 2;
    }
    let at = this.scanAt;
    while (!this.inScan) {
      if (at + 4 > data.length) {
        this.scanAt = at;
        return undefined;
      }
      if (data[at] !== 0xff) throw new Error('malformed JPEG: expected a marker');
      const marker = data[at + 1]!;
      if (marker === 0xff) {
        at++;
        continue;
      }
      if (marker === EOI) return at + 2;
      const length = data.readUInt16BE(at + 2);
      at += 2 + length;
      if (marker === SOS) this.inScan = true;
    }
    for (; at + 1 < data.length; at++) {
      if (data[at] !== 0xff) continue;
      const next = data[at + 1]!;
      if (next === EOI) return at + 2;
      // A new segment after the scan (a progressive JPEG's next table or scan): read it as such.
      if (next !== 0x00 && !(next >= 0xd0 && next <= 0xd7) && next !== 0xff) {
        this.inScan = false;
        this.scanAt = at;
        return this.findEnd();
      }
    }
    this.scanAt = at;
    return undefined;
  }
}

/**
 * A 16×16 black JPEG: the picture of a recording while no tab has painted yet (no tab open, the
 * browser reconnecting), scaled by the encoder to the recording's size.
 */
export const BLACK_JPEG = Buffer.from(
  '/9j/4AAQSkZJRgABAgAAAQABAAD//gAQTGF2YzU4LjQyLjEwMAD/2wBDAAgUFBcUFxsbGxsbGyAeICEhISAgICAhISEkJCQqKiokJCQhISQkKCgqKi4vLisrKisvLzIyMjw8OTlGRkhWVmf/xABLAAEBAAAAAAAAAAAAAAAAAAAACAEBAAAAAAAAAAAAAAAAAAAAABABAAAAAAAAAAAAAAAAAAAAABEBAAAAAAAAAAAAAAAAAAAAAP/AABEIABAAEAMBIgACEQADEQD/2gAMAwEAAhEDEQA/AJ/AB//Z',
  'base64',
);
