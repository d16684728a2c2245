// API keys (docs/gateway.md): random secrets with a readable prefix, stored only as a SHA-256 digest and
// shown afterwards only in masked form. 32 random bytes are far beyond guessing, so a fast
// digest is enough (no password hashing needed); lookups go by digest and the match is
// confirmed with timingSafeEqual.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Every key starts with this, so a leaked key is recognisable (secret scanners, logs). */
export const API_KEY_PREFIX = 'btg_';
const SECRET_BYTES = 32;
/** 32 bytes in base64url: 43 characters. */
const KEY_PATTERN = /^btg_[A-Za-z0-9_-]{43}$/;

/** Longest lifetime a key can be given (the official SDK's documented bound). */
export const MAX_DAYS_TO_EXPIRE = 3650;
const DAY_MS = 86_400_000;

/** Expiry of a key created at `now` (ms) that lives `days` days; null: never expires. */
export function expiryAfterDays(now: number, days: number | null | undefined): number | null {
  return days === null || days === undefined ? null : now + days * DAY_MS;
}

export interface NewApiKey {
  /** The plaintext, returned once at creation and never stored. */
  key: string;
  /** Hex SHA-256 of the plaintext: what the store keeps. */
  digest: string;
  masked: string;
}

export function generateApiKey(): NewApiKey {
  const key = API_KEY_PREFIX + randomBytes(SECRET_BYTES).toString('base64url');
  return { key, digest: digestApiKey(key), masked: maskApiKey(key) };
}

export function digestApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** First 8 and last 4 characters around an ellipsis: `btg_AbCd…wxyz`. */
export function maskApiKey(key: string): string {
  return `${key.slice(0, 8)}…${key.slice(-4)}`;
}

/** Whether `text` has the shape of a key this gateway issues (no lookup needed otherwise). */
export function looksLikeApiKey(text: string): boolean {
  return KEY_PATTERN.test(text);
}

/** Constant-time comparison of two hex digests of equal length. */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}
