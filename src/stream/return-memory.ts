// Memory a burst of catch-up readers leaves behind (docs/operations.md "Catch-up readers under
// load"): the runs they read from disk are Buffers outside V8's heap, garbage once the readers
// leave, but freed only by a full collection, which an idle agent allocates too little to
// trigger: measured, 40 MiB of them still held 30 s after 500 readers left. When the last
// catch-up reader leaves, the agent asks for one full collection, at most once a minute.
//
// Node has no call for it without `--expose-gc`; V8's own flag, set at run time through Node's
// public v8.setFlagsFromString, exposes `gc` to contexts created after it (vm.runInNewContext).

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const MIN_INTERVAL_MS = 60_000;

let collect: (() => void) | null | undefined;
let lastAt = -Infinity;

function collector(): (() => void) | null {
  if (collect !== undefined) return collect;
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('typeof gc === "function" ? gc : null') as (() => void) | null;
    collect = gc;
  } catch {
    collect = null;
  }
  return collect;
}

/** A full collection now unless one ran in the last minute; false when it did not run. */
export function returnMemory(now = Date.now()): boolean {
  if (now - lastAt < MIN_INTERVAL_MS) return false;
  const gc = collector();
  if (gc === null) return false;
  lastAt = now;
  gc();
  return true;
}
