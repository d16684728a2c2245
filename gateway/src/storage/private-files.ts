// The SQLite store holds every agent's bearer token (browsers.agent_token), so its directory is
// the owner's alone (0700) and so are the database and its WAL companions (0600). New ones are
// created that way; existing ones made by an older gateway (0755 and 0644 under the usual umask)
// are tightened at open, and what changed is reported for the log. Modes only lose bits: nothing
// here grants access that was not there.

import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;
/** Group and other permission bits: what "private" takes away. */
const SHARED_BITS = 0o077;
const STICKY_BIT = 0o1000;

/** One permission this open took away. */
export interface ModeChange {
  path: string;
  /** Octal, e.g. `0644`. */
  from: string;
  to: string;
}

const octal = (mode: number) => `0${(mode & 0o777).toString(8).padStart(3, '0')}`;

/** Creates `dir` (and its missing parents) as 0700, or takes group and other bits off it. */
export function privateDirectory(dir: string, changes: ModeChange[]): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const mode = statSync(dir).mode;
  // A shared directory such as /tmp (sticky, world-writable) is not the gateway's to lock: the
  // files' own 0600 protect them there.
  if (mode & STICKY_BIT) return;
  tighten(dir, mode, changes);
}

/** Creates `path` empty as 0600 when missing; otherwise takes group and other bits off it. */
export function privateFile(path: string, changes: ModeChange[]): void {
  // 'a' never truncates; the mode applies only when the file is created (an empty file is an
  // empty SQLite database, so the driver opens it as if it had created it).
  closeSync(openSync(path, 'a', PRIVATE_FILE_MODE));
  tighten(path, statSync(path).mode, changes);
}

/** Takes group and other bits off `path` when it exists (SQLite's -wal and -shm come and go). */
export function privateIfPresent(path: string, changes: ModeChange[]): void {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  tighten(path, mode, changes);
}

function tighten(path: string, mode: number, changes: ModeChange[]): void {
  if ((mode & SHARED_BITS) === 0) return;
  const next = mode & 0o777 & ~SHARED_BITS;
  try {
    chmodSync(path, next);
  } catch (err) {
    // A store the gateway cannot make private is not one to keep agent tokens in.
    throw new Error(`could not make ${path} private (${octal(next)}): ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
  changes.push({ path, from: octal(mode), to: octal(next) });
}
