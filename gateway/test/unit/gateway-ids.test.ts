// Project and key ids: opaque 24-character strings that sort in creation order (ULID-like), so
// lists ordered by (created_at, id) show creation order even within one millisecond.

import { describe, expect, it } from 'vitest';
import { newId } from '../../src/storage/store.ts';

describe('newId', () => {
  it('is 24 lowercase base32 characters', () => {
    expect(newId(Date.now())).toMatch(/^[2-7a-z]{24}$/);
  });

  it('ids made in the same millisecond increase', () => {
    const now = Date.now() + 10_000;
    const ids = Array.from({ length: 1000 }, () => newId(now));
    expect(ids).toEqual([...ids].sort());
  });

  it('ids made in the same millisecond are distinct', () => {
    const now = Date.now() + 20_000;
    expect(new Set(Array.from({ length: 1000 }, () => newId(now))).size).toBe(1000);
  });

  it('an id of a later millisecond sorts after', () => {
    const now = Date.now() + 30_000;
    const earlier = newId(now);
    expect(newId(now + 1) > earlier).toBe(true);
  });
});
