// A response body taken from its builder as fast as it is built (docs/export.md "Limits"): what
// the client has not read yet waits in a little memory, then in an unlinked temporary file. So the
// building work (and the export slot it holds on the agent) ends when the body is built, not when
// a slow client has read it: a slow or vanished client never holds up other exports.

import { randomUUID } from 'node:crypto';
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';

/** What a spool holds in memory before it writes to its file; also the size of a read back. */
const SPOOL_MEMORY_BYTES = 256 * 1024;

/**
 * `body` read to its end at its own pace; the returned stream gives the same bytes to the client
 * at the client's. `built` runs once `body` has ended, failed, or the client has gone away
 * (the returned stream destroyed). The file is opened only when the client falls behind by more
 * than SPOOL_MEMORY_BYTES, unlinked at once (nothing is left behind by a crash), and closed with
 * the response.
 */
export function spooled(body: Readable, onBuilt: () => void, dir = tmpdir()): Readable {
  let isBuilt = false;
  const built = (): void => {
    if (isBuilt) return;
    isBuilt = true;
    onBuilt();
  };
  let file: Promise<FileHandle> | undefined;
  let written = 0;
  let readAt = 0;
  let ended = false;
  /** The end pushed: nothing may be pushed after it. */
  let closed = false;
  let reading = false;
  /** The client asked for more since the last push that filled its buffer. */
  let wanted = false;

  const out = new Readable({
    highWaterMark: SPOOL_MEMORY_BYTES,
    read() {
      wanted = true;
      void drain();
    },
    destroy(err, callback) {
      body.destroy();
      built();
      const closing = file?.then((handle) => handle.close());
      void closing?.catch(() => undefined);
      callback(err);
    },
  });

  /** Moves what the file holds to the client while it asks; ends the stream after the last byte. */
  const drain = async (): Promise<void> => {
    if (file === undefined || reading || out.destroyed) return;
    reading = true;
    try {
      const handle = await file;
      while (wanted && readAt < written && !out.destroyed) {
        const buffer = Buffer.allocUnsafe(Math.min(SPOOL_MEMORY_BYTES, written - readAt));
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, readAt);
        readAt += bytesRead;
        wanted = out.push(buffer.subarray(0, bytesRead));
      }
      if (ended && readAt === written && !closed && !out.destroyed) {
        closed = true;
        out.push(null);
      }
    } catch (err) {
      out.destroy(err as Error);
    } finally {
      reading = false;
    }
    if (wanted && readAt < written) void drain();
  };

  const fill = async (): Promise<void> => {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      if (out.destroyed) return;
      if (file === undefined) {
        // push() takes the chunk either way; false says the client's buffer is full.
        if (!out.push(chunk)) {
          file = openUnlinked(dir);
          // Awaited by the next chunk or the end, which may be a while: not an unhandled rejection meanwhile.
          file.catch(() => undefined);
        }
        continue;
      }
      const handle = await file;
      if (out.destroyed) return;
      for (let at = 0; at < chunk.length;) {
        const { bytesWritten } = await handle.write(chunk, at, chunk.length - at, written);
        at += bytesWritten;
        written += bytesWritten;
      }
      void drain();
    }
    ended = true;
    built();
    if (file !== undefined) return drain();
    closed = true;
    out.push(null);
  };
  fill().catch((err: unknown) => {
    built();
    out.destroy(err as Error);
  });
  return out;
}

/** A new temporary file, read and written by this process alone, already unlinked. */
async function openUnlinked(dir: string): Promise<FileHandle> {
  const name = join(dir, `bta-export-${randomUUID()}`);
  const handle = await open(name, 'wx+', 0o600);
  await unlink(name);
  return handle;
}
