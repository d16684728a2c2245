import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ConnectionClosedError, IgnoredFailures, isTargetGone, ProtocolError, TargetClosedError } from '../../src/browser/cdp-errors.ts';

describe('TargetClosedError', () => {
  it('names the target and the command that was waiting', () => {
    const err = new TargetClosedError('T1', 'Runtime.evaluate');
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('TargetClosedError');
    expect(err.targetId).toBe('T1');
    expect(err.message).toBe('target closed: T1 (Runtime.evaluate)');
  });

  it('names only the target when no command is known', () => {
    expect(new TargetClosedError('T1').message).toBe('target closed: T1');
  });
});

describe('ConnectionClosedError', () => {
  it('names the command that was sent on the closed connection', () => {
    const err = new ConnectionClosedError('Browser.getVersion');
    expect(err.name).toBe('ConnectionClosedError');
    expect(err.method).toBe('Browser.getVersion');
    expect(err.message).toBe('CDP connection closed (Browser.getVersion)');
  });
});

describe('isTargetGone', () => {
  it('recognises the errors the agent raises itself', () => {
    expect(isTargetGone(new TargetClosedError('T1'))).toBe(true);
    expect(isTargetGone(new ConnectionClosedError())).toBe(true);
  });

  it.each([
    'Session with given id not found.',
    'No target with given id found',
    'Not attached to an active page',
    'Target closed',
    'WebSocket is not open: readyState 3 (CLOSED)',
  ])('recognises the answer "%s"', (message) => {
    expect(isTargetGone(new Error(message))).toBe(true);
  });

  it('does not take an ordinary protocol error for a gone target', () => {
    expect(isTargetGone(new Error("'Runtime.evaluate' wasn't found"))).toBe(false);
    expect(isTargetGone(new Error('Invalid parameters'))).toBe(false);
  });

  it('counts any error of a detached target as gone', () => {
    expect(isTargetGone(new Error('Invalid parameters'), { isDetached: true })).toBe(true);
    expect(isTargetGone(new Error('Invalid parameters'), { isDetached: false })).toBe(false);
  });

  it('accepts a thrown value that is not an Error', () => {
    expect(isTargetGone('Session with given id not found.')).toBe(true);
  });
});

describe('IgnoredFailures.mayFail', () => {
  it('gives the answer of a command that succeeds', async () => {
    await expect(new IgnoredFailures().mayFail(Promise.resolve(42))).resolves.toBe(42);
  });

  /** A debug-level logger whose lines the test reads. */
  const recordingLogger = () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    return { lines, logger: pino({ level: 'debug' }, sink) };
  };

  it('gives undefined for a command whose target went away, silently, counted as gone', async () => {
    const { lines, logger } = recordingLogger();
    const failures = new IgnoredFailures(logger);
    await expect(failures.mayFail(Promise.reject(new TargetClosedError('T1')))).resolves.toBeUndefined();
    await expect(failures.mayFail(Promise.reject(new Error('x')), { isDetached: true })).resolves.toBeUndefined();
    expect({ gone: failures.gone, other: failures.other }).toEqual({ gone: 2, other: 0 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toEqual([]);
  });

  it('logs any other failure at debug, with the command, and counts it', async () => {
    const { lines, logger } = recordingLogger();
    const failures = new IgnoredFailures(logger);
    await expect(
      failures.mayFail(Promise.reject(new ProtocolError('Page.navigate', -32602, 'Invalid parameters', 'url: string value expected'))),
    ).resolves.toBeUndefined();
    // A bug in a `.then` the command carries does not vanish either.
    await expect(
      failures.mayFail(
        Promise.resolve(1).then(() => {
          throw new TypeError('x is not a function');
        }),
      ),
    ).resolves.toBeUndefined();
    expect(failures.other).toBe(2);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((l) => [l.level, l.msg, l.method])).toEqual([
      [20, 'ignored CDP failure', 'Page.navigate'],
      [20, 'ignored CDP failure', undefined],
    ]);
    expect((lines[1]!.err as { message: string }).message).toBe('x is not a function');
  });

  it('counts and logs into its own agent only: two in one process share neither counts nor logger', async () => {
    const first = recordingLogger();
    const second = recordingLogger();
    const a = new IgnoredFailures(first.logger);
    const b = new IgnoredFailures(second.logger);
    await a.mayFail(Promise.reject(new ProtocolError('Page.navigate', -32602, 'Invalid parameters')));
    await a.mayFail(Promise.reject(new TargetClosedError('T1')));
    await b.mayFail(Promise.reject(new ProtocolError('Page.reload', -32000, 'refused')));
    expect([a.gone, a.other, b.gone, b.other]).toEqual([1, 1, 0, 1]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(first.lines.map((l) => l.method)).toEqual(['Page.navigate']);
    expect(second.lines.map((l) => l.method)).toEqual(['Page.reload']);
  });
});

describe('ProtocolError', () => {
  it("carries Chromium's code, message and data, and the command's method", () => {
    const err = new ProtocolError('Network.getResponseBody', -32000, 'No resource with given identifier found', 'R1');
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('ProtocolError');
    expect([err.method, err.code, err.protocolMessage, err.data]).toEqual(['Network.getResponseBody', -32000, 'No resource with given identifier found', 'R1']);
    expect(err.message).toBe('No resource with given identifier found (R1)');
  });
});
