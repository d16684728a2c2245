// Fetches response bodies and request bodies from Chromium with bounded concurrency (SPEC §6.6):
// a page that finishes hundreds of requests at once gets its bodies a few at a time, in order,
// and no other event waits for them. A fetch that fails (the page navigated away, the target
// closed, the body was evicted) or takes too long settles with `undefined`: the event goes out
// without its body.

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

interface Job {
  kind: Kind;
  sessionId: string;
  requestId: string;
  resolve(body: FetchedBody | undefined): void;
}

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

  /** `Network.getResponseBody` on the session that reported `loadingFinished`. */
  responseBody(sessionId: string, requestId: string): Promise<FetchedBody | undefined> {
    return this.enqueue('Network.getResponseBody', sessionId, requestId);
  }

  /** `Network.getRequestPostData`: request bodies that were not sent inline (Blob, large). */
  requestPostData(sessionId: string, requestId: string): Promise<FetchedBody | undefined> {
    return this.enqueue('Network.getRequestPostData', sessionId, requestId);
  }

  /** Settles every waiting fetch with no body and stops; answers still coming are ignored. */
  dispose(): void {
    this.disposed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const waiting = this.queue.slice(this.head);
    this.queue = [];
    this.head = 0;
    for (const job of waiting) job.resolve(undefined);
  }

  private enqueue(kind: Kind, sessionId: string, requestId: string): Promise<FetchedBody | undefined> {
    if (this.disposed || this.queued >= this.maxQueued) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.queue.push({ kind, sessionId, requestId, resolve });
      this.pump();
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
    const finish = (body: FetchedBody | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      this.timers.delete(timer);
      this.active--;
      job.resolve(body);
      this.pump();
    };
    const timer = setTimeout(() => finish(undefined), this.timeoutMs);
    timer.unref();
    this.timers.add(timer);
    const command: Promise<FetchedBody | undefined> =
      job.kind === 'Network.getResponseBody'
        ? this.connection
            .send('Network.getResponseBody', { requestId: job.requestId }, job.sessionId)
            .then((r) => asBody(r.body, r.base64Encoded))
        : this.connection
            .send('Network.getRequestPostData', { requestId: job.requestId }, job.sessionId)
            .then((r) => asBody(r.postData, r.base64Encoded));
    command.then(finish, () => finish(undefined));
  }
}

function asBody(text: unknown, base64Encoded: unknown): FetchedBody | undefined {
  return typeof text === 'string' ? { text, base64Encoded: base64Encoded === true } : undefined;
}
