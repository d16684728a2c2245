// Where write_file may write: the destination is resolved to a path without symbolic links (the
// existing part of its parent through realpath, then a link at the path itself), and only that
// resolved path is checked and written. It must not be under /proc, /sys or /dev, must be inside
// a directory of --fs-allow when that is set, and must be missing or a regular file: renaming over
// a device, FIFO or socket would replace it (/dev/null becoming a plain file), which is never
// what a caller uploading a file means.
//
// The checks see the file system at one moment: a local user who can write into the directories
// involved may still swap a directory for a link before the rename (Node has no openat). They
// guard against what the API caller asks for, not against other local users.

import type { Stats } from 'node:fs';
import { lstat, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { toWriteFileError, WriteFileError } from './write-file-error.ts';

/** Kernel interfaces and devices: never written, whatever --fs-allow says. */
export const REFUSED_TREES: readonly string[] = ['/proc', '/sys', '/dev'];

export interface Destination {
  /** The file to create or replace: absolute, without symbolic links when it was checked. */
  path: string;
  /** The regular file being replaced; undefined for a new file or a dangling link replaced. */
  existing: Stats | undefined;
}

/**
 * Resolve and check the destination of `filePath` (normalized, absolute). `allow` lists the
 * directories of --fs-allow; undefined lets it be anywhere outside the refused trees.
 */
export async function resolveDestination(filePath: string, allow: readonly string[] | undefined): Promise<Destination> {
  const allowed = allow && (await Promise.all(allow.map(resolveAllowed)));
  const parent = await resolveDirectory(path.dirname(filePath));
  const destination = path.join(parent, path.basename(filePath));
  checkPlace(filePath, destination, allowed);

  let found: Stats;
  try {
    found = await lstat(destination);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { path: destination, existing: undefined };
    throw toWriteFileError(err, filePath);
  }
  if (!found.isSymbolicLink()) return { path: destination, existing: regularFile(filePath, found) };

  // A link to an existing file is written through (the link stays); the file it leads to must
  // pass the same checks.
  let target: string;
  try {
    target = await realpath(destination);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // A dangling (or looping) link is replaced by the file itself.
    if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR') return { path: destination, existing: undefined };
    throw toWriteFileError(err, filePath);
  }
  checkPlace(filePath, target, allowed);
  let existing: Stats;
  try {
    existing = await stat(target);
  } catch (err) {
    throw toWriteFileError(err, filePath);
  }
  return { path: target, existing: regularFile(filePath, existing) };
}

/** `dir` with every symbolic link of its existing part resolved; missing levels kept as named. */
async function resolveDirectory(dir: string): Promise<string> {
  const missing: string[] = [];
  let current = dir;
  for (;;) {
    try {
      return path.join(await realpath(current), ...missing);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Missing, or below a file: creating the missing levels later creates them here, or
      // answers 409 for the file.
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || current === '/') throw toWriteFileError(err, dir);
      missing.unshift(path.basename(current));
      current = path.dirname(current);
    }
  }
}

/** An --fs-allow directory as the resolved paths are compared with it. */
async function resolveAllowed(dir: string): Promise<string> {
  return realpath(dir).catch(() => dir);
}

function checkPlace(requested: string, resolved: string, allowed: readonly string[] | undefined): void {
  const shown = resolved === requested ? requested : `${requested} (${resolved})`;
  const tree = REFUSED_TREES.find((refused) => isInside(resolved, refused));
  if (tree !== undefined) throw WriteFileError.invalid('path', `${shown} is under ${tree}: write_file never writes under /proc, /sys or /dev`);
  if (allowed && !allowed.some((dir) => isInside(resolved, dir))) {
    throw WriteFileError.forbidden('path', `${shown} is outside the directories write_file may write to (--fs-allow)`);
  }
}

function isInside(file: string, dir: string): boolean {
  return dir === '/' || file === dir || file.startsWith(`${dir}/`);
}

/** The file to replace, when it is one: a directory is a 409 conflict, anything else a 400. */
function regularFile(requested: string, found: Stats): Stats {
  if (found.isFile()) return found;
  if (found.isDirectory()) throw WriteFileError.conflict(`${requested} is a directory`);
  throw WriteFileError.invalid('path', `${requested} is ${kindOf(found)}: write_file replaces only regular files`);
}

function kindOf(found: Stats): string {
  if (found.isCharacterDevice()) return 'a character device';
  if (found.isBlockDevice()) return 'a block device';
  if (found.isFIFO()) return 'a FIFO';
  if (found.isSocket()) return 'a socket';
  return 'not a regular file';
}
