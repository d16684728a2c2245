// writeFileAtomic (docs/write-file.md): stream a body into a temporary file beside the destination, give it
// exactly the requested mode (fchmod: the umask does not apply), flush it to disk and rename it
// over the destination, so a reader sees the old content or the new, never a mix. Any failure,
// abort or stall removes the temporary file and leaves the old file untouched. Where the file may
// go is write-destination.ts.

import { randomBytes } from 'node:crypto';
import { constants as fsConstants, type Stats } from 'node:fs';
import { chmod, mkdir, open, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { resolveDestination } from './write-destination.ts';
import { toWriteFileError, WriteFileError } from './write-file-error.ts';
import type { WriteTarget } from './write-target.ts';

/** Mode of the parent directories write_file creates (exact, whatever the umask). */
export const PARENT_DIR_MODE = 0o755;
/** Longest wait for the next chunk of a body before the upload is dropped (--upload-idle-ms). */
export const DEFAULT_UPLOAD_IDLE_MS = 30_000;
const TEMP_SUFFIX = '.bta-upload';

export interface WriteFileOptions {
  /** Largest body accepted, in bytes. */
  maxBytes: number;
  /** The body's declared length (Content-Length), when known: checked before the disk is touched. */
  declaredLength?: number;
  /** Directories the destination must resolve into (--fs-allow); anywhere when absent. */
  allow?: readonly string[];
  /** Longest wait for the next chunk, in ms, before failing with 408; DEFAULT_UPLOAD_IDLE_MS when absent. */
  idleTimeoutMs?: number;
}

/** Write `body` to `target.path` atomically; resolves once the new file is durable and in place. */
export async function writeFileAtomic(target: WriteTarget, body: AsyncIterable<Uint8Array>, options: WriteFileOptions): Promise<void> {
  if (options.declaredLength !== undefined && options.declaredLength > options.maxBytes) throw WriteFileError.tooLarge(options.maxBytes);

  const { path: destination, existing } = await resolveDestination(target.path, options.allow);
  const dir = path.dirname(destination);
  if (!existing) await ensureDirectory(dir);

  const temp = path.join(dir, `.${path.basename(destination).slice(0, 64)}.${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`);
  let handle: FileHandle | undefined;
  try {
    handle = await open(temp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o600);
    let size = 0;
    // for-await pulls one chunk at a time: the socket is paused while a chunk is being written.
    for await (const chunk of withIdleTimeout(body, options.idleTimeoutMs ?? DEFAULT_UPLOAD_IDLE_MS)) {
      size += chunk.byteLength;
      if (size > options.maxBytes) throw WriteFileError.tooLarge(options.maxBytes);
      await writeAll(handle, chunk);
    }
    if (existing) {
      // Keep the owner of the file being replaced (possible when running as root). Before the
      // chmod: a chown clears setuid and setgid, for root too (chown(2)).
      await handle.chown(existing.uid, existing.gid).catch(() => undefined);
    }
    await applyMode(handle, target.mode);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temp, destination);
  } catch (err) {
    await handle?.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
    throw toWriteFileError(err, destination);
  }
  await syncDirectory(dir);
}

/** Create the missing directories of `dir`, each with mode 0755 exactly. */
async function ensureDirectory(dir: string): Promise<void> {
  const missing: string[] = [];
  let current = dir;
  for (;;) {
    let info: Stats | undefined;
    try {
      info = await stat(current);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTDIR') throw WriteFileError.conflict(`a parent of ${dir} is not a directory`);
      if (code !== 'ENOENT') throw toWriteFileError(err, dir);
    }
    if (info) {
      if (!info.isDirectory()) throw WriteFileError.conflict(`${current} is not a directory`);
      break;
    }
    missing.unshift(current);
    current = path.dirname(current);
  }
  for (const level of missing) {
    try {
      await mkdir(level, { mode: PARENT_DIR_MODE });
      await chmod(level, PARENT_DIR_MODE);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') {
        // Created meanwhile by someone else: fine if it is a directory.
        if ((await stat(level).catch(() => undefined))?.isDirectory()) continue;
        throw WriteFileError.conflict(`${level} is not a directory`);
      }
      if (code === 'ENOTDIR') throw WriteFileError.conflict(`a parent of ${level} is not a directory`);
      throw toWriteFileError(err, level);
    }
  }
}

/**
 * The chunks of `body`, failing with 408 when the next one takes longer than `idleMs` to come: a
 * client that stops sending would otherwise hold the descriptor and the temporary file forever.
 * Only the wait for the client counts, not the time spent writing a chunk.
 */
async function* withIdleTimeout(body: AsyncIterable<Uint8Array>, idleMs: number): AsyncGenerator<Uint8Array> {
  const chunks = body[Symbol.asyncIterator]();
  let waiting = false;
  try {
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const idle = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(WriteFileError.idle(idleMs)), idleMs);
      });
      let next: IteratorResult<Uint8Array>;
      waiting = true;
      try {
        // A next() still pending after the timeout settles when the http layer closes the
        // connection; race() has already handled its rejection.
        next = await Promise.race([chunks.next(), idle]);
        waiting = false;
      } finally {
        clearTimeout(timer);
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    // Ended early by the writer (size limit, write error): release the body as a for-await would.
    if (!waiting) await chunks.return?.();
  }
}

/** fchmod to exactly `mode`, and check that the system kept every bit. */
async function applyMode(handle: FileHandle, mode: number): Promise<void> {
  const octal = (m: number) => m.toString(8).padStart(4, '0');
  try {
    await handle.chmod(mode);
  } catch (err) {
    // systemd's RestrictSUIDSGID= refuses setuid and setgid with EPERM (deploy/).
    if ((err as NodeJS.ErrnoException).code === 'EPERM') throw WriteFileError.forbidden('mode', `the system does not let the agent set mode ${octal(mode)}`);
    throw err;
  }
  const kept = (await handle.stat()).mode & 0o7777;
  // Linux drops setgid without an error when the process is neither privileged nor in the file's
  // group (chmod(2)): a file that silently lacks a requested bit is refused instead.
  if (kept !== mode) throw WriteFileError.forbidden('mode', `the system did not let the agent set mode ${octal(mode)} (it kept ${octal(kept)})`);
}

async function writeAll(handle: FileHandle, chunk: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < chunk.byteLength) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.byteLength - offset);
    offset += bytesWritten;
  }
}

/** Make the rename itself durable. Best effort: not every file system allows fsync on a directory. */
async function syncDirectory(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY);
    await handle.sync();
  } catch {
    // Ignored: the data itself was fsynced before the rename.
  } finally {
    await handle?.close().catch(() => undefined);
  }
}
