// The kernel's OOM-killer report → system_oom_kill, on /dev/kmsg records of several kernel
// versions: 4.14 and 5.10 global OOMs, 6.1 with a cgroup v2 limit (written from those kernels'
// formats), and 6.18 with a cgroup v1 limit (recorded on the test machine).

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { SystemOomKillData } from '../../injected/schema.ts';
import { kmsgMessage, kmsgTimestampUs, OomKillParser } from '../../src/telemetry/oom-kill-parser.ts';

function killsIn(fixture: string): SystemOomKillData[] {
  const parser = new OomKillParser();
  const kills: SystemOomKillData[] = [];
  for (const record of readFileSync(new URL(`../fixtures/kmsg/${fixture}`, import.meta.url), 'utf8').split('\n')) {
    if (record === '') continue;
    const message = kmsgMessage(record);
    if (message === undefined) throw new Error(`malformed record ${record}`);
    const kill = parser.push(message);
    if (kill) kills.push(kill);
  }
  return kills;
}

describe('OomKillParser', () => {
  it('reads a 4.14 global OOM kill: no constraint line, the old task table, Mem-Info totals', () => {
    expect(killsIn('linux-4.14-global.txt')).toEqual([
      {
        pid: 2817,
        process_name: 'chrome',
        rss_kb: 1201220 + 6732,
        mem_free_kb: 12783 * 4,
        mem_total_kb: 524158 * 4,
        top_tasks: [
          { pid: 2817, name: 'chrome', rss_kb: 301988 * 4 },
          { pid: 2840, name: 'chrome', rss_kb: 61234 * 4 },
          { pid: 2190, name: 'node', rss_kb: 42110 * 4 },
          { pid: 401, name: 'systemd-journal', rss_kb: 712 * 4 },
        ],
        trigger_pid: 2817,
        trigger_process_name: 'chrome',
      },
    ]);
  });

  it('reads a 5.10 global OOM kill with constraint none, keeping the five largest tasks', () => {
    const [kill, ...more] = killsIn('linux-5.10-global.txt');
    expect(more).toEqual([]);
    expect(kill).toEqual({
      pid: 7731,
      process_name: 'python3',
      rss_kb: 3794812 + 436,
      constraint: 'none',
      mem_free_kb: 21371 * 4,
      mem_total_kb: 1048446 * 4,
      top_tasks: [
        { pid: 7731, name: 'python3', rss_kb: 948812 * 4 },
        { pid: 6301, name: 'chromium', rss_kb: 40310 * 4 },
        { pid: 6120, name: 'node', rss_kb: 30120 * 4 },
        { pid: 6330, name: 'chromium', rss_kb: 20210 * 4 },
        { pid: 6331, name: 'Web Content', rss_kb: 10210 * 4 },
      ],
      trigger_pid: 7731,
      trigger_process_name: 'python3',
    });
  });

  it('reads a 6.1 cgroup v2 kill: constraint memcg and the cgroup, no system memory totals', () => {
    const [kill] = killsIn('linux-6.1-memcg-v2.txt');
    expect(kill).toMatchObject({ pid: 9120, process_name: 'chrome', rss_kb: 312220 + 8220, constraint: 'memcg', oom_memcg: '/system.slice/browser.service' });
    expect(kill!.mem_free_kb).toBeUndefined();
    expect(kill!.mem_total_kb).toBeUndefined();
    expect(kill!.top_tasks!.map((t) => t.pid)).toEqual([9120, 9001, 9170]);
  });

  it('reads a kill recorded on 6.18 (cgroup v1, "CPU: n UID: n PID:" and the rss_anon/rss_file columns)', () => {
    const [kill] = killsIn('linux-6.18-memcg-v1.txt');
    expect(kill).toEqual({
      pid: 12161,
      process_name: 'node',
      rss_kb: 64768 + 33588,
      constraint: 'memcg',
      top_tasks: [{ pid: 12161, name: 'node', rss_kb: 24589 * 4 }],
      trigger_pid: 12161,
      trigger_process_name: 'node',
      oom_memcg: '/process_api/6db6af10853c9ac52171c4342649e2f6/bta-oom-probe',
    });
  });

  it('reports each of two kills in a row with its own details', () => {
    const parser = new OomKillParser();
    const text = [
      ...readFileSync(new URL('../fixtures/kmsg/linux-6.1-memcg-v2.txt', import.meta.url), 'utf8').split('\n'),
      'Killed process 77 (sleep) total-vm:100kB, anon-rss:8kB, file-rss:4kB, shmem-rss:0kB',
    ];
    const kills = text
      .map((line) => (line.includes(';') ? kmsgMessage(line) : line))
      .flatMap((m) => (m === undefined || m === '' ? [] : [parser.push(m)].filter((k) => k !== undefined)));
    expect(kills).toHaveLength(2);
    expect(kills[1]).toEqual({ pid: 77, process_name: 'sleep', rss_kb: 12 });
  });

  it('ignores the oom_reaper line and unrelated messages', () => {
    const parser = new OomKillParser();
    expect(parser.push('oom_reaper: reaped process 2817 (chrome), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB')).toBeUndefined();
    expect(parser.push('eth0: link up')).toBeUndefined();
  });

  it('unescapes a record and drops its continuation lines', () => {
    expect(kmsgMessage('6,10,5,-;a\\x0ab\n SUBSYSTEM=x')).toBe('a\nb');
    expect(kmsgMessage('no separator')).toBeUndefined();
  });

  it("reads a record's kernel time, in microseconds since boot", () => {
    expect(kmsgTimestampUs('3,2817,12744062154,-;Out of memory: Killed process 2817 (chrome)')).toBe(12744062154);
    expect(kmsgTimestampUs('6,10,5,c,caller=T1;a')).toBe(5);
    expect(kmsgTimestampUs('no separator')).toBeUndefined();
    expect(kmsgTimestampUs('6,x,5,-;a')).toBeUndefined();
  });
});
