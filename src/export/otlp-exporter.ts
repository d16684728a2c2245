// The OTLP log export (docs/export.md): follows the event log, queues the events of the exported
// categories in a bounded queue, and sends them in batches through the OpenTelemetry SDK's
// OTLP/HTTP log exporter (protobuf or JSON), retrying with backoff while the receiver is down.
//
// The event log's observer runs on the producer's path: it only pushes to the queue and, once per
// batch, arms a timer. Turning events into log records, serializing and sending happen in the
// batch step, one request at a time. A batch stays at the head of the queue until the receiver
// accepts it, so a receiver that is down loses nothing the queue holds; what does not fit is
// refused and counted (docs/export.md "Queue, retry, drops").

import type { OTLPLogExporter as JsonLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import type { OTLPLogExporter as ProtobufLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import type { Resource, resourceFromAttributes } from '@opentelemetry/resources';
import type { LogRecordExporter, ReadableLogRecord } from '@opentelemetry/sdk-logs';
import type { Logger } from 'pino';
import { EVENT_CATEGORIES, EVENT_TYPE_CATEGORY, type EventCategory } from '../../injected/schema.ts';
import type { CdpConnection } from '../browser/cdp-connection.ts';
import type { StartScope } from '../cleanup-stack.ts';
import type { AppendObserver, EventLog } from '../stream/event-log.ts';
import { VERSION } from '../version.ts';
import { describeUrl, type OtlpConfig } from './otlp-config.ts';
import { OtlpQueue } from './otlp-queue.ts';
import { toLogRecord, type InstrumentationScope } from './otlp-record.ts';

/** Timings; tests shorten them. */
export interface OtlpExportTiming {
  /** Longest wait before queued events are sent (a full batch goes at once). Default 1000. */
  batchDelayMs?: number;
  /** First pause after a failed batch, doubled up to retryMaxMs. Default 1000. */
  retryInitialMs?: number;
  /** Default 30000. */
  retryMaxMs?: number;
  /** close(): how long what is queued may take to go out. Default 2000. */
  closeTimeoutMs?: number;
}

export interface OtlpExporterOptions {
  config: OtlpConfig;
  /** The agent's session: the `session.id` resource attribute. */
  sessionId: string;
  logger: Logger;
  timing?: OtlpExportTiming;
  sdk: OtlpSdk;
}

/** The pieces of the OpenTelemetry SDK the exporter uses. */
export interface OtlpSdk {
  JsonLogExporter: typeof JsonLogExporter;
  ProtobufLogExporter: typeof ProtobufLogExporter;
  resourceFromAttributes: typeof resourceFromAttributes;
}

/**
 * The SDK, loaded only when an endpoint is configured: a start without OTLP does not load (or keep)
 * its modules (docs/operations.md "Running it").
 */
export async function loadOtlpSdk(): Promise<OtlpSdk> {
  const [json, protobuf, resources] = await Promise.all([
    import('@opentelemetry/exporter-logs-otlp-http'),
    import('@opentelemetry/exporter-logs-otlp-proto'),
    import('@opentelemetry/resources'),
  ]);
  return { JsonLogExporter: json.OTLPLogExporter, ProtobufLogExporter: protobuf.OTLPLogExporter, resourceFromAttributes: resources.resourceFromAttributes };
}

/**
 * Start-up's OTLP step: an exporter that sees every event `log` admits (converting and sending off
 * the producer's path), when an endpoint is configured; closed again if start-up fails later.
 */
export async function startOtlpExport(
  config: OtlpConfig | undefined,
  options: Omit<OtlpExporterOptions, 'config' | 'sdk'>,
  log: EventLog,
  scope: StartScope,
): Promise<OtlpExporter | undefined> {
  if (config === undefined) return undefined;
  const exporter = new OtlpExporter({ ...options, config, sdk: await loadOtlpSdk() });
  scope.opened(() => exporter.close());
  exporter.follow(log);
  return exporter;
}

export type OtlpDropReason = 'queue_full' | 'rejected' | 'shutdown';
export type OtlpRequestOutcome = 'success' | 'failed' | 'rejected';

/** What /metrics reads when scraped: plain fields, bumped by the exporter. */
export interface OtlpExportStats {
  /** Events the receiver accepted. */
  readonly exported: number;
  readonly dropped: Readonly<Record<OtlpDropReason, number>>;
  /** Export requests (batches) by outcome; the SDK's own quick retries inside one are not counted. */
  readonly requests: Readonly<Record<OtlpRequestOutcome, number>>;
  readonly queuedEvents: number;
  readonly queuedBytes: number;
  /** False from a failed request until the next accepted one. */
  readonly up: boolean;
}

/** Events per request at most (the SDK's BatchLogRecordProcessor default). */
export const MAX_BATCH_EVENTS = 512;

const SERVICE_NAME = 'browser-telemetry-agent';
/** ExportResultCode.SUCCESS of @opentelemetry/core. */
const EXPORT_SUCCESS = 0;

type ExportResult = Parameters<Parameters<LogRecordExporter['export']>[1]>[0];
type SendOutcome = { kind: 'sent' } | { kind: 'failed' | 'rejected'; error: Error };
type ExportState = 'ok' | 'failing' | 'rejecting';

export class OtlpExporter implements OtlpExportStats {
  exported = 0;
  readonly dropped: Record<OtlpDropReason, number> = { queue_full: 0, rejected: 0, shutdown: 0 };
  readonly requests: Record<OtlpRequestOutcome, number> = { success: 0, failed: 0, rejected: 0 };

  private readonly config: OtlpConfig;
  private readonly logger: Logger;
  private readonly sessionId: string;
  private readonly batchDelayMs: number;
  private readonly retryInitialMs: number;
  private readonly retryMaxMs: number;
  private readonly closeTimeoutMs: number;
  private readonly queue: OtlpQueue;
  private readonly selected: Record<EventCategory, boolean>;
  private readonly exporter: LogRecordExporter;
  private readonly sdk: OtlpSdk;
  /** One object for every record: the SDK groups records by scope identity. */
  private readonly scope: InstrumentationScope = { name: SERVICE_NAME, version: VERSION };
  private resource: Resource;
  private userAgent: string | undefined;

  /** Events of the exported categories so far: `bta.export.seq`, dense, so gaps show losses. */
  private exportSeq = 0;
  /** The head batch as records, kept while it is retried. */
  private batch: ReadableLogRecord[] | undefined;
  /** Batch delay, or a full batch waiting for the next turn of the event loop. */
  private flushTimer: NodeJS.Timeout | undefined;
  private flushTimerImmediate = false;
  private draining: Promise<void> | undefined;
  private wakeRetry: (() => void) | undefined;
  private stopFollowing: (() => void) | undefined;
  private closing: Promise<void> | undefined;
  /** Set by close(): no new batch starts. */
  private closed = false;
  /** Set when close() gave up: a request still in flight then changes nothing. */
  private finished = false;

  private state: ExportState = 'ok';
  private stateSince = Date.now();
  private failedAtStateStart = 0;
  private queueFull = false;
  private droppedBeforeFull = 0;

  constructor(options: OtlpExporterOptions) {
    const { config, timing } = options;
    this.config = config;
    this.sdk = options.sdk;
    this.logger = options.logger;
    this.sessionId = options.sessionId;
    this.batchDelayMs = timing?.batchDelayMs ?? 1000;
    this.retryInitialMs = timing?.retryInitialMs ?? 1000;
    this.retryMaxMs = timing?.retryMaxMs ?? 30_000;
    this.closeTimeoutMs = timing?.closeTimeoutMs ?? 2000;
    this.queue = new OtlpQueue(config.queueEvents, config.queueBytes);
    this.selected = Object.fromEntries(EVENT_CATEGORIES.map((c) => [c, config.categories.includes(c)])) as Record<EventCategory, boolean>;
    this.resource = this.makeResource();
    // The SDK reads the other standard variables itself (OTEL_EXPORTER_OTLP_TIMEOUT, _COMPRESSION,
    // _CERTIFICATE, _CLIENT_KEY, _CLIENT_CERTIFICATE); the URL and headers are the ones resolved here.
    const sdkOptions = { url: config.url, headers: config.headers };
    this.exporter = config.protocol === 'http/json' ? new this.sdk.JsonLogExporter(sdkOptions) : new this.sdk.ProtobufLogExporter(sdkOptions);
    this.logger.info(
      {
        url: describeUrl(config.url),
        protocol: config.protocol,
        categories: config.categories,
        queue_events: config.queueEvents,
        queue_bytes: config.queueBytes,
      },
      'OTLP export on',
    );
  }

  get queuedEvents(): number {
    return this.queue.length;
  }

  get queuedBytes(): number {
    return this.queue.byteSize;
  }

  get up(): boolean {
    return this.state !== 'failing';
  }

  /** Export every event `log` admits from now on, until close(). */
  follow(log: EventLog): void {
    this.stopFollowing?.();
    this.stopFollowing = log.observeAppends(this.observe);
  }

  /**
   * A connection to the browser is up: its user agent for later records. May fail (the browser
   * went away): records then lack user_agent.original until the next connection.
   */
  learnUserAgent(connection: CdpConnection): void {
    void connection.send('Browser.getVersion').then(
      (version) => this.setUserAgent(version.userAgent),
      () => undefined,
    );
  }

  /** The browser's user agent (Browser.getVersion): `user_agent.original` of later records. */
  setUserAgent(userAgent: string): void {
    if (userAgent === this.userAgent || userAgent === '') return;
    this.userAgent = userAgent;
    this.resource = this.makeResource();
  }

  /**
   * Stop following the log and send what is queued, for at most closeTimeoutMs; what is left then
   * is counted as dropped (`shutdown`). Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  // ---- the producer's path -------------------------------------------------------------------

  /** The event log's observer: select, queue, arm the batch timer. Nothing else. */
  private readonly observe: AppendObserver = (seq, event, frame) => {
    if (!this.selected[EVENT_TYPE_CATEGORY[event.type]]) return;
    const exportSeq = ++this.exportSeq;
    if (!this.queue.push(seq, exportSeq, event, frame.length)) {
      this.dropped.queue_full++;
      if (!this.queueFull) {
        this.queueFull = true;
        this.droppedBeforeFull = this.dropped.queue_full - 1;
        process.nextTick(this.reportQueueFull);
      }
      return;
    }
    if (this.draining !== undefined) return;
    if (this.queue.length >= MAX_BATCH_EVENTS) {
      if (!this.flushTimerImmediate) this.armFlush(0);
    } else if (this.flushTimer === undefined) {
      this.armFlush(this.batchDelayMs);
    }
  };

  private armFlush(delayMs: number): void {
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimerImmediate = delayMs === 0;
    // The agent's server keeps the process alive; the export alone never should.
    this.flushTimer = setTimeout(this.flush, delayMs).unref();
  }

  // ---- the batch step ------------------------------------------------------------------------

  private readonly flush = (): void => {
    this.flushTimer = undefined;
    this.flushTimerImmediate = false;
    if (this.draining === undefined && !this.closed) this.draining = this.drain();
  };

  /** Send batches while a full one is queued; retry a failed one with backoff. */
  private async drain(): Promise<void> {
    let backoffMs = this.retryInitialMs;
    try {
      while (!this.closed && this.queue.length > 0) {
        const outcome = await this.sendHead();
        if (outcome === 'failed') {
          // Full jitter would let a retry come at once; ±20 % keeps the backoff a backoff.
          await this.pause(backoffMs * (0.8 + 0.4 * Math.random()));
          backoffMs = Math.min(backoffMs * 2, this.retryMaxMs);
          continue;
        }
        backoffMs = this.retryInitialMs;
        // A partial batch waits for the batch delay, so a slow trickle is not one request each.
        if (this.queue.length < MAX_BATCH_EVENTS) break;
      }
    } finally {
      this.draining = undefined;
      if (!this.closed && this.queue.length > 0) this.armFlush(this.queue.length >= MAX_BATCH_EVENTS ? 0 : this.batchDelayMs);
    }
  }

  /** Send the head batch once; the queue and counters follow the outcome. */
  private async sendHead(): Promise<SendOutcome['kind']> {
    const records = (this.batch ??= this.headRecords());
    const outcome = await this.send(records);
    if (this.finished) return outcome.kind;
    if (outcome.kind === 'failed') {
      this.requests.failed++;
      this.enter('failing', outcome.error);
      return 'failed';
    }
    this.batch = undefined;
    this.queue.drop(records.length);
    if (outcome.kind === 'sent') {
      this.requests.success++;
      this.exported += records.length;
      this.enter('ok');
    } else {
      this.requests.rejected++;
      this.dropped.rejected += records.length;
      this.enter('rejecting', outcome.error);
    }
    this.noteQueueRoom();
    return outcome.kind;
  }

  private headRecords(): ReadableLogRecord[] {
    const queue = this.queue;
    const n = Math.min(queue.length, MAX_BATCH_EVENTS);
    const records = new Array<ReadableLogRecord>(n);
    for (let i = 0; i < n; i++) records[i] = toLogRecord(queue.seqAt(i), queue.exportSeqAt(i), queue.eventAt(i), this.resource, this.scope);
    return records;
  }

  private send(records: ReadableLogRecord[]): Promise<SendOutcome> {
    return new Promise((resolve) => {
      const done = (result: ExportResult) => {
        // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-comparison -- ExportResultCode.SUCCESS is 0; @opentelemetry/core is not a direct dependency
        if (result.code === EXPORT_SUCCESS) resolve({ kind: 'sent' });
        else {
          const error = result.error ?? new Error('export failed');
          resolve({ kind: isRetryable(error) ? 'failed' : 'rejected', error });
        }
      };
      try {
        this.exporter.export(records, done);
      } catch (err) {
        // The SDK could not serialize the batch: sending it again would fail the same way.
        resolve({ kind: 'rejected', error: err as Error });
      }
    });
  }

  /** Wait before a retry; close() cuts it short. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wakeRetry = undefined;
        resolve();
      }, ms).unref();
      this.wakeRetry = () => {
        clearTimeout(timer);
        this.wakeRetry = undefined;
        resolve();
      };
    });
  }

  // ---- state changes: one log line each ------------------------------------------------------

  private enter(state: ExportState, error?: Error): void {
    if (state === this.state) return;
    const now = Date.now();
    const fields = { after_ms: now - this.stateSince, failed_requests: this.requests.failed - this.failedAtStateStart };
    if (state === 'ok') {
      this.logger.info(fields, 'OTLP export recovered');
    } else if (state === 'failing') {
      this.logger.warn(
        { ...describeError(error), queued: this.queue.length, retry_initial_ms: this.retryInitialMs, retry_max_ms: this.retryMaxMs },
        'OTLP export failing; retrying with backoff, events stay queued',
      );
    } else {
      this.logger.warn({ ...describeError(error), dropped: this.dropped.rejected }, 'OTLP receiver rejects batches; their events are dropped');
    }
    this.state = state;
    this.stateSince = now;
    this.failedAtStateStart = this.requests.failed;
  }

  private readonly reportQueueFull = (): void => {
    this.logger.warn(
      { queued: this.queue.length, queued_bytes: this.queue.byteSize, queue_events: this.queue.maxEvents, queue_bytes: this.queue.maxBytes },
      'OTLP queue full; newer events are dropped until the receiver catches up',
    );
  };

  private noteQueueRoom(): void {
    if (!this.queueFull) return;
    this.queueFull = false;
    this.logger.info({ dropped: this.dropped.queue_full - this.droppedBeforeFull }, 'OTLP queue has room again');
  }

  // ---- close ---------------------------------------------------------------------------------

  private async shutdown(): Promise<void> {
    this.stopFollowing?.();
    this.stopFollowing = undefined;
    this.closed = true;
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.wakeRetry?.();
    const deadline = Date.now() + this.closeTimeoutMs;
    // The request in flight ends first (the drain loop stops after it), then the rest goes out.
    let inTime = this.draining === undefined || (await beforeDeadline(this.draining, deadline)) !== TIMED_OUT;
    while (inTime && this.queue.length > 0) {
      const outcome = await beforeDeadline(this.sendHead(), deadline);
      inTime = outcome !== TIMED_OUT;
      if (outcome === 'failed') break;
    }
    this.finished = true;
    const left = this.queue.length;
    if (left > 0) {
      this.dropped.shutdown += left;
      this.queue.drop(left);
      this.logger.warn({ dropped: left }, 'OTLP export closed with events not sent');
    }
    await beforeDeadline(
      this.exporter.shutdown().catch(() => undefined),
      Date.now() + 100,
    );
  }

  private makeResource(): Resource {
    const attributes: Record<string, string> = {
      'service.name': SERVICE_NAME,
      'service.version': VERSION,
      'session.id': this.sessionId,
    };
    if (this.userAgent !== undefined) attributes['user_agent.original'] = this.userAgent;
    return this.sdk.resourceFromAttributes(attributes);
  }
}

/**
 * A failed export worth retrying: the receiver said 429 or 5xx (the SDK's OTLPExporterError
 * carries the status as a numeric `code`), or no status at all (network error, timeout, the
 * SDK's own retries used up). Any other status is the receiver refusing the batch itself.
 */
function isRetryable(error: Error): boolean {
  const status = httpStatus(error);
  return status === undefined || status === 429 || status >= 500;
}

function httpStatus(error: Error | undefined): number | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}

function describeError(error: Error | undefined): { err?: string; status?: number } {
  if (error === undefined) return {};
  const code = (error as { code?: unknown }).code;
  const status = httpStatus(error);
  const err = typeof code === 'string' && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  return status === undefined ? { err } : { err: err || `HTTP ${status}`, status };
}

const TIMED_OUT = Symbol('timed out');

/** The promise's value, or TIMED_OUT at `deadline` (the timer is cleared either way). */
async function beforeDeadline<T>(promise: Promise<T>, deadline: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
