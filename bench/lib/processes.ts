// Every process the bench starts, and what /proc says about them. Children are started in their
// own process group (detached), so stopping one also stops what it started (an agent's embedded
// Chromium, Chromium's renderers) by that group id and nothing else. `stopAll()` runs on normal
// exit, on failure and on SIGINT/SIGTERM.

import { execFileSync, fork, spawn, type ChildProcess, type ForkOptions, type SpawnOptions } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';

const CLOCK_TICKS_PER_SECOND = 100; // sysconf(_SC_CLK_TCK) on Linux

const running = new Set<ChildProcess>();
/** Temporary directories (browser profiles) to remove when everything stops. */
const ownedDirs = new Set<string>();

export function ownDir(dir: string): void {
  ownedDirs.add(dir);
}

/** Remove `dir` (with retries: Chromium helpers may still be writing); true when it is gone. */
export function removeDir(dir: string): boolean {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      rmSync(dir, { recursive: true, force: true });
      ownedDirs.delete(dir);
      return true;
    } catch {
      // ENOTEMPTY while a helper exits: try again.
    }
  }
  return false;
}

export function spawnOwned(command: string, args: string[], options: SpawnOptions = {}): ChildProcess {
  return own(spawn(command, args, { ...options, detached: true }));
}

export function forkOwned(module: string, args: string[], options: ForkOptions = {}): ChildProcess {
  return own(fork(module, args, { ...options, detached: true }));
}

function own(child: ChildProcess): ChildProcess {
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/**
 * Restrict every thread of `pid` to the CPUs in `cpus` (`taskset` list syntax, e.g. `0` or `0,1`);
 * threads it creates later inherit the set.
 */
export function pinTo(pid: number, cpus: string): void {
  execFileSync('taskset', ['--all-tasks', '--cpu-list', '--pid', cpus, String(pid)], { stdio: 'ignore' });
}

/** Signal the child's whole process group (it leads one: spawned detached). */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group is gone already.
  }
}

/** Resolves when the child has exited, or after `ms` (whichever first). */
export function exited(child: ChildProcess, ms: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * SIGTERM the child, wait up to `graceMs` for it to exit, then SIGKILL its group (whatever it
 * left behind, e.g. Chromium helpers, goes too).
 */
export async function stopChild(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([exited, timer]);
  }
  signalGroup(child, 'SIGKILL');
  running.delete(child);
}

/** Synchronous last resort (process 'exit' handler): SIGKILL every group still running. */
export function killAllNow(): void {
  for (const child of running) signalGroup(child, 'SIGKILL');
  running.clear();
  for (const dir of [...ownedDirs]) removeDir(dir);
}

export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((child) => stopChild(child, 2000)));
  await sleep(200);
  for (const dir of [...ownedDirs]) removeDir(dir);
}

// ---- /proc ----------------------------------------------------------------------------------------

/** utime + stime of the process (all its threads), in seconds. */
export function cpuSeconds(pid: number): number {
  const { user, system } = cpuTimes(pid);
  return user + system;
}

/** utime and stime of the process (all its threads), in seconds. */
export function cpuTimes(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Field 2 (comm) may contain spaces; the fields after it start past the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  return { user: Number(fields[11]) / CLOCK_TICKS_PER_SECOND, system: Number(fields[12]) / CLOCK_TICKS_PER_SECOND };
}

/**
 * CPU seconds of a process tree: every live descendant of `rootPid` (and the root), each with what
 * its reaped children used (cutime, cstime), so a renderer that has exited still counts through the
 * parent that waited for it (Chromium's zygote). Processes that exit unreaped between two readings
 * are missed; Chromium reaps its helpers.
 */
export function treeCpuSeconds(rootPid: number): number {
  return treeCpu(rootPid).total;
}

/**
 * `treeCpuSeconds`, also split by Chromium process type (`--type=` of the command line; `browser`
 * without one). Exited renderers count under the zygote that reaped them.
 */
export function treeCpu(rootPid: number): { total: number; byType: Record<string, number> } {
  const parentOf = new Map<number, number>();
  const ticks = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // exited while listing
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[1] is field 4 (ppid); utime, stime, cutime, cstime are fields 14-17.
    parentOf.set(pid, Number(fields[1]));
    ticks.set(pid, Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]));
  }
  let total = 0;
  const byType: Record<string, number> = {};
  for (const [pid, t] of ticks) {
    for (let p: number | undefined = pid; p !== undefined && p > 1; p = parentOf.get(p)) {
      if (p === rootPid) {
        total += t;
        const type = processType(pid);
        byType[type] = (byType[type] ?? 0) + t / CLOCK_TICKS_PER_SECOND;
        break;
      }
    }
  }
  return { total: total / CLOCK_TICKS_PER_SECOND, byType };
}

const typeOfPid = new Map<number, string>();

/** Chromium's `--type=` of the process (cached: a process keeps its command line). */
function processType(pid: number): string {
  let type = typeOfPid.get(pid);
  if (type === undefined) {
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      // exited
    }
    // Chromium's helpers rewrite their title: one string, arguments separated by spaces.
    const arg = (name: string) => new RegExp(`(?:^|[\\0 ])--${name}=([^\\0 ]+)`).exec(cmdline)?.[1];
    const subType = arg('utility-sub-type')?.split('.')[0];
    type = cmdline.includes('crashpad') && arg('type') === undefined ? 'crashpad' : (arg('type') ?? 'browser') + (subType ? `:${subType}` : '');
    if (cmdline.length > 0) typeOfPid.set(pid, type);
  }
  return type;
}

/**
 * What every thread of `pid` has done so far: CPU time from `/proc/<pid>/task/<tid>/schedstat`
 * (nanoseconds, not the 10 ms ticks of `stat`), and wake-ups as context switches from each
 * thread's `status` (voluntary: it slept and was woken; involuntary: preempted). `main` is the
 * thread running the event loop (tid = pid).
 */
export function threadActivity(pid: number): { cpuNs: number; switches: number; mainSwitches: number; mainCpuNs: number; threads: number } {
  let cpuNs = 0;
  let switches = 0;
  let mainSwitches = 0;
  let mainCpuNs = 0;
  let threads = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let schedstat: string;
    let status: string;
    try {
      schedstat = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8');
      status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
    } catch {
      continue; // the thread exited meanwhile
    }
    const ns = Number(schedstat.split(' ')[0]);
    const voluntary = Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    const involuntary = Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    threads++;
    cpuNs += ns;
    switches += voluntary + involuntary;
    if (Number(tid) === pid) {
      mainSwitches = voluntary + involuntary;
      mainCpuNs = ns;
    }
  }
  return { cpuNs, switches, mainSwitches, mainCpuNs, threads };
}

/** A field of /proc/<pid>/status in bytes (VmHWM = peak RSS, VmRSS = current RSS). */
export function statusBytes(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}

/** CLOCK_MONOTONIC in milliseconds: comparable across processes on Linux. */
export function monoMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves when `predicate()` holds (polled), rejects after `timeoutMs`. */
export async function until(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs: number, pollMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(pollMs);
  }
}
