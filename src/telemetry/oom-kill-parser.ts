// The kernel's OOM-killer report → system_oom_kill (docs/events.md "Failure signals"). Pure: kernel
// log messages in (the text of /dev/kmsg records), events out. The report is a run of messages
// ending with the kill line; their wording across kernel versions:
//
//   <comm> invoked oom-killer: gfp_mask=..., order=0, oom_score_adj=0        (trigger's name)
//   CPU: 1 PID: 4242 Comm: <comm> Not tainted ...      (4.x-6.x; 6.10+: "CPU: 1 UID: 0 PID: ...")
//   Mem-Info: / active_anon:... free:<pages> ...       (global OOM only; pages of 4 KiB)
//   <n> pages RAM
//   Tasks state (memory values in pages):              (4.x: "[ pid ]   uid  tgid total_vm      rss nr_ptes ...")
//   [  pid  ]   uid  tgid total_vm      rss ... name   (the header names the columns)
//   [   4242]     0  4242   262564    24589 ... node
//   oom-kill:constraint=CONSTRAINT_MEMCG,...,task=node,pid=4242,uid=0        (5.0+)
//   Memory cgroup out of memory: Killed process 4242 (node) total-vm:..kB, anon-rss:..kB, file-rss:..kB, shmem-rss:..kB ...
//   Out of memory: Killed process 4242 (node) ...     (global; 4.x: "Killed process 4242 (node) total-vm:...")

import type { OomTopTask, SystemOomKillData } from '../../injected/schema.ts';

const PAGE_KB = 4;
const MAX_TOP_TASKS = 5;

const TRIGGER = /^(.{1,16}?) invoked oom-killer:/;
const CPU_LINE = /^CPU: \d+ (?:UID: \d+ )?PID: (\d+) Comm: (.{1,16}?) (?:Not tainted|Tainted)/;
const FREE_PAGES = /(?:^|\s)free:(\d+)(?:\s|$)/;
const PAGES_RAM = /^(\d+) pages RAM$/;
const TASKS_HEADER = /^\[\s*pid\s*\]/;
const TASK_ROW = /^\[\s*(\d+)\]\s+(.*)$/;
const CONSTRAINT = /^oom-kill:constraint=CONSTRAINT_([A-Z_]+),/;
const OOM_MEMCG = /,oom_memcg=([^,]*)/;
const KILLED = /Killed process (\d+) \((.{0,16}?)\)(.*)$/;
const RSS_PART = /(anon|file|shmem)-rss:(\d+)kB/g;

const CONSTRAINTS: Record<string, SystemOomKillData['constraint']> = {
  NONE: 'none',
  MEMCG: 'memcg',
  CPUSET: 'cpuset',
  MEMORY_POLICY: 'memory_policy',
};

export class OomKillParser {
  private trigger: { name?: string; pid?: number } = {};
  private memFreeKb: number | undefined;
  private memTotalKb: number | undefined;
  private columns: string[] | undefined;
  private tasks: OomTopTask[] = [];
  private constraint: SystemOomKillData['constraint'];
  private memcg: string | undefined;

  /** One kernel log message; returns the kill it completes, if it is the kill line. */
  push(message: string): SystemOomKillData | undefined {
    const line = message.trimEnd();
    let m: RegExpExecArray | null;
    if ((m = TRIGGER.exec(line))) {
      this.reset();
      this.trigger = { name: m[1] };
      return undefined;
    }
    if ((m = CPU_LINE.exec(line))) {
      if (this.trigger.name !== undefined && this.trigger.pid === undefined && m[2] === this.trigger.name) this.trigger.pid = Number(m[1]);
      return undefined;
    }
    if (line.startsWith('Mem-Info:')) return undefined;
    // Mem-Info's summary (one message over several lines): "... free:<pages> free_pcp:<pages> ...".
    if (line.includes('free_pcp:') && (m = FREE_PAGES.exec(line))) {
      this.memFreeKb = Number(m[1]) * PAGE_KB;
      return undefined;
    }
    if ((m = PAGES_RAM.exec(line))) {
      this.memTotalKb = Number(m[1]) * PAGE_KB;
      return undefined;
    }
    if (TASKS_HEADER.test(line)) {
      // "[  pid  ]   uid  tgid total_vm      rss ... name": the bracket is one column.
      this.columns = ['pid', ...line.replace(TASKS_HEADER, '').trim().split(/\s+/)];
      this.tasks = [];
      return undefined;
    }
    if (this.columns && (m = TASK_ROW.exec(line))) {
      this.addTask(Number(m[1]), m[2]!.trim().split(/\s+/));
      return undefined;
    }
    if ((m = CONSTRAINT.exec(line))) {
      this.constraint = CONSTRAINTS[m[1]!];
      const memcg = OOM_MEMCG.exec(line);
      if (memcg && memcg[1] !== '' && memcg[1] !== '(null)') this.memcg = memcg[1];
      return undefined;
    }
    if ((m = KILLED.exec(line)) && !line.startsWith('oom_reaper')) {
      const kill = this.kill(Number(m[1]), m[2]!, m[3]!);
      this.reset();
      return kill;
    }
    return undefined;
  }

  private addTask(pid: number, fields: string[]): void {
    const columns = this.columns!;
    const rssAt = columns.indexOf('rss') - 1;
    if (rssAt < 0 || fields.length < columns.length - 1) return;
    const rss = Number(fields[rssAt]);
    // The name is the last column; a comm may hold spaces, so it is the rest of the row.
    const name = fields.slice(columns.length - 2).join(' ');
    if (!Number.isFinite(rss)) return;
    this.tasks.push({ pid, name, rss_kb: rss * PAGE_KB });
  }

  private kill(pid: number, name: string, rest: string): SystemOomKillData {
    let rssKb = 0;
    for (const part of rest.matchAll(RSS_PART)) rssKb += Number(part[2]);
    const data: SystemOomKillData = { pid, process_name: name, rss_kb: rssKb };
    if (this.constraint !== undefined) data.constraint = this.constraint;
    if (this.memFreeKb !== undefined) data.mem_free_kb = this.memFreeKb;
    if (this.memTotalKb !== undefined) data.mem_total_kb = this.memTotalKb;
    if (this.tasks.length > 0) data.top_tasks = [...this.tasks].sort((a, b) => b.rss_kb - a.rss_kb).slice(0, MAX_TOP_TASKS);
    if (this.trigger.pid !== undefined) data.trigger_pid = this.trigger.pid;
    if (this.trigger.name !== undefined) data.trigger_process_name = this.trigger.name;
    if (this.memcg !== undefined) data.oom_memcg = this.memcg;
    return data;
  }

  private reset(): void {
    this.trigger = {};
    this.memFreeKb = undefined;
    this.memTotalKb = undefined;
    this.columns = undefined;
    this.tasks = [];
    this.constraint = undefined;
    this.memcg = undefined;
  }
}

/**
 * One /dev/kmsg record: `prio,seq,ts_usec,flags[,...];message` then optional continuation lines
 * (` KEY=value`). Returns the message, or undefined for a malformed record.
 */
export function kmsgMessage(record: string): string | undefined {
  const semi = record.indexOf(';');
  if (semi === -1) return undefined;
  const end = record.indexOf('\n', semi);
  return unescapeKmsg(record.slice(semi + 1, end === -1 ? undefined : end));
}

/** A record's time: `prio,seq,usec,flags[,...];message`, microseconds since boot; undefined when malformed. */
export function kmsgTimestampUs(record: string): number | undefined {
  const match = /^\d+,\d+,(\d+),/.exec(record);
  return match === null ? undefined : Number(match[1]);
}

/** /dev/kmsg escapes non-printable bytes as `\xNN`. */
function unescapeKmsg(text: string): string {
  return text.includes('\\x') ? text.replace(/\\x([0-9a-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))) : text;
}
