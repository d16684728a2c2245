// Whether a process still exists, by its id: what the leftovers of a dead agent are told apart by
// (its store's running mark, docs/storage.md; its browser profiles, docs/operations.md).

/** Whether process `pid` exists (EPERM: it does, owned by another user). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
