// writeFileAtomic (SPEC §9): stream a body into a temporary file beside the destination, give it
// exactly the requested mode (fchmod: the umask does not apply), flush it to disk and rename it
// over the destination, so a reader sees the old content or the new, never a mix. Any failure or
// abort removes the temporary file and leaves the old file untouched.

import { randomBytes } from 'node:crypto';
import { constants as fsConstants, type Stats } from 'node:fs';
import { chmod, lstat, mkdir, open, realpath, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { WriteFileError } from './write-file-error.ts';
import type { WriteTarget } from './write-target.ts';

/** Mode of the parent directories write_file creates (exact, whatever the umask). */
export const PARENT_DIR_MODE = 0o755;
const TEMP_SUFFIX = '.bta-upload';

export interface WriteFileOptions {
  /** Largest body accepted, in bytes. */
  maxBytes: number;
  /** The body's declared length (Content-Length), when known: checked before the disk is touched. */
  declaredLength?: number;
}

/** Write `body` to `target.path` atomically; resolves once the new file is durable and in place. */
export async function writeFileAtomic(target: WriteTarget, body: AsyncIterable<Uint8Array>, options: WriteFileOptions): Promise<void> {
  if (options.declaredLength !== undefined && options.declaredLength > options.maxBytes) throw WriteFileError.tooLarge(options.maxBytes);

  const { destination, existing } = await resolveDestination(target.path);
  const dir = path.dirname(destination);
  if (!existing) await ensureDirectory(dir);

  const temp = path.join(dir, `.${path.basename(destination).slice(0, 64)}.${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`);
  let handle: FileHandle | undefined;
  try {
    handle = await open(temp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o600);
    let size = 0;
    // for-await pulls one chunk at a time: the socket is paused while a chunk is being written.
    for await (const chunk of body) {
      size += chunk.byteLength;
      if (size > options.maxBytes) throw WriteFileError.tooLarge(options.maxBytes);
      await writeAll(handle, chunk);
    }
    await handle.chmod(target.mode);
    if (existing) {
      // Keep the owner of the file being replaced (possible when running as root).
      await handle.chown(existing.uid, existing.gid).catch(() => undefined);
    }
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

/**
 * The file to replace: the path itself, or what a symlink at the path points to (writes go
 * through links to existing files). A directory there, or a file where a parent should be, is a
 * 409 conflict.
 */
async function resolveDestination(filePath: string): Promise<{ destination: string; existing: Stats | undefined }> {
  let link: Stats;
  try {
    link = await lstat(filePath);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { destination: filePath, existing: undefined };
    if (code === 'ENOTDIR') throw WriteFileError.conflict(`a parent of ${filePath} is not a directory`);
    throw toWriteFileError(err, filePath);
  }
  let destination = filePath;
  let existing = link;
  if (link.isSymbolicLink()) {
    try {
      destination = await realpath(filePath);
      existing = await stat(destination);
    } catch {
      // A dangling link is replaced by the file itself.
      return { destination: filePath, existing: undefined };
    }
  }
  if (existing.isDirectory()) throw WriteFileError.conflict(`${filePath} is a directory`);
  return { destination, existing };
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

function toWriteFileError(err: unknown, where: string): WriteFileError {
  if (err instanceof WriteFileError) return err;
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'ECONNRESET' || e?.code === 'ERR_STREAM_PREMATURE_CLOSE' || e?.message === 'aborted') return WriteFileError.aborted();
  if (e?.code === 'EISDIR') return WriteFileError.conflict(`${where} is a directory`);
  if (e?.code === 'ENOTDIR') return WriteFileError.conflict(`a parent of ${where} is not a directory`);
  return WriteFileError.io(`could not write ${where}: ${e?.code ?? e?.message ?? 'I/O error'}`);
}
