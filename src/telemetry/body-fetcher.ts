// Fetches response bodies and request bodies from Chromium with bounded concurrency (docs/events.md#truncation-limits):
// a page that finishes hundreds of requests at once gets its bodies a few at a time, in order,
// and no other event waits for them. When they are asked is decided before (body-schedule.ts); an
// urgent fetch (a body about to be dropped by a navigation) is sent at once, past the limit. A
// fetch that fails (the page navigated away, the target closed, the body was evicted) or takes
// too long settles without a body: the event goes out without it.

import type { CdpConnection } from '../browser/cdp-connection.ts';
import type { FetchedBody } from './network.ts';

export interface BodyFetcherOptions {
  /** Commands in flight at once. */
  concurrency?: number;
  /** A command not answered by then settles with no body (its answer is ignored). */
  timeoutMs?: number;
  /** Fetches waiting beyond this many are not made (protects memory on a runaway page). */
  maxQueued?: number;
}

type Kind = 'Network.getResponseBody' | 'Network.getRequestPostData';

/** How a fetch ended: the body, or why there is none. */
export type BodyResult = { ok: true; body: FetchedBody } | { ok: false; reason: 'evicted' | 'failed' };

interface Job {
  kind: Kind;
  sessionId: string;
  requestId: string;
  resolve(result: BodyResult): void;
}

const FAILED: BodyResult = { ok: false, reason: 'failed' };
const EVICTED: BodyResult = { ok: false, reason: 'evicted' };

export const DEFAULT_BODY_FETCH_CONCURRENCY = 4;
const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_QUEUED = 10_000;

export class BodyFetcher {
  private readonly concurrency: number;
  private readonly timeoutMs: number;
  private readonly maxQueued: number;
  /** FIFO; `head` is the next job to start (the array is compacted now and then). */
  private queue: Job[] = [];
  private head = 0;
  private active = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private disposed = false;

  constructor(
    private readonly connection: Pick<CdpConnection, 'send'>,
    options: BodyFetcherOptions = {},
  ) {
    this.concurrency = Math.max(1, options.concurrency ?? DEFAULT_BODY_FETCH_CONCURRENCY);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxQueued = options.maxQueued ?? DEFAULT_MAX_QUEUED;
  }

  /** Commands sent and not yet settled. */
  get inFlight(): number {
    return this.active;
  }

  /** Fetches waiting for a free slot. */
  get queued(): number {
    return this.queue.length - this.head;
  }

  /**
   * `Network.getResponseBody` on the session that reported `loadingFinished`. `urgent`: sent now
   * whatever is in flight (the body is about to be dropped by Chromium).
   */
  responseBody(sessionId: string, requestId: string, urgent = false): Promise<BodyResult> {
    return this.enqueue('Network.getResponseBody', sessionId, requestId, urgent);
  }

  /** `Network.getRequestPostData`: request bodies that were not sent inline (Blob, large). */
  requestPostData(sessionId: string, requestId: string): Promise<FetchedBody | undefined> {
    return this.enqueue('Network.getRequestPostData', sessionId, requestId, false).then((r) => (r.ok ? r.body : undefined));
  }

  /** Settles every waiting fetch with no body and stops; answers still coming are ignored. */
  dispose(): void {
    this.disposed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const waiting = this.queue.slice(this.head);
    this.queue = [];
    this.head = 0;
    for (const job of waiting) job.resolve(FAILED);
  }

  private enqueue(kind: Kind, sessionId: string, requestId: string, urgent: boolean): Promise<BodyResult> {
    if (this.disposed || (!urgent && this.queued >= this.maxQueued)) return Promise.resolve(FAILED);
    return new Promise((resolve) => {
      const job = { kind, sessionId, requestId, resolve };
      if (urgent) this.run(job);
      else {
        this.queue.push(job);
        this.pump();
      }
    });
  }

  private pump(): void {
    while (!this.disposed && this.active < this.concurrency && this.head < this.queue.length) {
      const job = this.queue[this.head++]!;
      if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      this.run(job);
    }
  }

  private run(job: Job): void {
    this.active++;
    let settled = false;
    const finish = (result: BodyResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      this.timers.delete(timer);
      this.active--;
      job.resolve(result);
      this.pump();
    };
    const timer = setTimeout(() => finish(FAILED), this.timeoutMs);
    timer.unref();
    this.timers.add(timer);
    const command: Promise<BodyResult> =
      job.kind === 'Network.getResponseBody'
        ? this.connection.send('Network.getResponseBody', { requestId: job.requestId }, job.sessionId).then((r) => asBody(r.body, r.base64Encoded))
        : this.connection.send('Network.getRequestPostData', { requestId: job.requestId }, job.sessionId).then((r) => asBody(r.postData, r.base64Encoded));
    command.then(finish, (err: unknown) => finish(isEviction(err) ? EVICTED : FAILED));
  }
}

function asBody(text: unknown, base64Encoded: unknown): BodyResult {
  return typeof text === 'string' ? { ok: true, body: { text, base64Encoded: base64Encoded === true } } : FAILED;
}

/**
 * Chromium's answer for a body it no longer holds because newer ones pushed it out of the
 * inspector's buffer ("Request content was evicted from inspector cache").
 */
function isEviction(err: unknown): boolean {
  return err instanceof Error && /evicted/i.test(err.message);
}
