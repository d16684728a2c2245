// One session's follower (docs/gateway.md "Following"): reads the agent's telemetry stream and
// queues every event for the archive. It starts at the archived seq (`Last-Event-ID`, or
// `replay=all` for a session with nothing archived) and, after any interruption (a cut stream, a
// silent agent, an agent restart), resumes after the newest seq it queued, so it loses nothing
// the agent still has. An agent that answers 404 has ended the session; one that cannot be
// reached is retried with backoff until the keeper (lease-keeper.ts) decides its silence has
// lasted too long.

import type { ClientRequest, IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { FILTER_CATEGORIES } from 'browser-telemetry-agent/events';
import { SilenceWatch } from '../agent-link/agent-silence.ts';
import { AgentUnreachable, type AgentAddress, type AgentClient } from './agent-client.ts';
import type { ArchiveStore } from './archive-store.ts';
import type { ArchiveWriter } from './archive-writer.ts';
import { archivedEvent, MalformedEnvelope } from './event-row.ts';
import { SseReader } from './sse-reader.ts';

const BACKOFF_INITIAL_MS = 100;
const BACKOFF_MAX_MS = 5000;
/** An agent that answers but refuses the stream (a wrong token) is asked again this rarely. */
const REFUSED_RETRY_MS = 30_000;
/**
 * Every category by name: a reader that names none does not get the opt-in ones (the DOM
 * snapshots, docs/events.md "Filters"), and the archive keeps everything.
 */
const EVERY_CATEGORY = `category=${FILTER_CATEGORIES.join(',')}`;

export interface FollowedSession extends AgentAddress {
  sessionKey: number;
  /** Newest seq already archived: the stream resumes after it. */
  archivedSeq: number;
}

export interface FollowerDeps {
  client: AgentClient;
  writer: ArchiveWriter;
  store: ArchiveStore;
  log: Logger;
  /** A stream without a byte for this long has a dead agent (3 agent keepalive periods). */
  streamSilenceMs: number;
  /** The agent said the session is gone (404): the follower has stopped. */
  onGone: (follower: Follower) => void;
  /** A `replay_stopped` came: a replay's file is final, for the replay archive (replay-archive.ts). */
  onReplayStopped?: (session: FollowedSession) => void;
}

export class Follower {
  /** Newest seq queued for the archive. */
  lastSeq: number;
  /** Unix ms of the agent's last answer (any status, any byte); undefined: none yet. */
  lastHeardAt: number | undefined;
  /** Envelopes that could not be archived (not JSON, no seq). */
  malformed = 0;
  /** Tries that did not reach the agent (refused, timed out, cut before the head). */
  unreachableTries = 0;
  private logId: string | undefined;
  private request: ClientRequest | undefined;
  private response: IncomingMessage | undefined;
  private watch: SilenceWatch | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private backoffMs = BACKOFF_INITIAL_MS;
  private stopped = false;
  private refusedLogged = false;
  /** Whether the stream is asked with every category named (EVERY_CATEGORY); an older agent refuses that. */
  private namesCategories = true;
  private streamEnded: (() => void) | undefined;
  private readonly log: Logger;

  constructor(
    readonly session: FollowedSession,
    private readonly deps: FollowerDeps,
  ) {
    this.lastSeq = session.archivedSeq;
    this.log = deps.log.child({ session_id: session.sessionId });
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Whether a stream from the agent is open now. */
  get isStreaming(): boolean {
    return this.response !== undefined;
  }

  start(): void {
    void this.connect();
  }

  /** Stops at once: the open stream is cut (what was queued stays queued). */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.closeStream();
    this.deps.writer.forget(this.session.sessionKey);
  }

  /**
   * The session has ended: reads what the open stream still brings (a terminated agent flushes
   * every event to its streams, then ends them) until it ends or `timeoutMs` passes, then stops.
   */
  async finish(timeoutMs: number): Promise<void> {
    if (this.stopped) return;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (this.response) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        timer.unref();
        this.streamEnded = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.stop();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    const params: string[] = this.namesCategories ? [EVERY_CATEGORY] : [];
    if (this.lastSeq > 0) headers['last-event-id'] = String(this.lastSeq);
    else params.push('replay=all');
    const query = params.length === 0 ? '' : `?${params.join('&')}`;
    let request: ClientRequest;
    let response: IncomingMessage;
    try {
      ({ request, response } = await this.deps.client.openStream(this.session, query, headers));
    } catch (err) {
      if (this.stopped) return;
      this.unreachableTries++;
      const code = err instanceof AgentUnreachable ? err.code : undefined;
      this.log.debug({ code, err: (err as Error).message }, 'archive follower: agent unreachable');
      this.retry();
      return;
    }
    if (this.stopped) {
      request.destroy();
      return;
    }
    this.lastHeardAt = Date.now();
    const status = response.statusCode ?? 0;
    if (status === 404) {
      response.resume();
      this.log.info({ last_seq: this.lastSeq }, 'archive follower: the agent ended the session');
      this.stop();
      this.deps.onGone(this);
      return;
    }
    if (status === 400 && this.namesCategories) {
      // An agent older than the snapshot category refuses its name: it has no opt-in category either.
      response.resume();
      this.namesCategories = false;
      this.retry(0);
      return;
    }
    if (status !== 200) {
      response.resume();
      if ((status === 401 || status === 403) && !this.refusedLogged) {
        this.refusedLogged = true;
        this.log.warn({ status }, 'archive follower: the agent rejected the registered token');
      }
      this.retry(status === 401 || status === 403 ? REFUSED_RETRY_MS : undefined);
      return;
    }
    this.refusedLogged = false;
    this.follow(request, response);
  }

  private follow(request: ClientRequest, response: IncomingMessage): void {
    this.request = request;
    this.response = response;
    request.on('error', () => undefined);
    const logId = headerText(response.headers['x-log-id']);
    if (logId !== undefined && logId !== this.logId) {
      if (this.logId !== undefined) this.log.warn({ log_id: logId, previous: this.logId }, 'archive follower: the agent serves another log now');
      this.logId = logId;
      void this.deps.store.inserts
        .recordLogId(this.session.sessionKey, logId)
        .catch((err: unknown) => this.log.warn({ err, log_id: logId }, 'archive follower: could not record the log id'));
    }
    if (headerText(response.headers['x-resume']) === 'gap') {
      this.log.warn(
        { after_seq: this.lastSeq, first_seq: headerText(response.headers['x-first-seq']) },
        'archive follower: events after the archived seq left the agent before they were archived',
      );
    }
    const reader = new SseReader();
    const { writer } = this.deps;
    const watch = new SilenceWatch(
      this.deps.streamSilenceMs,
      () => !response.isPaused(),
      () => {
        this.log.warn({ silent_ms: this.deps.streamSilenceMs }, 'archive follower: the agent went silent; reconnecting');
        response.destroy();
      },
    );
    this.watch = watch;
    let got = false;
    response.on('data', (chunk: Buffer) => {
      watch.touch();
      this.lastHeardAt = Date.now();
      for (const frame of reader.push(chunk)) {
        let event;
        try {
          event = archivedEvent(frame.data);
        } catch (err) {
          if (!(err instanceof MalformedEnvelope)) throw err;
          this.malformed++;
          if (this.malformed === 1) this.log.warn({ err: err.message, id: frame.id }, 'archive follower: an envelope could not be archived (skipped)');
          continue;
        }
        // A resumed stream never repeats a seq, but a stream restarted by hand might.
        if (event.seq <= this.lastSeq) continue;
        this.lastSeq = event.seq;
        got = true;
        writer.enqueue(this.session.sessionKey, event);
        if (event.type === 'replay_stopped') this.deps.onReplayStopped?.(this.session);
      }
      if (writer.saturated && !response.isPaused()) {
        response.pause();
        writer.whenDrained(() => {
          if (this.response === response) response.resume();
        });
      }
    });
    let done = false;
    const ended = (): void => {
      if (done) return;
      done = true;
      watch.stop();
      if (this.response === response) {
        this.response = undefined;
        this.request = undefined;
        this.watch = undefined;
      }
      const notify = this.streamEnded;
      this.streamEnded = undefined;
      notify?.();
      if (this.stopped) return;
      if (got) this.backoffMs = BACKOFF_INITIAL_MS;
      // The agent ended the stream (its session terminated, or it is shutting down) or it was cut:
      // ask again at once; a terminated session answers 404 and ends the follow.
      if (got) void this.connect();
      else this.retry();
    };
    response.on('end', ended);
    response.on('close', ended);
    response.on('error', ended);
  }

  private retry(delayMs?: number): void {
    if (this.stopped) return;
    const delay = delayMs ?? this.backoffMs;
    this.backoffMs = Math.min(BACKOFF_MAX_MS, this.backoffMs * 2);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, delay);
    this.retryTimer.unref();
  }

  private closeStream(): void {
    this.watch?.stop();
    this.watch = undefined;
    const response = this.response;
    this.response = undefined;
    this.request?.destroy();
    this.request = undefined;
    response?.destroy();
    const notify = this.streamEnded;
    this.streamEnded = undefined;
    notify?.();
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
