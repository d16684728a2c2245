// API keys (docs/gateway.md): random with a readable prefix, ≥ 32 bytes of entropy, stored as a digest,
// shown masked as the first 8 and last 4 characters around an ellipsis.

import { describe, expect, it } from 'vitest';
import { digestApiKey, digestsEqual, expiryAfterDays, generateApiKey, looksLikeApiKey, maskApiKey } from '../../src/api-key.ts';

describe('generateApiKey', () => {
  it('starts with the readable prefix btg_', () => {
    expect(generateApiKey().key.startsWith('btg_')).toBe(true);
  });

  it('carries 32 random bytes after the prefix', () => {
    const secret = generateApiKey().key.slice(4);
    expect(Buffer.from(secret, 'base64url').length).toBe(32);
  });

  it('never repeats a key', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateApiKey().key));
    expect(keys.size).toBe(1000);
  });

  it('gives the SHA-256 hex digest of the key to store', () => {
    const { key, digest } = generateApiKey();
    expect(digest).toBe(digestApiKey(key));
  });

  it('the digest does not contain the key', () => {
    const { key, digest } = generateApiKey();
    expect(digest.includes(key.slice(4))).toBe(false);
  });

  it('gives the masked form of the key', () => {
    const { key, masked } = generateApiKey();
    expect(masked).toBe(maskApiKey(key));
  });
});

describe('maskApiKey', () => {
  it('shows the first 8 and the last 4 characters around an ellipsis', () => {
    expect(maskApiKey('btg_ABCDEFGHIJKLMNOPQRSTUVWXYZ')).toBe('btg_ABCD…WXYZ');
  });

  it('hides all but 12 characters of a generated key', () => {
    expect(generateApiKey().masked.replace('…', '').length).toBe(12);
  });
});

describe('looksLikeApiKey', () => {
  it('accepts a generated key', () => {
    expect(looksLikeApiKey(generateApiKey().key)).toBe(true);
  });

  it.each(['', 'btg_', 'sk_live_abc', `btg_${'a'.repeat(42)}`, `btg_${'a'.repeat(44)}`, `btg_${'a'.repeat(42)}!`])('rejects %j', (text) => {
    expect(looksLikeApiKey(text)).toBe(false);
  });
});

describe('digestsEqual', () => {
  it('is true for the same digest', () => {
    const digest = digestApiKey('a');
    expect(digestsEqual(digest, digestApiKey('a'))).toBe(true);
  });

  it('is false for another digest', () => {
    expect(digestsEqual(digestApiKey('a'), digestApiKey('b'))).toBe(false);
  });

  it('is false for digests of different lengths', () => {
    expect(digestsEqual(digestApiKey('a'), 'abcd')).toBe(false);
  });
});

describe('expiryAfterDays', () => {
  it('adds whole days to the creation time', () => {
    expect(expiryAfterDays(1_000, 2)).toBe(1_000 + 2 * 86_400_000);
  });

  it('is null (never) without days', () => {
    expect([expiryAfterDays(1_000, null), expiryAfterDays(1_000, undefined)]).toEqual([null, null]);
  });
});
