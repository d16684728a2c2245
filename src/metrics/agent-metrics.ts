// Prometheus metrics of the agent (GET /metrics), via prom-client on a private registry. Every
// value is read from its owner when scraped (pull), so the hot paths only bump plain counters.

import { performance } from 'node:perf_hooks';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { ProxyStats } from '../cdp-proxy/cdp-proxy.ts';
import type { OtlpExportStats } from '../export/otlp-exporter.ts';
import type { EventStore } from '../store/event-store.ts';
import type { TelemetryStats } from '../telemetry/telemetry-stats.ts';
import { registerCdpProxyMetrics } from './cdp-proxy-metrics.ts';
import { registerStoreMetrics } from './store-metrics.ts';

export interface MetricsSources {
  stats: TelemetryStats;
  stream: { readonly subscriberCount: number; readonly skippedEvents: number; readonly bytesWritten: number };
  cdp: {
    readonly isConnected: boolean;
    readonly reconnects: number;
    /** CDP messages received, and the socket reads they came in, over every connection. */
    readonly messages: number;
    readonly reads: number;
    /** Failures of best-effort commands let pass: target gone (expected), other (logged at debug). */
    readonly ignoredFailures: { readonly gone: number; readonly other: number };
  };
  /** Types of the targets attached right now. */
  attachedTargetTypes(): Iterable<string>;
  /** The OTLP export, when it is on (docs/export.md "Metrics"). */
  otlp?: OtlpExportStats | undefined;
  /** The durable store, when there is one (docs/storage.md "Metrics"). */
  store?: EventStore | undefined;
  /** The CDP endpoint (docs/operations.md "CDP endpoint"). */
  cdpProxy?: ProxyStats;
}

/**
 * Mirrors totals owned elsewhere into a prom-client counter (which can only be incremented):
 * each scrape adds the growth since the last one, per label set.
 */
function totalsMirror(): (counter: Counter, total: number, labels?: Record<string, string>) => void {
  const last = new Map<string, number>();
  return (counter, total, labels) => {
    const key = labels === undefined ? '' : JSON.stringify(labels);
    const delta = total - (last.get(key) ?? 0);
    if (delta <= 0) return;
    last.set(key, total);
    if (labels === undefined) counter.inc(delta);
    else counter.inc(labels, delta);
  };
}

export class AgentMetrics {
  readonly registry = new Registry();
  private readonly upgradeErrors: Counter;

  constructor(sources: MetricsSources) {
    const r = this.registry;
    const { stats } = sources;
    const [admitted, dropped, bytes, reconnects, bodies, cdpMessages, cdpReads, ignored, snapshots] = [
      totalsMirror(),
      totalsMirror(),
      totalsMirror(),
      totalsMirror(),
      totalsMirror(),
      totalsMirror(),
      totalsMirror(),
      totalsMirror(),
      totalsMirror(),
    ];
    new Counter({
      name: 'bta_events_admitted_total',
      help: 'Telemetry events admitted to the event log, by type.',
      labelNames: ['type'],
      registers: [r],
      collect() {
        for (const [type, n] of Object.entries(stats.admitted)) admitted(this, n ?? 0, { type });
      },
    });
    new Counter({
      name: 'bta_events_dropped_total',
      help: 'Events not admitted or not delivered, by reason: category_off (category disabled), rate_limit and invalid_report (page script reports), retention_gap (skipped by subscribers that fell behind the log).',
      labelNames: ['reason'],
      registers: [r],
      collect() {
        for (const [reason, n] of Object.entries(stats.dropped)) dropped(this, n, { reason });
        dropped(this, sources.stream.skippedEvents, { reason: 'retention_gap' });
      },
    });
    new Gauge({
      name: 'bta_stream_subscribers',
      help: 'Open SSE streams.',
      registers: [r],
      collect() {
        this.set(sources.stream.subscriberCount);
      },
    });
    new Counter({
      name: 'bta_stream_bytes_written_total',
      help: 'Bytes written to SSE streams (frames and keepalives).',
      registers: [r],
      collect() {
        bytes(this, sources.stream.bytesWritten);
      },
    });
    new Gauge({
      name: 'bta_cdp_connected',
      help: '1 while the CDP connection to the browser is up.',
      registers: [r],
      collect() {
        this.set(sources.cdp.isConnected ? 1 : 0);
      },
    });
    new Counter({
      name: 'bta_cdp_reconnects_total',
      help: 'Successful CDP reconnections.',
      registers: [r],
      collect() {
        reconnects(this, sources.cdp.reconnects);
      },
    });
    new Counter({
      name: 'bta_cdp_messages_total',
      help: 'CDP messages received from the browser (events and answers).',
      registers: [r],
      collect() {
        cdpMessages(this, sources.cdp.messages);
      },
    });
    new Counter({
      name: 'bta_cdp_socket_reads_total',
      help: 'Reads of the CDP socket the messages came in: fewer per message while a tab loads (--load-cdp-read-ms).',
      registers: [r],
      collect() {
        cdpReads(this, sources.cdp.reads);
      },
    });
    new Counter({
      name: 'bta_cdp_ignored_failures_total',
      help: 'Best-effort CDP commands that failed and were let pass, by kind: gone (their target or connection went away), other (logged at debug level: a refused command or a bug).',
      labelNames: ['kind'],
      registers: [r],
      collect() {
        for (const [kind, n] of Object.entries(sources.cdp.ignoredFailures)) ignored(this, n, { kind });
      },
    });
    new Gauge({
      name: 'bta_targets_attached',
      help: 'CDP targets attached right now, by target type.',
      labelNames: ['type'],
      registers: [r],
      collect() {
        this.reset();
        const counts = new Map<string, number>();
        for (const type of sources.attachedTargetTypes()) counts.set(type, (counts.get(type) ?? 0) + 1);
        for (const [type, n] of counts) this.set({ type }, n);
      },
    });
    new Counter({
      name: 'bta_body_fetches_total',
      help: 'Response bodies the body policy wants: fetched, failed (the target closed, timeout), evicted (Chromium no longer held it), skipped_for_size (over --max-body-fetch-bytes).',
      labelNames: ['outcome'],
      registers: [r],
      collect() {
        for (const [outcome, n] of Object.entries(stats.bodyFetches)) bodies(this, n, { outcome });
      },
    });
    new Counter({
      name: 'bta_snapshots_total',
      help: 'DOM snapshots of a tab (docs/events.md "Snapshots"): taken, failed (the page did not answer within 5 s, or the tab went away), too_large (a frame over 16 MiB left out), skipped (an action did not wait longer for its before-snapshot).',
      labelNames: ['outcome'],
      registers: [r],
      collect() {
        for (const [outcome, n] of Object.entries(stats.snapshots)) snapshots(this, n, { outcome });
      },
    });
    if (sources.otlp) registerOtlpMetrics(r, sources.otlp);
    registerProcessMetrics(r);
    if (sources.store) registerStoreMetrics(r, sources.store);
    if (sources.cdpProxy) registerCdpProxyMetrics(r, sources.cdpProxy);
    this.upgradeErrors = new Counter({
      name: 'bta_cdp_upgrade_errors_total',
      help: 'CDP WebSocket upgrades that failed unexpectedly (a bug: answered 500 internal_error and logged).',
      registers: [r],
    });
  }

  /** An upgrade to the CDP endpoint failed unexpectedly. */
  countUpgradeError(): void {
    this.upgradeErrors.inc();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}

/** bta_otlp_*: registered only when the export is on. */
function registerOtlpMetrics(r: Registry, otlp: OtlpExportStats): void {
  const [exported, dropped, requests] = [totalsMirror(), totalsMirror(), totalsMirror()];
  new Counter({
    name: 'bta_otlp_events_exported_total',
    help: 'Events the OTLP receiver accepted.',
    registers: [r],
    collect() {
      exported(this, otlp.exported);
    },
  });
  const droppedCounter = new Counter({
    name: 'bta_otlp_events_dropped_total',
    help: 'Events of the exported categories that never reached the OTLP receiver, by reason: queue_full (the queue was at --otlp-queue-events or --otlp-queue-bytes), rejected (the receiver refused their batch with a 4xx other than 429), shutdown (still queued when the agent stopped).',
    labelNames: ['reason'],
    registers: [r],
    collect() {
      for (const [reason, n] of Object.entries(otlp.dropped)) dropped(this, n, { reason });
    },
  });
  const requestsCounter = new Counter({
    name: 'bta_otlp_requests_total',
    help: 'OTLP export requests (batches) by outcome: success, failed (network error, timeout, 429 or 5xx: retried with backoff), rejected (any other status: dropped).',
    labelNames: ['outcome'],
    registers: [r],
    collect() {
      for (const [outcome, n] of Object.entries(otlp.requests)) requests(this, n, { outcome });
    },
  });
  // Every label from the start, so that a rate over them is 0 rather than missing.
  for (const reason of Object.keys(otlp.dropped)) droppedCounter.inc({ reason }, 0);
  for (const outcome of Object.keys(otlp.requests)) requestsCounter.inc({ outcome }, 0);
  new Gauge({
    name: 'bta_otlp_queue_events',
    help: 'Events waiting for the OTLP receiver (the batch in flight included).',
    registers: [r],
    collect() {
      this.set(otlp.queuedEvents);
    },
  });
  new Gauge({
    name: 'bta_otlp_queue_bytes',
    help: 'Frame bytes of the events waiting for the OTLP receiver.',
    registers: [r],
    collect() {
      this.set(otlp.queuedBytes);
    },
  });
  new Gauge({
    name: 'bta_otlp_up',
    help: '0 from a failed OTLP export request until the next accepted one, else 1.',
    registers: [r],
    collect() {
      this.set(otlp.up ? 1 : 0);
    },
  });
}

/**
 * prom-client's event-loop monitor samples on a timer of this period (ms). Its default, 10 ms,
 * wakes an idle agent 100 times a second; at 2^31 - 1 ms (about 24.8 days) it never wakes it.
 */
const EVENT_LOOP_MONITOR_PERIOD_MS = 2 ** 31 - 1;

/**
 * RSS, heap, CPU, handles, GC: prom-client's process and Node.js metrics, all read when scraped,
 * except its event-loop monitor: `monitorEventLoopDelay` samples on a timer, which alone kept an
 * idle agent at 0.6% of a core at 20 ms (docs/performance.md "Idle"). prom-client's public API
 * cannot leave it out, so its timer is given a period that never comes and its gauges are taken
 * out of the registry; in their place, two gauges that need no timer.
 */
function registerProcessMetrics(r: Registry): void {
  collectDefaultMetrics({ register: r, prefix: 'bta_', eventLoopMonitoringPrecision: EVENT_LOOP_MONITOR_PERIOD_MS });
  for (const metric of r.getMetricsAsArray()) {
    if (metric.name.startsWith('bta_nodejs_eventloop_lag_')) r.removeSingleMetric(metric.name);
  }
  new Gauge({
    name: 'bta_nodejs_eventloop_lag_seconds',
    help: 'Lag of the event loop when scraped: how late a setImmediate queued by the scrape ran.',
    registers: [r],
    async collect() {
      const start = process.hrtime.bigint();
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.set(Number(process.hrtime.bigint() - start) / 1e9);
    },
  });
  let last = performance.eventLoopUtilization();
  new Gauge({
    name: 'bta_nodejs_eventloop_utilization',
    help: 'Share of the time since the previous scrape the event loop spent running (0 to 1), from libuv counters.',
    registers: [r],
    collect() {
      const now = performance.eventLoopUtilization();
      this.set(performance.eventLoopUtilization(now, last).utilization);
      last = now;
    },
  });
}
