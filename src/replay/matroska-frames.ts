// The frames handed to the encoder, as a Matroska stream of JPEG pictures (docs/replay.md
// "Capture"). Chromium paints when the page changes, so frames come at irregular times; a plain
// JPEG pipe (image2pipe) carries no timestamps and the encoder would number the frames at a fixed
// rate. Matroska carries each frame's own time, so the video follows the page's real timeline
// (variable frame rate) and a page that does not paint costs nothing.
//
// The stream is written for a pipe: the Segment has an unknown size (live streaming, as the format
// allows), and every frame is one Cluster of known size holding its timestamp and one SimpleBlock.
// Times are milliseconds (TimestampScale 1 ms) from video time 0.

/** Matroska element ids (the EBML specification and the Matroska schema). */
const ID = {
  EBML: 0x1a45dfa3,
  EBMLVersion: 0x4286,
  EBMLReadVersion: 0x42f7,
  EBMLMaxIDLength: 0x42f2,
  EBMLMaxSizeLength: 0x42f3,
  DocType: 0x4282,
  DocTypeVersion: 0x4287,
  DocTypeReadVersion: 0x4285,
  Segment: 0x18538067,
  Info: 0x1549a966,
  TimestampScale: 0x2ad7b1,
  MuxingApp: 0x4d80,
  WritingApp: 0x5741,
  Tracks: 0x1654ae6b,
  TrackEntry: 0xae,
  TrackNumber: 0xd7,
  TrackUID: 0x73c5,
  TrackType: 0x83,
  FlagLacing: 0x9c,
  DefaultDuration: 0x23e383,
  CodecID: 0x86,
  Video: 0xe0,
  PixelWidth: 0xb0,
  PixelHeight: 0xba,
  Cluster: 0x1f43b675,
  Timestamp: 0xe7,
  SimpleBlock: 0xa3,
} as const;

/** A Segment whose size is not known in advance (all ones in an 8-byte size field). */
const UNKNOWN_SIZE = Buffer.from([0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
/** SimpleBlock head: track 1 (as a size-coded integer), relative timestamp 0, flags: keyframe. */
const BLOCK_HEAD = Buffer.from([0x81, 0x00, 0x00, 0x80]);

export interface StreamHeaderOptions {
  /** Pixel size announced for the track; each JPEG carries its own, which the decoder uses. */
  width: number;
  height: number;
  /**
   * The frame rate cap: announced as the track's default frame duration, which the encoder takes
   * as the duration of the last frame before a gap (the end of a fragment, the end of the file).
   */
  framerate: number;
}

/** The bytes that open the stream: the EBML header, the Segment (unknown size), Info and Tracks. */
export function streamHeader(options: StreamHeaderOptions): Buffer {
  const ebml = element(
    ID.EBML,
    Buffer.concat([
      uint(ID.EBMLVersion, 1),
      uint(ID.EBMLReadVersion, 1),
      uint(ID.EBMLMaxIDLength, 4),
      uint(ID.EBMLMaxSizeLength, 8),
      text(ID.DocType, 'matroska'),
      uint(ID.DocTypeVersion, 4),
      uint(ID.DocTypeReadVersion, 2),
    ]),
  );
  const info = element(
    ID.Info,
    Buffer.concat([uint(ID.TimestampScale, 1_000_000), text(ID.MuxingApp, 'browser-telemetry-agent'), text(ID.WritingApp, 'browser-telemetry-agent')]),
  );
  const video = element(ID.Video, Buffer.concat([uint(ID.PixelWidth, options.width), uint(ID.PixelHeight, options.height)]));
  const track = element(
    ID.TrackEntry,
    Buffer.concat([
      uint(ID.TrackNumber, 1),
      uint(ID.TrackUID, 1),
      uint(ID.TrackType, 1),
      uint(ID.FlagLacing, 0),
      uint(ID.DefaultDuration, Math.round(1e9 / options.framerate)),
      text(ID.CodecID, 'V_MJPEG'),
      video,
    ]),
  );
  return Buffer.concat([ebml, idBytes(ID.Segment), UNKNOWN_SIZE, info, element(ID.Tracks, track)]);
}

/**
 * One frame: a Cluster at `timeMs` (an integer, milliseconds from video time 0) holding the JPEG.
 * Returned as the pieces to write, so the picture is not copied.
 */
export function frameCluster(timeMs: number, jpeg: Buffer): Buffer[] {
  if (!Number.isSafeInteger(timeMs) || timeMs < 0) throw new RangeError(`frame time must be a non-negative integer of ms: ${timeMs}`);
  const timestamp = uint(ID.Timestamp, timeMs);
  const blockSize = BLOCK_HEAD.length + jpeg.length;
  const blockHead = Buffer.concat([idBytes(ID.SimpleBlock), sizeBytes(blockSize), BLOCK_HEAD]);
  const clusterSize = timestamp.length + blockHead.length + jpeg.length;
  return [Buffer.concat([idBytes(ID.Cluster), sizeBytes(clusterSize), timestamp, blockHead]), jpeg];
}

function element(id: number, payload: Buffer): Buffer {
  return Buffer.concat([idBytes(id), sizeBytes(payload.length), payload]);
}

function uint(id: number, value: number): Buffer {
  const bytes: number[] = [];
  for (let v = value; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  return element(id, Buffer.from(bytes.length === 0 ? [0] : bytes));
}

function text(id: number, value: string): Buffer {
  return element(id, Buffer.from(value, 'utf8'));
}

/** An element id is written as its bytes (the length marker is part of the id). */
function idBytes(id: number): Buffer {
  const bytes: number[] = [];
  for (let v = id; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  return Buffer.from(bytes);
}

/**
 * A size as an EBML variable-length integer: the fewest bytes whose length marker leaves room
 * for it (the all-ones value of each length is reserved for "unknown").
 */
export function sizeBytes(size: number): Buffer {
  for (let length = 1; length <= 8; length++) {
    if (size < 2 ** (7 * length) - 1) {
      const bytes = Buffer.alloc(length);
      let v = size;
      for (let i = length - 1; i >= 0; i--) {
        bytes[i] = v % 256;
        v = Math.floor(v / 256);
      }
      bytes[0]! |= 1 << (8 - length);
      return bytes;
    }
  }
  throw new RangeError(`size too large for EBML: ${size}`);
}
