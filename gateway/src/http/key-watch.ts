// A forwarded stream is authenticated once, when it opens, and may then flow for hours: without
// this, a key deleted or expired meanwhile would keep its streams flowing. Every open forwarded
// exchange is tied to the key that opened it, and ended when that key goes:
//
// - deleted through this gateway: at once (the API calls revoked());
// - expired: at its expiry (one timer per key);
// - deleted anywhere else (another instance on the same PostgreSQL, create-key's storage, SQL):
//   at the next re-check, which asks the store every `recheckMs` (at most 30 s) which of the
//   open streams' keys are still live.
//
// A re-check that fails (the database down) ends nothing: the streams were authenticated, and
// the next re-check decides.

import type { FastifyBaseLogger } from 'fastify';
import type { GatewayStore } from '../storage/store.ts';
import type { Principal } from './auth.ts';

/** What the watch needs of an exchange: a way to end it. */
export interface KeyHolder {
  /** Ends the client's response where it is (the client sees the stream end). */
  end(): void;
}

interface WatchedKey {
  expiresAt: number | null;
  holders: Set<KeyHolder>;
  expiry: NodeJS.Timeout | undefined;
}

/** setTimeout's longest delay (about 24.8 days); a later expiry is re-armed on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class KeyWatch {
  private readonly keys = new Map<string, WatchedKey>();
  private readonly interval: NodeJS.Timeout;
  private rechecking: Promise<void> | undefined;

  constructor(
    private readonly store: GatewayStore,
    recheckMs: number,
    private readonly log: FastifyBaseLogger,
    private readonly now: () => number = Date.now,
  ) {
    this.interval = setInterval(() => void this.recheck(), recheckMs);
    this.interval.unref();
  }

  /** Ties `holder` to the key of `principal` until the returned function is called. */
  track(principal: Principal, holder: KeyHolder): () => void {
    let key = this.keys.get(principal.keyId);
    if (!key) {
      key = { expiresAt: principal.expiresAt, holders: new Set(), expiry: undefined };
      this.keys.set(principal.keyId, key);
      this.armExpiry(principal.keyId, key);
    }
    key.holders.add(holder);
    return () => this.untrack(principal.keyId, holder);
  }

  /** The key is gone (deleted through this gateway): its exchanges end now. */
  revoked(keyId: string): void {
    const key = this.keys.get(keyId);
    if (!key) return;
    this.forget(keyId, key);
    for (const holder of key.holders) holder.end();
  }

  /** Ends the exchanges of every watched key the store no longer has live; one at a time. */
  recheck(): Promise<void> {
    this.rechecking ??= this.checkStore().finally(() => (this.rechecking = undefined));
    return this.rechecking;
  }

  /** Stops the timers; the exchanges themselves are ended by their owner (the proxy). */
  close(): void {
    clearInterval(this.interval);
    for (const key of this.keys.values()) if (key.expiry) clearTimeout(key.expiry);
    this.keys.clear();
  }

  private async checkStore(): Promise<void> {
    if (this.keys.size === 0) return;
    const ids = [...this.keys.keys()];
    let live: Set<string>;
    try {
      live = await this.store.liveKeyIds(ids, this.now());
    } catch (err) {
      this.log.warn({ err }, 'could not re-check the API keys of open streams');
      return;
    }
    for (const id of ids) {
      if (!live.has(id)) {
        this.log.info({ key_id: id }, 'API key gone: ending its open streams');
        this.revoked(id);
      }
    }
  }

  private armExpiry(keyId: string, key: WatchedKey): void {
    if (key.expiresAt === null) return;
    const delay = key.expiresAt - this.now();
    if (delay <= 0) {
      // Expired between authentication and now: end the holders once they are all added.
      queueMicrotask(() => this.revoked(keyId));
      return;
    }
    key.expiry = setTimeout(
      () => {
        key.expiry = undefined;
        if (this.now() >= key.expiresAt!) this.revoked(keyId);
        else this.armExpiry(keyId, key);
      },
      Math.min(delay, MAX_TIMER_MS),
    );
    key.expiry.unref();
  }

  private untrack(keyId: string, holder: KeyHolder): void {
    const key = this.keys.get(keyId);
    if (!key) return;
    key.holders.delete(holder);
    if (key.holders.size === 0) this.forget(keyId, key);
  }

  private forget(keyId: string, key: WatchedKey): void {
    if (key.expiry) clearTimeout(key.expiry);
    key.expiry = undefined;
    this.keys.delete(keyId);
  }
}
