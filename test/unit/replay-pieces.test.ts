// The pure pieces of replays (docs/replay.md): the Matroska frame stream, JPEG and PNG reading,
// the encoder's command lines and chapters, the start body and the Range header.

import { describe, expect, it } from 'vitest';
import { parseRange, parseReplayStart } from '../../src/http/replay-routes.ts';
import { MP4_H264, WEBM_VP8 } from '../../src/replay/encoder-binary.ts';
import { chapterMetadata, frameArgs, recordArgs, remuxArgs } from '../../src/replay/ffmpeg-args.ts';
import { PngStreamSplitter } from '../../src/replay/frames.ts';
import { BLACK_JPEG, JpegStreamSplitter, jpegSize } from '../../src/replay/jpeg.ts';
import { frameCluster, sizeBytes, streamHeader } from '../../src/replay/matroska-frames.ts';

describe('the Matroska frame stream', () => {
  it('writes sizes as EBML variable-length integers, the all-ones value of a length left for "unknown"', () => {
    expect([...sizeBytes(0)]).toEqual([0x80]);
    expect([...sizeBytes(126)]).toEqual([0xfe]);
    expect([...sizeBytes(127)]).toEqual([0x40, 0x7f]);
    expect([...sizeBytes(300)]).toEqual([0x41, 0x2c]);
  });

  it('opens with the EBML header and a Segment of unknown size', () => {
    const header = streamHeader({ width: 640, height: 360, framerate: 10 });
    expect([...header.subarray(0, 4)]).toEqual([0x1a, 0x45, 0xdf, 0xa3]);
    const segment = header.indexOf(Buffer.from([0x18, 0x53, 0x80, 0x67]));
    expect([...header.subarray(segment + 4, segment + 12)]).toEqual([0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    expect(header.includes(Buffer.from('V_MJPEG'))).toBe(true);
  });

  it('puts each frame in a Cluster whose size covers its timestamp and block exactly', () => {
    const jpeg = Buffer.alloc(1000, 7);
    const [head, body] = frameCluster(1234, jpeg);
    expect(body).toBe(jpeg);
    expect([...head!.subarray(0, 4)]).toEqual([0x1f, 0x43, 0xb6, 0x75]);
    // Size field: 2 bytes (0x40 marker) here.
    const size = ((head![4]! & 0x3f) << 8) | head![5]!;
    expect(size).toBe(head!.length - 6 + jpeg.length);
  });

  it('refuses a time that is not a non-negative integer of ms', () => {
    expect(() => frameCluster(-1, BLACK_JPEG)).toThrow(RangeError);
    expect(() => frameCluster(1.5, BLACK_JPEG)).toThrow(RangeError);
  });
});

describe('JPEG reading', () => {
  it('reads the pixel size from the start-of-frame segment', () => {
    expect(jpegSize(BLACK_JPEG)).toEqual({ width: 16, height: 16 });
    expect(jpegSize(Buffer.from('not a jpeg'))).toBeUndefined();
  });

  it('splits a stream of pictures whatever the chunks', () => {
    const stream = Buffer.concat([BLACK_JPEG, BLACK_JPEG, BLACK_JPEG]);
    const splitter = new JpegStreamSplitter();
    const pictures: Buffer[] = [];
    for (let at = 0; at < stream.length; at += 37) pictures.push(...splitter.push(stream.subarray(at, at + 37)));
    expect(pictures.map((p) => p.equals(BLACK_JPEG))).toEqual([true, true, true]);
    expect(splitter.pending).toBe(0);
  });
});

describe('PNG splitting', () => {
  it('splits concatenated PNGs at their IEND chunks', () => {
    const chunk = (type: string, data: Buffer) => {
      const head = Buffer.alloc(8);
      head.writeUInt32BE(data.length);
      head.write(type, 4, 'latin1');
      return Buffer.concat([head, data, Buffer.alloc(4)]);
    };
    const png = Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      chunk('IHDR', Buffer.alloc(13)),
      chunk('IDAT', Buffer.alloc(50, 1)),
      chunk('IEND', Buffer.alloc(0)),
    ]);
    const splitter = new PngStreamSplitter();
    const stream = Buffer.concat([png, png]);
    const pictures = [...splitter.push(stream.subarray(0, 40)), ...splitter.push(stream.subarray(40))];
    expect(pictures.map((p) => p.equals(png))).toEqual([true, true]);
  });
});

describe("the encoder's command lines", () => {
  it('records fragmented MP4 (empty moov, 1 s fragments) with H.264 and the frames’ own times', () => {
    const args = recordArgs({ format: MP4_H264, box: { width: 1280, height: 720 }, framerate: 10, fpsModeOption: '-vsync', output: '/x.part.mp4' }).join(' ');
    expect(args).toContain('-movflags frag_keyframe+empty_moov+default_base_moof -frag_duration 1000000');
    expect(args).toContain('-c:v libx264');
    expect(args).toContain('-vsync vfr');
    expect(args).toContain('-g 20');
    expect(args).toContain('pad=1280:720');
  });

  it('records WebM with VP8 when H.264 cannot be had', () => {
    const args = recordArgs({ format: WEBM_VP8, box: { width: 640, height: 360 }, framerate: 5, fpsModeOption: '-fps_mode', output: '/x.part.webm' }).join(' ');
    expect(args).toContain('-c:v libvpx');
    expect(args).toContain('-f webm');
    expect(args).toContain('-fps_mode vfr');
  });

  it('finalizes by copying, index first, with the chapters when given', () => {
    expect(remuxArgs('/in', '/out', MP4_H264).join(' ')).toContain('-c copy -f mp4 -movflags +faststart');
    expect(remuxArgs('/in', '/out', MP4_H264, '/ch.txt').join(' ')).toContain('-f ffmetadata -i /ch.txt -map 0:v -map_metadata 1 -map_chapters 1');
  });

  it('extracts the frame current at a time: no accurate seek, the file’s timestamps, fps rounding down', () => {
    const args = frameArgs({ input: '/r.mp4', fromMs: 2500, image: 'png' }).join(' ');
    expect(args).toContain('-noaccurate_seek -ss 2.500 -copyts -i /r.mp4');
    // The last frame held one step, so the step it falls in is not cut off at the end.
    expect(args).toContain('-vf tpad=stop_mode=clone:stop_duration=0.001,fps=fps=1000:start_time=2.500:round=down');
    expect(args).toContain('-frames:v 1');
  });
});

describe('chapters', () => {
  it('run each until the next starts and the last until the end; marks outside the video are left out', () => {
    const text = chapterMetadata(
      [
        { title: 'second', startMs: 2000 },
        { title: 'first', startMs: 500 },
        { title: 'before', startMs: -5 },
        { title: 'after', startMs: 9000 },
      ],
      5000,
    );
    expect(text).toBe(
      ';FFMETADATA1\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=500\nEND=2000\ntitle=first\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=2000\nEND=5000\ntitle=second\n',
    );
  });

  it('escapes the characters ffmetadata gives a meaning', () => {
    expect(chapterMetadata([{ title: 'a=b;c#d\\e\nf', startMs: 0 }], 10)).toContain('title=a\\=b\\;c\\#d\\\\e\\\nf\n');
  });

  it('are none without a mark in the video', () => {
    expect(chapterMetadata([], 1000)).toBeUndefined();
  });
});

describe('the start body', () => {
  it('defaults to 10 frames a second, no duration limit; an absent body is an empty one', () => {
    expect(parseReplayStart(undefined)).toEqual({ framerate: 10 });
    expect(parseReplayStart({ framerate: 20, max_duration_in_seconds: 60, record_audio: false })).toEqual({ framerate: 20, maxDurationSeconds: 60 });
  });

  it('names every bad field at once', () => {
    try {
      parseReplayStart({ framerate: 50, record_audio: true, extra: 1 });
      expect.unreachable();
    } catch (err) {
      expect((err as { details: Array<{ field: string }> }).details.map((d) => d.field)).toEqual(['extra', 'framerate', 'record_audio']);
    }
  });
});

describe('the Range header', () => {
  it('reads one range: a-b, a-, -n', () => {
    expect(parseRange('bytes=10-19', 100)).toEqual([10, 19]);
    expect(parseRange('bytes=90-', 100)).toEqual([90, 99]);
    expect(parseRange('bytes=-5', 100)).toEqual([95, 99]);
    expect(parseRange('bytes=50-500', 100)).toEqual([50, 99]);
  });

  it('serves the whole file for what it does not take (several ranges, malformed)', () => {
    expect(parseRange(undefined, 100)).toBeUndefined();
    expect(parseRange('bytes=0-1,5-6', 100)).toBeUndefined();
    expect(parseRange('items=0-1', 100)).toBeUndefined();
    expect(parseRange('bytes=20-10', 100)).toBeUndefined();
  });

  it('is unsatisfiable past the end or on an empty file', () => {
    expect(parseRange('bytes=100-', 100)).toBe('unsatisfiable');
    expect(parseRange('bytes=-0', 100)).toBe('unsatisfiable');
    expect(parseRange('bytes=0-', 0)).toBe('unsatisfiable');
  });
});
