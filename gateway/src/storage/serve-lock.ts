// One serving gateway per SQLite directory (docs/gateway.md "Storage"). SQLite itself would let a
// second gateway open the same file, and both would then run the archive's followers, leases and
// retention against one database from two processes that do not know each other. The serving
// gateway keeps `gateway.pid` in the directory; a second one is refused naming the first, and a
// file left by a process that is gone is taken over. The create-key command does not take it:
// writing a key beside a serving gateway is what WAL mode is for.

import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export const SERVE_LOCK_FILE = 'gateway.pid';

/** Another live process serves the directory. */
export class StorageInUseError extends Error {
  override name = 'StorageInUseError';

  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`another gateway (pid ${pid}) is serving the SQLite storage in ${dataDir}; stop it first, or give this one its own --data-dir`);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the directory for this process; returns the release function. Throws StorageInUseError. */
export function acquireServeLock(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, SERVE_LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        rmSync(path, { force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    if (Number.isSafeInteger(pid) && pid > 0 && isAlive(pid)) throw new StorageInUseError(dataDir, pid);
    // Left by a gateway that is gone (killed, crashed): take it over.
    rmSync(path, { force: true });
  }
  throw new StorageInUseError(dataDir, Number.parseInt(readFileSync(path, 'utf8'), 10));
}
