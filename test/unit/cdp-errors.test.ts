import { describe, expect, it } from 'vitest';
import { ConnectionClosedError, isTargetGone, mayFail, TargetClosedError } from '../../src/browser/cdp-errors.ts';

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

describe('mayFail', () => {
  it('gives the answer of a command that succeeds', async () => {
    await expect(mayFail(Promise.resolve(42))).resolves.toBe(42);
  });

  it('gives undefined for a command that fails', async () => {
    await expect(mayFail(Promise.reject(new TargetClosedError('T1')))).resolves.toBeUndefined();
  });
});
