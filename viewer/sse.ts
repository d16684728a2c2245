// Incremental parser of a server-sent events body (the HTML standard's "event stream
// interpretation"), fed text chunks as they arrive. The viewer reads the stream with fetch rather
// than EventSource: fetch can send Last-Event-ID on a new connection (after a filter change) and
// sees the status of a failed one (401, 400), which EventSource hides (docs/viewer.md "Stream").

export interface SseMessage {
  /** The `id:` field, when the message had one. */
  id: string | undefined;
  data: string;
}

export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private id: string | undefined;
  private hasData = false;
  private nextCr = -1;
  /** Comment lines seen (`: keepalive`). */
  comments = 0;

  /** Parses `chunk`; returns the messages it completes. */
  push(chunk: string): SseMessage[] {
    const messages: SseMessage[] = [];
    this.buffer += chunk;
    this.nextCr = this.buffer.indexOf('\r');
    let start = 0;
    for (;;) {
      const end = this.lineEnd(start);
      if (end === -1) break;
      const line = this.buffer.slice(start, end);
      // \r\n counts as one line break.
      start = this.buffer[end] === '\r' && this.buffer[end + 1] === '\n' ? end + 2 : end + 1;
      this.line(line, messages);
    }
    this.buffer = this.buffer.slice(start);
    return messages;
  }

  /** Forget a partial message (the connection ended in the middle of it). */
  reset(): void {
    this.buffer = '';
    this.data = [];
    this.id = undefined;
    this.hasData = false;
  }

  private lineEnd(from: number): number {
    const lf = this.buffer.indexOf('\n', from);
    // The next \r is found once and kept until passed: searching for it from every line would
    // scan the rest of a large chunk once per line (the agent writes \n only).
    if (this.nextCr !== -1 && this.nextCr < from) this.nextCr = this.buffer.indexOf('\r', from);
    const cr = this.nextCr;
    if (cr === -1) return lf;
    // A lone \r at the very end may be the first half of \r\n: wait for the next chunk.
    if (cr === this.buffer.length - 1) return lf !== -1 && lf < cr ? lf : -1;
    return lf === -1 ? cr : Math.min(lf, cr);
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === '') {
      if (this.hasData) out.push({ id: this.id, data: this.data.join('\n') });
      this.data = [];
      this.id = undefined;
      this.hasData = false;
      return;
    }
    if (line.startsWith(':')) {
      this.comments++;
      return;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      this.data.push(value);
      this.hasData = true;
    } else if (field === 'id' && !value.includes('\0')) {
      this.id = value;
    }
  }
}
