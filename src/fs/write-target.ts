// The inputs of write_file (docs/write-file.md), checked before anything touches the disk: an absolute path
// naming a file (no NUL byte, not ending in "/", within Linux's name and path lengths) and an
// octal mode of 3 or 4 digits.

import path from 'node:path';
import { WriteFileError } from './write-file-error.ts';

export const PATH_PATTERN = '^/[^\\u0000]*$';
export const MODE_PATTERN = '^[0-7]{3,4}$';
export const DEFAULT_MODE = '644';
/** Linux NAME_MAX: bytes in one path component. */
export const MAX_NAME_BYTES = 255;
/** Linux PATH_MAX (4096) less its terminating NUL: bytes in a whole path. */
export const MAX_PATH_BYTES = 4095;

export interface WriteTarget {
  /** Normalized absolute path ("." and ".." resolved, repeated slashes folded). */
  path: string;
  /** Numeric mode, special bits included (`4755` → 0o4755). */
  mode: number;
}

/** Throws WriteFileError 400 `invalid_input` naming the bad query field. */
export function parseWriteTarget(rawPath: unknown, rawMode: unknown = DEFAULT_MODE): WriteTarget {
  if (typeof rawPath !== 'string' || !rawPath.startsWith('/')) {
    throw WriteFileError.invalid('path', 'must be an absolute path (start with "/")');
  }
  if (rawPath.includes('\0')) throw WriteFileError.invalid('path', 'must not contain a NUL byte');
  if (rawPath.endsWith('/') || /\/\.\.?$/.test(rawPath)) throw WriteFileError.invalid('path', 'must name a file, not a directory');
  if (typeof rawMode !== 'string' || !new RegExp(MODE_PATTERN).test(rawMode)) {
    throw WriteFileError.invalid('mode', 'must be 3 or 4 octal digits (e.g. 644, 0755)');
  }
  const normalized = path.posix.resolve(rawPath);
  if (normalized === '/') throw WriteFileError.invalid('path', 'must name a file, not a directory');
  // Longer names fail in the kernel with ENAMETOOLONG: the caller's mistake, not an I/O error.
  if (Buffer.byteLength(normalized) > MAX_PATH_BYTES) throw WriteFileError.invalid('path', `must be at most ${MAX_PATH_BYTES} bytes long`);
  if (normalized.split('/').some((name) => Buffer.byteLength(name) > MAX_NAME_BYTES)) {
    throw WriteFileError.invalid('path', `must not have a name longer than ${MAX_NAME_BYTES} bytes between slashes`);
  }
  return { path: normalized, mode: Number.parseInt(rawMode, 8) };
}
