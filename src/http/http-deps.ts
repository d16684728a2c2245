// What the http layer is given by agent.ts: the session view (what it needs to know about the
// session, without reaching into browser/ or telemetry/), the stream, the computer, the metrics.

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { ProxyEndpoint } from '../cdp-proxy/cdp-proxy.ts';
import type { BatchRunner } from '../computer/executor.ts';
import type { ApiCalls } from '../control/api-calls.ts';
import type { Steps } from '../control/steps.ts';
import type { TokenGrant } from '../config.ts';
import type { EventLog } from '../stream/event-log.ts';
import type { HistoryReader } from '../stream/history.ts';
import type { ReplayService } from '../replay/replay-service.ts';
import type { HostPolicy } from './host-policy.ts';
import type { StreamHub } from '../stream/stream-hub.ts';
import type { TelemetryConfig, TelemetryConfigPatch } from '../telemetry/telemetry-config.ts';

/** What GET /metrics needs of the metrics registry (kept free of prom-client). */
export interface MetricsSource {
  readonly contentType: string;
  render(): Promise<string>;
}

export interface SessionView {
  createdAt: Date;
  telemetryConfig(): TelemetryConfig;
  cdpConnected(): boolean;
  /** True once the session was deleted or the agent is shutting down. */
  isTerminated(): boolean;
  /**
   * Merge a validated patch into the telemetry config and apply it to every target; resolves
   * with the new config once it is in effect.
   */
  updateTelemetry(patch: TelemetryConfigPatch): Promise<TelemetryConfig>;
  /** End the session (docs/decisions.md): flush and end streams, close CDP and the browser. */
  terminate(): Promise<void>;
}

/** The CDP endpoint (docs/operations.md "CDP endpoint"): discovery answers and the relay. */
export interface CdpEndpointDeps {
  version(): Promise<{ product: string; protocolVersion: string; userAgent: string; jsVersion: string; revision: string }>;
  targets(): Promise<Array<{ targetId: string; type: string; title: string; url: string }>>;
  /** The id in the browser's own WebSocket path; undefined before the first connection. */
  browserId(): string | undefined;
  /** Rejects with a coded error (or ApiError) to refuse: the route answers it with the error body. */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer, endpoint: ProxyEndpoint): Promise<void>;
  /** An upgrade failed unexpectedly (a bug; answered 500 and logged): counted for /metrics. */
  upgradeFailed(): void;
}

export interface HttpDeps {
  /** The only `{id}` this agent answers to. */
  sessionId: string;
  tokens: readonly TokenGrant[];
  hub: StreamHub;
  log: EventLog;
  /** The history read (GET /browsers/{id}/telemetry/events); from the RAM ring when absent. */
  history?: HistoryReader;
  /**
   * Names this session's log: the same across restarts on one data directory (docs/events.md
   * "Resuming"); a new one per process when absent.
   */
  logId?: string;
  session: SessionView;
  /** Which Host headers are answered (DNS rebinding); every one when absent. */
  hosts?: HostPolicy;
  /** Request logging goes here; none when absent. */
  logger?: Logger;
  /** Runs computer batches (docs/computer-batch.md); the batch route answers 503 without it. */
  computer?: BatchRunner;
  /** write_file body limit (docs/write-file.md); DEFAULT_LIMITS.maxUploadBytes when absent. */
  maxUploadBytes?: number;
  /** Directories write_file may write under (--fs-allow); anywhere when absent. */
  fsAllow?: readonly string[];
  /** write_file body idle timeout in ms (--upload-idle-ms); DEFAULT_UPLOAD_IDLE_MS when absent. */
  uploadIdleMs?: number;
  /** Longest wait for a request's headers in ms (--headers-timeout-ms); DEFAULT_HEADERS_TIMEOUT_MS when absent. */
  headersTimeoutMs?: number;
  /**
   * Told when a viewer (the viewer cookie) opens a telemetry stream; the function it returns is
   * called when that stream ends (live_view_connect/disconnect, docs/viewer.md "Live view events").
   */
  liveView?: { opened(viewerId: string): () => void };
  /** Prometheus metrics for GET /metrics; the route answers 404 without it. */
  metrics?: MetricsSource;
  /** The CDP endpoint; its routes are absent without it. */
  cdp?: CdpEndpointDeps;
  /** Replays (docs/replay.md); their routes are absent without it. */
  replays?: ReplayService;
  /** Records api_call for the routes that act on the browser (docs/events.md "api_call"); none when absent. */
  apiCalls?: ApiCalls;
  /** Steps (docs/events.md "Steps"): POST /browsers/{id}/telemetry/steps answers 503 without it. */
  steps?: Steps;
}
