// The kernel log reader when the agent may not read it: one log line, no reader, no timer.

import pino from 'pino';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Heartbeats } from '../../src/heartbeat.ts';
import { KmsgReader } from '../../src/telemetry/kmsg-reader.ts';

describe('KmsgReader', () => {
  it('says once that system_oom_kill is off when the kernel log cannot be opened', () => {
    const lines: Array<{ msg: string; path: string }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as { msg: string; path: string });
        done();
      },
    });
    const reader = KmsgReader.start({
      logger: pino({ level: 'info' }, sink),
      onOomKill: () => undefined,
      heartbeats: new Heartbeats(() => undefined),
      path: '/nonexistent/kmsg',
    });
    expect(reader).toBeUndefined();
    expect(lines).toEqual([
      expect.objectContaining({ msg: 'system_oom_kill is off: the kernel log is not readable (it needs root or CAP_SYSLOG)', path: '/nonexistent/kmsg' }),
    ]);
  });
});
