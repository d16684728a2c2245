// CatchUpScheduler (src/stream/catch-up.ts, docs/events.md "Catching up from disk"): turns off the
// caller's path, round-robin fairness between ready readers, the per-turn budget, the cap on
// readers replaying at once (the rest queued in order) and the refusal past the queue's cap.

import { afterEach, describe, expect, it } from 'vitest';
import { CatchUpFullError, CatchUpScheduler, type CatchUpReader } from '../../src/stream/catch-up.ts';

/** A reader with `steps` reads to do; each read takes `costMs` of busy time. */
class FakeReader implements CatchUpReader {
  done = 0;
  constructor(
    readonly name: string,
    private readonly scheduler: CatchUpScheduler,
    private readonly log: string[],
    private steps: number,
    private readonly costMs = 0,
  ) {}

  catchUpStep(): void {
    const until = performance.now() + this.costMs;
    while (performance.now() < until);
    this.log.push(this.name);
    this.done++;
    if (--this.steps > 0) this.scheduler.request(this);
    else this.scheduler.release(this);
  }
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function untilIdle(readers: FakeReader[], wanted: number[]): Promise<void> {
  for (let i = 0; i < 10_000 && readers.some((r, k) => r.done < wanted[k]!); i++) await turn();
}

let scheduler: CatchUpScheduler | undefined;
afterEach(() => scheduler?.close());

describe('CatchUpScheduler', () => {
  it('runs no read on the caller’s path: the first step comes in a later turn', async () => {
    scheduler = new CatchUpScheduler({ maxActive: 4, maxQueued: 4, turnBudgetMs: 50 });
    const log: string[] = [];
    const reader = new FakeReader('a', scheduler, log, 1);
    scheduler.request(reader);
    expect(log).toEqual([]);
    await turn();
    await turn();
    expect(log).toEqual(['a']);
  });

  it('gives every ready reader one step before any gets a second (round-robin)', async () => {
    scheduler = new CatchUpScheduler({ maxActive: 8, maxQueued: 8, turnBudgetMs: 50 });
    const log: string[] = [];
    const readers = ['a', 'b', 'c'].map((name) => new FakeReader(name, scheduler!, log, 3));
    for (const reader of readers) scheduler.request(reader);
    await untilIdle(readers, [3, 3, 3]);
    expect(log).toEqual(['a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c']);
    expect(scheduler.stepCount).toBe(9);
    expect(scheduler.activeCount).toBe(0);
  });

  it('spends at most about one budget per turn, and the readers it did not reach go first next turn', async () => {
    scheduler = new CatchUpScheduler({ maxActive: 8, maxQueued: 8, turnBudgetMs: 4 });
    const log: string[] = [];
    // Each step costs 3 ms: a 4 ms budget has room for two steps in a turn (the second starts before the deadline).
    const readers = ['a', 'b', 'c', 'd'].map((name) => new FakeReader(name, scheduler!, log, 2, 3));
    for (const reader of readers) scheduler.request(reader);
    // One turn of the scheduler (it was scheduled before this wait).
    await turn();
    expect(log.length).toBeGreaterThanOrEqual(1);
    expect(log.length).toBeLessThanOrEqual(2);
    await untilIdle(readers, [2, 2, 2, 2]);
    // Fair across turns: the order of every round is kept.
    expect(log).toEqual(['a', 'b', 'c', 'd', 'a', 'b', 'c', 'd']);
  });

  it('lets maxActive readers replay at once and queues the rest in order, admitted as slots free', async () => {
    scheduler = new CatchUpScheduler({ maxActive: 2, maxQueued: 10, turnBudgetMs: 50 });
    const log: string[] = [];
    const readers = ['a', 'b', 'c', 'd'].map((name) => new FakeReader(name, scheduler!, log, 2));
    for (const reader of readers) scheduler.request(reader);
    expect(scheduler.activeCount).toBe(2);
    expect(scheduler.queuedCount).toBe(2);
    await untilIdle(readers, [2, 2, 2, 2]);
    // a and b finish before c and d start; c before d.
    expect(log.indexOf('c')).toBeGreaterThan(log.lastIndexOf('a'));
    expect(log.indexOf('c')).toBeGreaterThan(log.lastIndexOf('b'));
    expect(log.indexOf('d')).toBeGreaterThan(log.indexOf('c'));
    expect(scheduler.activeCount).toBe(0);
    expect(scheduler.queuedCount).toBe(0);
  });

  it('refuses a replay with a 503 error past the queue’s cap, and admits again once one leaves', () => {
    scheduler = new CatchUpScheduler({ maxActive: 1, maxQueued: 2, turnBudgetMs: 50 });
    const log: string[] = [];
    const readers = ['a', 'b', 'c'].map((name) => new FakeReader(name, scheduler!, log, 5));
    for (const reader of readers) {
      scheduler.checkAdmit();
      scheduler.request(reader);
    }
    expect(scheduler.canAdmit()).toBe(false);
    let refused: unknown;
    try {
      scheduler.checkAdmit();
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(CatchUpFullError);
    expect(refused).toMatchObject({ status: 503, code: 'browser_unavailable' });
    expect((refused as Error).message).toContain('1 replaying, 2 waiting');
    // A queued reader that leaves frees its place in the queue.
    scheduler.release(readers[2]!);
    expect(scheduler.queuedCount).toBe(1);
    expect(scheduler.canAdmit()).toBe(true);
  });

  it('calls onIdle when the last active reader is released, and a released reader gets no more steps', async () => {
    let idle = 0;
    scheduler = new CatchUpScheduler({ maxActive: 2, maxQueued: 2, turnBudgetMs: 50, onIdle: () => idle++ });
    const log: string[] = [];
    const a = new FakeReader('a', scheduler, log, 1);
    const b = new FakeReader('b', scheduler, log, 100);
    scheduler.request(a);
    scheduler.request(b);
    scheduler.release(b);
    await untilIdle([a], [1]);
    await turn();
    expect(log).toEqual(['a']);
    expect(idle).toBe(1);
  });
});
