// Incremental reader of an agent's telemetry stream (docs/events.md): frames `id: <seq>\ndata:
// <envelope>\n\n` and keepalive comments. Chunks may split a frame anywhere (a UTF-8 character
// included: the decoder keeps partial characters); each complete frame's data is handed on.

import { StringDecoder } from 'node:string_decoder';

export interface SseFrame {
  /** The `id:` field; undefined when the frame had none. */
  id: string | undefined;
  /** The `data:` lines joined with `\n`. */
  data: string;
}

export class SseReader {
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';

  /** The complete frames in `chunk` (with what earlier chunks left over). */
  push(chunk: Buffer): SseFrame[] {
    this.buffer += this.decoder.write(chunk);
    const frames: SseFrame[] = [];
    let start = 0;
    for (;;) {
      const end = this.buffer.indexOf('\n\n', start);
      if (end === -1) break;
      const frame = parseFrame(this.buffer, start, end);
      if (frame) frames.push(frame);
      start = end + 2;
    }
    this.buffer = start === 0 ? this.buffer : this.buffer.slice(start);
    return frames;
  }

  /** Bytes of an unfinished frame held (a stream cut mid-frame leaves some). */
  get pendingLength(): number {
    return this.buffer.length;
  }
}

function parseFrame(text: string, start: number, end: number): SseFrame | undefined {
  let id: string | undefined;
  let data: string | undefined;
  let lineStart = start;
  while (lineStart < end) {
    let lineEnd = text.indexOf('\n', lineStart);
    if (lineEnd === -1 || lineEnd > end) lineEnd = end;
    let line = text.slice(lineStart, lineEnd);
    if (line.endsWith('\r')) line = line.slice(0, -1);
    lineStart = lineEnd + 1;
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'id') id = value;
    else if (field === 'data') data = data === undefined ? value : `${data}\n${value}`;
  }
  return data === undefined ? undefined : { id, data };
}
