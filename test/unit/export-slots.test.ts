// The queue that bounds the trace archives built at once (docs/export.md "Limits").

import { describe, expect, it } from 'vitest';
import { Slots } from '../../src/http/trace-routes.ts';

describe('Slots', () => {
  it('lets the holders beyond its size wait until one releases, first come first served', async () => {
    const slots = new Slots(1);
    const order: string[] = [];
    const first = await slots.acquire();
    const second = slots.acquire().then((release) => {
      order.push('second');
      return release;
    });
    const third = slots.acquire().then((release) => {
      order.push('third');
      return release;
    });
    await Promise.resolve();
    expect(order).toEqual([]);
    first();
    (await second)();
    (await third)();
    expect(order).toEqual(['second', 'third']);
  });

  it('frees one place however many times a holder releases', async () => {
    const slots = new Slots(1);
    const release = await slots.acquire();
    release();
    release();
    const again = await slots.acquire();
    let waiting = true;
    const next = slots.acquire().then(() => (waiting = false));
    await Promise.resolve();
    await Promise.resolve();
    expect(waiting).toBe(true);
    again();
    await next;
    expect(waiting).toBe(false);
  });
});
