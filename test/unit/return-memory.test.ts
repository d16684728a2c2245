// returnMemory (docs/operations.md "Catch-up readers under load"): one full collection, which frees
// Buffers that are garbage but outside V8's heap, and not again within a minute.

import { expect, it } from 'vitest';
import { returnMemory } from '../../src/stream/return-memory.ts';

it('frees garbage Buffers at once, and runs at most once a minute', () => {
  let garbage: Buffer[] | undefined = Array.from({ length: 200 }, () => Buffer.alloc(64 * 1024, 1));
  const held = process.memoryUsage().arrayBuffers;
  garbage = undefined;
  expect(garbage).toBeUndefined();
  const now = Date.now();
  expect(returnMemory(now)).toBe(true);
  // 12.5 MiB were garbage: the collection freed them.
  expect(held - process.memoryUsage().arrayBuffers).toBeGreaterThan(10 * 1024 * 1024);
  expect(returnMemory(now + 59_000)).toBe(false);
  expect(returnMemory(now + 61_000)).toBe(true);
});
