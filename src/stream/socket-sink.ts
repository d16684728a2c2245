// Where an SSE response's frames go: straight to its socket. The response is delimited by the end
// of its connection (no chunked encoding; Node sends `Connection: close`), which costs nothing on a
// stream that lives as long as its connection anyway, and lets a run of frames go out as one
// plain socket write: no chunk header and trailer, no cork, no writev, no per-write nextTick from
// the http layer (README "Design decisions", "SSE writes per tick").

import type { ServerResponse } from 'node:http';
import type { SseSink } from './sse-subscriber.ts';

/** Before writeHead: answer without chunked encoding, so the body is the socket's bytes as they are. */
export function delimitByConnection(res: ServerResponse): void {
  res.useChunkedEncodingByDefault = false;
}

/**
 * The sink of a response whose headers are out and whose body is delimited by the connection:
 * writes and 'drain' go to the socket, the end and its 'finish' through the response (which then
 * closes the connection once every byte is out).
 */
export function socketSink(res: ServerResponse): SseSink {
  const socket = res.socket;
  if (socket === null || res.chunkedEncoding) return res;
  const target = (event: string) => (event === 'drain' ? socket : res);
  return {
    write: (chunk, done) => socket.write(chunk, done),
    end: () => res.end(),
    destroy: (error) => socket.destroy(error),
    on: (event, listener) => target(event).on(event, listener),
    off: (event, listener) => target(event).off(event, listener),
    get destroyed() {
      return res.destroyed || socket.destroyed;
    },
    get writableEnded() {
      return res.writableEnded;
    },
  };
}
