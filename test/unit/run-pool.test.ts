// RunPool (src/stream/run-pool.ts, docs/operations.md "Catch-up readers under load"): the runs
// catch-up readers read from disk live in reused slots, so a burst's memory is the pool's and no
// more; a slot is free again only once nothing holds it.

import { describe, expect, it } from 'vitest';
import { RunPool } from '../../src/stream/run-pool.ts';

describe('RunPool', () => {
  it('gives a released slot to the next run: the memory of one burst serves the next', () => {
    const pool = new RunPool(2, 16);
    const first = pool.acquire()!;
    first.lease.release();
    const second = pool.acquire()!;
    expect(second.lease.slot).toBe(first.lease.slot);
    expect(second.bytes.buffer).toBe(first.bytes.buffer);
  });

  it('keeps a slot while a write still holds it, after the cache let go', () => {
    const pool = new RunPool(1, 16);
    const { lease } = pool.acquire()!;
    lease.retain(); // a socket write in flight
    lease.release(); // the cache lets go
    expect(pool.acquire()).toBeUndefined();
    lease.release(); // the write's callback
    expect(pool.inUse).toBe(0);
    expect(pool.acquire()).toBeDefined();
  });

  it('answers undefined when every slot is held, and holds no more memory than its slots', () => {
    const pool = new RunPool(2, 16);
    const a = pool.acquire()!;
    const b = pool.acquire()!;
    expect(pool.acquire()).toBeUndefined();
    expect(a.bytes.buffer.byteLength).toBe(32);
    expect(b.bytes.byteOffset).toBe(16);
  });
});
