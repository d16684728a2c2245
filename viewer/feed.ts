// The telemetry stream as the viewer reads it: fetch with the viewer cookie, resume with
// Last-Event-ID after any drop, back off 250 ms doubling to 5 s, and narrow the stream with the
// server-side filters when the user narrows the view (docs/viewer.md "Stream").
//
// The filters are newer than the stream: an agent without them may answer 400 to the unknown
// query parameters (then the feed drops them for good and filters in the page only), or ignore
// them (then events of other categories arrive, and the page tells the feed: `filtersIgnored`).

import { SseParser } from './sse.ts';

export type FeedState =
  /** Opening the stream. */
  | 'connecting'
  /** Events flow. */
  | 'live'
  /** The stream dropped; trying again. */
  | 'reconnecting'
  /** 401: the viewer cookie is missing, expired or from an agent that restarted. */
  | 'unauthorized'
  /** 404: the session ended. */
  | 'ended';

export interface FeedConnection {
  /**
   * The event log read (`X-Log-Id`, else the agent process's `X-Agent-Instance`): another value
   * means other events under the same seqs.
   */
  logId: string | null;
  /** How the resume went (`X-Resume`: exact, gap, reset); undefined for a fresh start. */
  resume: string | undefined;
  /** The first seq this connection starts at (`X-First-Seq`), before any filter. */
  firstSeq: number | undefined;
  /** The seq the connection resumed after (its Last-Event-ID). */
  resumedAfter: number | undefined;
  /** Whether the server was asked to filter this connection (false again once it ignores it). */
  filtered: boolean;
  /** The categories asked for; undefined: all. */
  categories: readonly string[] | undefined;
  /** A replay of everything retained (first connection, or a widened filter). */
  replay: boolean;
}

export interface FeedHandlers {
  /** One frame: its seq and its `data` (an envelope, parsed by the receiver). */
  frame(seq: number, data: string): void;
  state(state: FeedState, detail: string): void;
  connected(connection: FeedConnection): void;
}

const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 5_000;
/** No byte for this long (three default keepalive periods) and the connection is presumed dead. */
const SILENCE_MS = 45_000;

export class TelemetryFeed {
  private controller: AbortController | undefined;
  private stopped = true;
  private lastSeq: number | undefined;
  private categories: readonly string[] | undefined;
  /** False once the server refused the filter parameters (an agent older than them). */
  private serverFilters = true;
  private replayNext = true;
  private backoff = BACKOFF_FIRST_MS;
  private wake: (() => void) | undefined;
  private run: Promise<void> | undefined;

  constructor(
    /** The stream URL (`/browsers/{id}/telemetry`). */
    private readonly url: URL,
    private readonly handlers: FeedHandlers,
  ) {}

  /** Whether the current connection is narrowed by the server (seq holes are then expected). */
  get filtered(): boolean {
    return this.categories !== undefined && this.serverFilters;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.run = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.controller?.abort();
    this.wake?.();
    await this.run;
  }

  /**
   * Narrow the stream to `categories` (undefined: everything). `replay` restarts from the oldest
   * retained event (a widened filter: events of the added categories were never received).
   */
  setCategories(categories: readonly string[] | undefined, replay: boolean): void {
    this.categories = categories;
    if (replay) this.replayNext = true;
    this.reconnectNow();
  }

  /** The server sent an event the filter excludes: it does not know the filters. */
  filtersIgnored(): void {
    this.serverFilters = false;
  }

  /** Remember the seq of an event received, so a new connection resumes after it. */
  received(seq: number): void {
    if (this.lastSeq === undefined || seq > this.lastSeq) this.lastSeq = seq;
  }

  /** Seq numbering began again (another agent process): resume from its oldest event. */
  restartNumbering(): void {
    this.lastSeq = undefined;
    this.replayNext = true;
  }

  private reconnectNow(): void {
    this.backoff = 0;
    this.controller?.abort();
    this.wake?.();
  }

  private async loop(): Promise<void> {
    let first = true;
    while (!this.stopped) {
      this.handlers.state(first ? 'connecting' : 'reconnecting', '');
      first = false;
      let outcome: 'retry' | 'stop';
      try {
        outcome = await this.connect();
      } catch (err) {
        outcome = 'retry';
        if (!this.stopped && !(err instanceof DOMException && err.name === 'AbortError')) {
          this.handlers.state('reconnecting', err instanceof Error ? err.message : String(err));
        }
      }
      if (outcome === 'stop' || this.stopped) return;
      await this.sleep(this.backoff);
      this.backoff = Math.min(Math.max(this.backoff * 2, BACKOFF_FIRST_MS), BACKOFF_MAX_MS);
    }
  }

  /** One connection, until it ends. */
  private async connect(): Promise<'retry' | 'stop'> {
    const controller = new AbortController();
    this.controller = controller;
    const url = new URL(this.url);
    const filtered = this.filtered;
    if (filtered) url.searchParams.set('category', this.categories!.join(','));
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    const replay = this.replayNext || this.lastSeq === undefined;
    if (replay) url.searchParams.set('replay', 'all');
    else headers['last-event-id'] = String(this.lastSeq);

    const response = await fetch(url, { headers, credentials: 'same-origin', cache: 'no-store', signal: controller.signal });
    if (response.status === 401 || response.status === 403) {
      this.handlers.state('unauthorized', await errorMessage(response));
      return 'stop';
    }
    if (response.status === 404) {
      this.handlers.state('ended', await errorMessage(response));
      return 'stop';
    }
    if (response.status === 400 && filtered) {
      // An agent without the stream filters: filter in the page from now on.
      this.serverFilters = false;
      this.backoff = 0;
      return 'retry';
    }
    if (response.status !== 200 || response.body === null) throw new Error(`stream answered ${response.status}: ${await errorMessage(response)}`);

    this.replayNext = false;
    this.backoff = BACKOFF_FIRST_MS;
    const firstSeq = Number(response.headers.get('x-first-seq') ?? NaN);
    this.handlers.connected({
      logId: response.headers.get('x-log-id') ?? response.headers.get('x-agent-instance'),
      resume: response.headers.get('x-resume') ?? undefined,
      firstSeq: Number.isSafeInteger(firstSeq) ? firstSeq : undefined,
      resumedAfter: replay ? undefined : this.lastSeq,
      filtered,
      categories: filtered ? this.categories : undefined,
      replay,
    });
    this.handlers.state('live', '');
    await this.read(response.body, controller);
    return 'retry';
  }

  private async read(body: ReadableStream<Uint8Array>, controller: AbortController): Promise<void> {
    const parser = new SseParser();
    const decoder = new TextDecoder();
    const reader = body.getReader();
    let silence = setTimeout(() => controller.abort(), SILENCE_MS);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        clearTimeout(silence);
        silence = setTimeout(() => controller.abort(), SILENCE_MS);
        for (const message of parser.push(decoder.decode(value, { stream: true }))) {
          const seq = Number(message.id);
          if (message.id === undefined || !Number.isSafeInteger(seq)) continue;
          this.received(seq);
          this.handlers.frame(seq, message.data);
        }
      }
    } finally {
      clearTimeout(silence);
      reader.cancel().catch(() => undefined);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}

/** The `message` of an error body, else the status text. */
async function errorMessage(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { message?: unknown };
    if (typeof body.message === 'string') return body.message;
  } catch {
    // Not JSON.
  }
  return response.statusText || `HTTP ${response.status}`;
}
