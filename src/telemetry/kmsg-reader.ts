// Follows the kernel log (/dev/kmsg) for OOM kills (docs/events.md "Failure signals"). The device is
// opened non-blocking and read every 5 s until it has nothing more: one read() system call every
// 5 s while the kernel is quiet, no thread parked in a blocking read, and on the agent's shared
// 1 s beat (src/heartbeat.ts), so the poll costs no wake-up of its own (an idle agent's wake-ups are
// its cost: docs/performance.md "Idle"). Each read() returns one record, stamped by
// the kernel, so a kill keeps the time it happened however late the poll reads it. What the
// kernel logged before the agent started is skipped at open.
//
// Reading it needs root or CAP_SYSLOG (with kernel.dmesg_restrict=1); without, the agent logs one
// line at start and system_oom_kill stays off.

import { closeSync, constants, openSync, readSync } from 'node:fs';
import type { Logger } from 'pino';
import type { SystemOomKillData } from '../../injected/schema.ts';
import type { StartScope } from '../cleanup-stack.ts';
import type { Heartbeats } from '../heartbeat.ts';
import { kmsgMessage, kmsgTimestampUs, OomKillParser } from './oom-kill-parser.ts';

export const KMSG_PATH = '/dev/kmsg';
export const KMSG_POLL_MS = 5000;
/** The beat the poll runs on: the browser health probe's (src/browser/browser-link.ts). */
const KMSG_BEAT_MS = 1000;
/** A record is at most about 8 KiB (the kernel's CONSOLE_EXT_LOG_MAX). */
const RECORD_BYTES = 16 * 1024;

export interface KmsgReaderOptions {
  logger: Logger;
  /** `ageUs`: how long ago the kernel logged the kill's last record (its time is now − ageUs). */
  onOomKill(kill: SystemOomKillData, ageUs: number): void;
  /** The agent's beats: the poll runs on its 1 s beat. */
  heartbeats: Heartbeats;
  path?: string;
}

export class KmsgReader {
  private fd: number | undefined;
  private stopPolling: (() => void) | undefined;
  private readonly parser = new OomKillParser();
  private readonly buffer = Buffer.allocUnsafe(RECORD_BYTES);

  private constructor(private readonly options: KmsgReaderOptions) {}

  /**
   * Opens the kernel log; undefined (after one log line) when the agent may not read it. Start-up's
   * kmsg step: `scope` closes it again if start-up fails later.
   */
  static start(options: KmsgReaderOptions, scope?: StartScope): KmsgReader | undefined {
    const path = options.path ?? KMSG_PATH;
    let fd: number;
    try {
      fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (err) {
      options.logger.info({ path, err: (err as Error).message }, 'system_oom_kill is off: the kernel log is not readable (it needs root or CAP_SYSLOG)');
      return undefined;
    }
    const reader = new KmsgReader(options);
    reader.fd = fd;
    scope?.opened(() => reader.close());
    // Skip what was logged before: only kills from now on are this session's.
    reader.drain(false);
    reader.stopPolling = options.heartbeats.of(KMSG_BEAT_MS).every(KMSG_POLL_MS / KMSG_BEAT_MS, () => reader.drain(true));
    return reader;
  }

  close(): void {
    this.stopPolling?.();
    this.stopPolling = undefined;
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  /** Reads every record available now. */
  private drain(parse: boolean): void {
    const fd = this.fd;
    if (fd === undefined) return;
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, this.buffer, 0, RECORD_BYTES, null);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        // EAGAIN: nothing more now. EPIPE: records were overwritten before we read them; the
        // next read continues with the oldest one left.
        if (code === 'EPIPE') continue;
        if (code !== 'EAGAIN') {
          this.options.logger.warn({ err: (err as Error).message }, 'kernel log read failed; system_oom_kill is off');
          this.close();
        }
        return;
      }
      if (n === 0) return;
      if (!parse) continue;
      const record = this.buffer.toString('utf8', 0, n);
      const message = kmsgMessage(record);
      if (message === undefined) continue;
      const kill = this.parser.push(message);
      if (!kill) continue;
      const loggedUs = kmsgTimestampUs(record);
      // The record's stamp and hrtime are both microseconds on the kernel's monotonic clock.
      const ageUs = loggedUs === undefined ? 0 : Math.max(0, Number(process.hrtime.bigint() / 1000n) - loggedUs);
      this.options.onOomKill(kill, ageUs);
    }
  }
}
