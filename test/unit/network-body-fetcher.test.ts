// The bounded-concurrency body fetcher over a fake CDP connection.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BodyFetcher } from '../../src/telemetry/body-fetcher.ts';
import { FakeConnection } from './support/fake-connection.ts';

/** A connection whose getResponseBody answers only when the test says so. */
function heldConnection() {
  const connection = new FakeConnection();
  const held: Array<{ requestId: string; answer(body: string): void; fail(message?: string): void }> = [];
  connection.answers.set(
    'Network.getResponseBody',
    (params) =>
      new Promise((resolve, reject) => {
        held.push({
          requestId: (params as { requestId: string }).requestId,
          answer: (body) => resolve({ body, base64Encoded: false }),
          fail: (message = 'No resource with given identifier found') => reject(new Error(message)),
        });
      }),
  );
  return { connection, held };
}

describe('BodyFetcher', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('sends at most `concurrency` commands at once, in arrival order', async () => {
    const { connection, held } = heldConnection();
    const fetcher = new BodyFetcher(connection.asConnection(), { concurrency: 2 });
    const results = ['a', 'b', 'c'].map((id) => fetcher.responseBody('S1', id));
    expect(held.map((h) => h.requestId)).toEqual(['a', 'b']);
    expect(fetcher.queued).toBe(1);
    held[0]!.answer('A');
    await expect(results[0]).resolves.toEqual({ ok: true, body: { text: 'A', base64Encoded: false } });
    expect(held.map((h) => h.requestId)).toEqual(['a', 'b', 'c']);
  });

  it('asks on the given session', () => {
    const { connection } = heldConnection();
    void new BodyFetcher(connection.asConnection()).responseBody('S-iframe', 'R1');
    expect(connection.sent[0]).toEqual({ method: 'Network.getResponseBody', params: { requestId: 'R1' }, sessionId: 'S-iframe' });
  });

  it('settles a failed fetch with no body and frees its slot', async () => {
    const { connection, held } = heldConnection();
    const fetcher = new BodyFetcher(connection.asConnection(), { concurrency: 1 });
    const first = fetcher.responseBody('S1', 'a');
    void fetcher.responseBody('S1', 'b');
    held[0]!.fail();
    await expect(first).resolves.toEqual({ ok: false, reason: 'failed' });
    expect(held.map((h) => h.requestId)).toEqual(['a', 'b']);
  });

  it('tells a body evicted from the inspector cache from other failures', async () => {
    const { connection, held } = heldConnection();
    const fetcher = new BodyFetcher(connection.asConnection());
    const evicted = fetcher.responseBody('S1', 'a');
    held[0]!.fail('Request content was evicted from inspector cache');
    await expect(evicted).resolves.toEqual({ ok: false, reason: 'evicted' });
  });

  it('sends an urgent fetch at once, past the concurrency limit', () => {
    const { connection, held } = heldConnection();
    const fetcher = new BodyFetcher(connection.asConnection(), { concurrency: 1 });
    void fetcher.responseBody('S1', 'a');
    void fetcher.responseBody('S1', 'b');
    void fetcher.responseBody('S1', 'now', true);
    expect(held.map((h) => h.requestId)).toEqual(['a', 'now']);
    expect(fetcher.queued).toBe(1);
  });

  it('gives up on a fetch unanswered after the timeout and frees its slot', async () => {
    const { connection, held } = heldConnection();
    const fetcher = new BodyFetcher(connection.asConnection(), { concurrency: 1, timeoutMs: 1000 });
    const first = fetcher.responseBody('S1', 'a');
    void fetcher.responseBody('S1', 'b');
    await vi.advanceTimersByTimeAsync(1000);
    await expect(first).resolves.toEqual({ ok: false, reason: 'failed' });
    expect(fetcher.inFlight).toBe(1);
    expect(held.map((h) => h.requestId)).toEqual(['a', 'b']);
  });

  it('fetches request bodies with getRequestPostData, keeping the base64 flag', async () => {
    const connection = new FakeConnection();
    connection.answers.set('Network.getRequestPostData', async () => ({ postData: '//5B', base64Encoded: true }));
    const fetcher = new BodyFetcher(connection.asConnection());
    await expect(fetcher.requestPostData('S1', 'R1')).resolves.toEqual({ text: '//5B', base64Encoded: true });
    expect(connection.sent[0]!.method).toBe('Network.getRequestPostData');
  });

  it('makes no fetch beyond maxQueued waiting ones', async () => {
    const { connection } = heldConnection();
    const fetcher = new BodyFetcher(connection.asConnection(), { concurrency: 1, maxQueued: 1 });
    void fetcher.responseBody('S1', 'a');
    void fetcher.responseBody('S1', 'b');
    await expect(fetcher.responseBody('S1', 'c')).resolves.toEqual({ ok: false, reason: 'failed' });
    expect(fetcher.queued).toBe(1);
  });

  it('settles waiting fetches with no body on dispose and leaves no timer behind', async () => {
    const { connection, held } = heldConnection();
    const fetcher = new BodyFetcher(connection.asConnection(), { concurrency: 1 });
    void fetcher.responseBody('S1', 'a');
    const waiting = fetcher.responseBody('S1', 'b');
    fetcher.dispose();
    await expect(waiting).resolves.toEqual({ ok: false, reason: 'failed' });
    expect(vi.getTimerCount()).toBe(0);
    held[0]!.answer('late');
    await vi.advanceTimersByTimeAsync(0);
    expect(held).toHaveLength(1);
  });
});
