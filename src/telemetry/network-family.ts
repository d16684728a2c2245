// Network family (docs/events.md#types–6.6): network_request, network_response (with bodies),
// network_loading_failed and the per-tab network_idle.
//
// Requests are keyed by requestId alone, not by session: Chromium reports some requests on two
// sessions (docs/chromium.md "Network"). A cross-site iframe's document request starts on the
// parent's session and finishes on the iframe's; a dedicated or shared worker's script starts on
// the page's and finishes on the worker's. Request ids are unique browser-wide (document requests
// use the loader token, others the renderer process id and a counter). The context of a request
// (target, frame, loader, nav_seq) is fixed when it starts (docs/events.md#the-event-context), whatever session ends it.

import type { Protocol } from 'devtools-protocol';
import type { EventContext } from '../../injected/schema.ts';
import { isTargetGone } from '../browser/cdp-errors.ts';
import type { AttachedTarget } from '../browser/target-manager.ts';
import type { Limits } from '../limits.ts';
import { BodyFetcher, type BodyFetcherOptions, type BodyResult } from './body-fetcher.ts';
import { BodyMatcher, type BodyPolicy } from './body-policy.ts';
import { BodySchedule, type BodyScheduleOptions } from './body-schedule.ts';
import { isTabMainFrame, type TargetState } from './event-context.ts';
import type { FamilyHost, TelemetryFamily } from './family.ts';
import {
  needsPostDataFetch,
  partialContext,
  planBody,
  requestContext,
  requestUrl,
  responseContext,
  translateLoadingFailed,
  translateRequestWillBeSent,
  translateResponse,
  type BodyOutcome,
  type FetchedBody,
} from './network.ts';
import { NetworkIdleMachine, type IdleTimers } from './network-idle.ts';

/** Sessions whose bodies may wait for their tab's load (others fetch at once: see fetchBody). */
const DEFERRING_TARGET_TYPES: ReadonlySet<string> = new Set(['page', 'iframe']);
/** Targets whose requests are reported (each has its own Network domain). */
const NETWORK_TARGET_TYPES: ReadonlySet<string> = new Set(['page', 'iframe', 'worker', 'service_worker', 'shared_worker']);
/** Requests that stay open by design and never count toward network_idle (docs/events.md#computed-events). */
const LONG_LIVED_TYPES: ReadonlySet<string> = new Set(['EventSource', 'WebSocket']);
/** Requests tracked at most; beyond that the oldest is forgotten (a runaway page cannot grow us). */
const MAX_TRACKED_REQUESTS = 10_000;

const MiB = 1024 * 1024;
const INT32_MAX = 2 ** 31 - 1;

const NO_BODY: BodyOutcome = { skippedForSize: false };
const GONE: BodyResult = { ok: false, reason: 'failed' };
const SKIPPED_FOR_SIZE: BodyOutcome = { skippedForSize: true };

/**
 * `Network.enable` parameters. Chromium keeps a finished body in the renderer only while it fits
 * the per-resource buffer and evicts the oldest bodies beyond the total; it may hold text as
 * 16-bit characters, so twice the fetch limit keeps every body the agent may ask for, and larger
 * ones (which it never asks for) are not kept at all. `maxPostDataSize` keeps large request
 * bodies out of `requestWillBeSent` (they are fetched and cut instead).
 */
export function networkEnableParams(limits: Limits): Protocol.Network.EnableRequest {
  const resource = resourceBufferSize(limits);
  const total = Math.min(INT32_MAX, Math.max(100 * MiB, 16 * resource));
  // 0 would mean "no limit" to Chromium.
  const maxPostDataSize = Math.min(INT32_MAX, Math.max(1, limits.maxPostDataBytes));
  return { maxTotalBufferSize: total, maxResourceBufferSize: resource, maxPostDataSize };
}

/**
 * `Network.configureDurableMessages`: bodies kept by the browser process instead of the
 * renderer. They outlive their document (a body deferred past the load is still there when the
 * page has navigated on), and `getResponseBody` is answered without the renderer (measured: 1 ms
 * while the page's main thread was busy for 2 s, against the whole 2 s without). The store is
 * shared by every session of the connection (the first size configured holds) and, unlike the
 * renderer's, is not emptied by a navigation: it is sized for what waits to be fetched (at most
 * 16 MiB per tab for at most 5 s, body-schedule.ts) rather than for a page's whole traffic, and
 * allocated only as bodies arrive, the oldest dropped beyond it.
 */
export function durableBufferParams(
  limits: Limits,
): Protocol.Network.ConfigureDurableMessagesRequest & { maxTotalBufferSize: number; maxResourceBufferSize: number } {
  const resource = resourceBufferSize(limits);
  return { maxTotalBufferSize: Math.min(INT32_MAX, Math.max(32 * MiB, 16 * resource)), maxResourceBufferSize: resource };
}

/**
 * `Network.enable` parameters when the browser keeps durable bodies, with the renderer-buffer cut
 * (cdp-cuts.ts, off by default; docs/network.md "Renderer body buffers"): the agent fetches every
 * response body from the browser's copy, so the renderer is asked to keep none (buffers of 1
 * byte). The renderer's buffers also hold the request bodies read with `getRequestPostData`, which
 * are then lost: that is why the cut is off.
 */
export function networkEnableParamsDurable(limits: Limits): Protocol.Network.EnableRequest {
  return { ...networkEnableParams(limits), maxTotalBufferSize: 1, maxResourceBufferSize: 1 };
}

/** Chromium may hold text as 16-bit characters: twice the fetch limit, at least 1 MiB. */
function resourceBufferSize(limits: Limits): number {
  return Math.min(INT32_MAX, Math.max(MiB, 2 * limits.maxBodyFetchBytes));
}

/** What the agent remembers of one request between its start and its end. */
class RequestRecord {
  /** Stored `responseReceived` (redirect hops get none). */
  received: Protocol.Network.ResponseReceivedEvent | undefined = undefined;
  /** The target whose session reported the response. */
  receivedOn: TargetState | undefined = undefined;
  /** Decoded body bytes so far (sum of `dataReceived.dataLength`). */
  decodedBytes = 0;
  /** The network_request emission while its request body is being fetched: later events wait. */
  requestEvent: Promise<void> | undefined = undefined;
  /** Counted in its tab's activity (body-schedule.ts) until it finishes. */
  active = false;

  constructor(
    readonly id: string,
    /** The session that reported the start; the request is forgotten when it detaches. */
    readonly sessionId: string,
    /** The tab it belongs to, for nav_seq bookkeeping; none for service and shared workers. */
    readonly tab: AttachedTarget | undefined,
    readonly navSeq: number | undefined,
    /** The tab's idle machine when the request counts toward network_idle. */
    readonly idle: NetworkIdleMachine | undefined,
    /** Context at request time; replaced (not mutated) by redirect hops, which change `url`. */
    public ctx: EventContext,
    public method: string | undefined,
    public resourceType: string | undefined,
  ) {}
}

export interface NetworkFamilyOptions {
  /** Timers of the idle machines and the body schedule (tests). */
  timers?: IdleTimers;
  bodyFetch?: BodyFetcherOptions;
  bodySchedule?: Omit<BodyScheduleOptions, 'timers'>;
  /** The renderer-buffer cut (cdp-cuts.ts `rendererBodyBuffers`, off by default). */
  smallRendererBuffers?: boolean;
}

export class NetworkFamily implements TelemetryFamily {
  private host!: FamilyHost;
  private fetcher!: BodyFetcher;
  private schedule!: BodySchedule;
  /** The body policy of the current config, compiled (rebuilt when the config changes it). */
  private matcher: BodyMatcher | undefined;
  private enableParams!: Protocol.Network.EnableRequest;
  /** With durable bodies: the renderer keeps none (networkEnableParamsDurable). */
  private durableEnableParams!: Protocol.Network.EnableRequest;
  /**
   * Whether this browser keeps durable bodies: unknown until its first answer to
   * `Network.configureDurableMessages`; once refused, every session keeps its bodies in the renderer.
   */
  private durableWorks: boolean | undefined = undefined;
  private durableParams!: Protocol.Network.ConfigureDurableMessagesRequest;
  /** Sessions whose durable body storage is configured (or being configured). */
  private readonly durableSessions = new Set<string>();
  private readonly requests = new Map<string, RequestRecord>();
  /** network_idle machines by the tab's session id. */
  private readonly machines = new Map<string, NetworkIdleMachine>();
  /** Sessions whose Network domain this family enabled. */
  private readonly enabledSessions = new Set<string>();

  constructor(private readonly options: NetworkFamilyOptions = {}) {}

  start(host: FamilyHost): void {
    this.host = host;
    this.fetcher = new BodyFetcher(host.connection, this.options.bodyFetch);
    this.schedule = new BodySchedule({ ...this.options.bodySchedule, timers: this.options.timers });
    this.enableParams = networkEnableParams(host.limits);
    this.durableParams = durableBufferParams(host.limits);
    this.durableEnableParams = networkEnableParamsDurable(host.limits);
    host.handle('Network.requestWillBeSent', this.onRequestWillBeSent);
    host.handle('Network.responseReceived', this.onResponseReceived);
    host.handle('Network.dataReceived', this.onDataReceived);
    host.handle('Network.loadingFinished', this.onLoadingFinished);
    host.handle('Network.loadingFailed', this.onLoadingFailed);
    // The end of a tab's load releases its deferred bodies (body-schedule.ts). A navigation that
    // ends without a load event (an error page, a 204, a download) still stops loading.
    host.loadingTabs.onLoadEnd((tabSessionId) => this.schedule.loaded(tabSessionId));
  }

  setUpTarget(state: TargetState): Array<Promise<unknown>> {
    const target = state.target;
    if (!this.host.isOn('network') || !NETWORK_TARGET_TYPES.has(target.type)) return [];
    return this.enable(target);
  }

  /** The category was switched (PATCH): enable or disable the Network domain of the target. */
  reconfigure(state: TargetState): Array<Promise<unknown>> {
    const target = state.target;
    const sessionId = target.sessionId;
    const want = this.host.isOn('network') && NETWORK_TARGET_TYPES.has(target.type);
    if (want && !this.enabledSessions.has(sessionId)) return this.enable(target);
    if (!want && this.enabledSessions.has(sessionId)) {
      this.enabledSessions.delete(sessionId);
      this.durableSessions.delete(sessionId);
      // Their ends will not be reported any more.
      this.forgetSession(sessionId);
      if (target.type === 'page') this.schedule.forgetTab(sessionId);
      return [target.sendMayFail('Network.disable')];
    }
    return [];
  }

  targetDetached(state: TargetState): void {
    const sessionId = state.target.sessionId;
    this.enabledSessions.delete(sessionId);
    this.durableSessions.delete(sessionId);
    this.forgetSession(sessionId);
    this.schedule.dropSession(sessionId);
    if (state.target.type === 'page') this.schedule.forgetTab(sessionId);
  }

  frameNavigated(state: TargetState, frame: Protocol.Page.Frame, isTabMainFrame: boolean): void {
    if (!isTabMainFrame) return;
    const tab = state.target;
    // Document requests use the new loader's id as requestId.
    if (this.host.isOn('network')) this.machineFor(tab)?.reset(state.navSeq, frame.loaderId);
    // Once a new document commits, Chromium reports nothing more about the requests the old one
    // left in flight: not even the end of its own document when the user navigated on before the
    // HTML was complete (docs/chromium.md "Network"). A request that already has its response is
    // reported now, without a body (it can no longer be fetched). One still waiting for its
    // response keeps its record for one more navigation, in case its end is reported after all.
    for (const [id, record] of this.requests) {
      if (record.tab !== tab || id === frame.loaderId) continue;
      // Its end may never be reported: it no longer keeps the tab from going quiet.
      this.endActivity(record);
      if (record.received !== undefined) {
        this.requests.delete(id);
        this.emitAbandoned(record, record.received);
      } else if (record.navSeq !== undefined && record.navSeq < state.navSeq - 1) {
        this.requests.delete(id);
      }
    }
  }

  dispose(): void {
    this.schedule?.dispose();
    this.fetcher?.dispose();
    for (const machine of this.machines.values()) machine.dispose();
    this.machines.clear();
    this.requests.clear();
    this.enabledSessions.clear();
    this.durableSessions.clear();
  }

  /**
   * Network, and durable body storage (durableBufferParams): sent together, not awaited (the
   * target is resumed right after). A Chromium without durable storage keeps working: its bodies
   * are then fetched before a new document of their session drops them (body-schedule.ts).
   */
  private enable(target: AttachedTarget): Array<Promise<unknown>> {
    const sessionId = target.sessionId;
    this.enabledSessions.add(sessionId);
    this.durableSessions.add(sessionId);
    // With the cut, optimistic: until the browser refuses durable bodies, the renderer keeps none.
    const small = this.options.smallRendererBuffers === true && this.durableWorks !== false;
    const enable = this.host.setUpStep(target, 'Network.enable', target.send('Network.enable', small ? this.durableEnableParams : this.enableParams));
    const durable = target.send('Network.configureDurableMessages', this.durableParams).then(
      () => {
        this.durableWorks = true;
      },
      (err: unknown) => {
        this.durableSessions.delete(sessionId);
        this.host.logger.debug({ target_id: target.targetId, err: (err as Error).message }, 'durable bodies not available');
        if (isTargetGone(err, target)) return undefined;
        this.durableWorks = false;
        // This session's bodies stay in its renderer after all: give it the full buffers.
        if (small && this.enabledSessions.has(sessionId)) return target.sendMayFail('Network.enable', this.enableParams);
        return undefined;
      },
    );
    return [enable, durable];
  }

  // ---- CDP handlers -----------------------------------------------------------------------------

  private readonly onRequestWillBeSent = (params: Protocol.Network.RequestWillBeSentEvent, state: TargetState): void => {
    if (!this.host.admits('network')) return;
    this.host.clock.calibrate(params.wallTime, params.timestamp);
    const id = params.requestId;
    let record = this.requests.get(id);
    if (record !== undefined && params.redirectResponse !== undefined) {
      // A redirect hop: the same request (and the same in-flight entry) at a new URL.
      record.ctx = { ...record.ctx, url: requestUrl(params.request) };
      record.method = params.request.method;
      if (params.type !== undefined) record.resourceType = params.type;
      record.decodedBytes = 0;
    } else {
      // An id seen again without a redirect would be a new request: the old one is over.
      if (record !== undefined) this.forget(record);
      const target = state.target;
      const navSeq = this.host.tracker.navSeqOf(target);
      record = this.track(id, target, navSeq, params.type, requestContext(params, target, navSeq));
      record.method = params.request.method;
    }

    if (params.type === 'Document' && params.frameId !== undefined) {
      const tab = state.target.tab;
      if (tab !== undefined) this.schedule.documentRequested(tab.sessionId, params.frameId, isTabMainFrame(tab, params.frameId));
    }

    const ctx = record.ctx;
    if (needsPostDataFetch(params) && this.host.limits.maxPostDataBytes > 0) {
      // A Blob or a body over maxPostDataSize: fetch it; this request's later events wait.
      const postData = this.fetcher.requestPostData(state.target.sessionId, id);
      const earlier = record.requestEvent;
      record.requestEvent = (earlier ? Promise.all([postData, earlier]).then(([body]) => body) : postData)
        .then((body) => this.emitRequest(params, ctx, body, state))
        .catch(this.onAsyncError);
    } else if (record.requestEvent !== undefined) {
      record.requestEvent = record.requestEvent.then(() => this.emitRequest(params, ctx, undefined, state)).catch(this.onAsyncError);
    } else {
      this.emitRequest(params, ctx, undefined, state);
    }
  };

  private readonly onResponseReceived = (params: Protocol.Network.ResponseReceivedEvent, state: TargetState): void => {
    if (!this.host.isOn('network')) return;
    let record = this.requests.get(params.requestId);
    if (record === undefined) {
      // Began before the agent attached (or before Network was enabled on this target, like a
      // service worker's own script): known from its response on.
      const target = state.target;
      const navSeq = this.host.tracker.navSeqOf(target);
      record = this.track(params.requestId, target, navSeq, params.type, responseContext(params, target, navSeq));
    }
    record.received = params;
    record.receivedOn = state;
  };

  private readonly onDataReceived = (params: Protocol.Network.DataReceivedEvent): void => {
    const record = this.requests.get(params.requestId);
    if (record !== undefined) record.decodedBytes += params.dataLength;
  };

  private readonly onLoadingFinished = (params: Protocol.Network.LoadingFinishedEvent, state: TargetState): void => {
    const record = this.requests.get(params.requestId);
    if (record === undefined) return;
    this.requests.delete(params.requestId);
    this.endActivity(record);
    const received = record.received;
    if (!this.host.admits('network') || received === undefined) {
      record.idle?.requestEnded(record.id);
      return;
    }
    // Without any dataReceived (a blob-backed response), the bytes on the wire are the estimate.
    const size = record.decodedBytes > 0 ? record.decodedBytes : params.encodedDataLength;
    const matcher = this.bodyMatcher();
    const plan = planBody(matcher, received.type, received.response.mimeType, size, this.host.limits);
    if (plan === 'fetch') {
      const maxBytes = matcher.policy.max_bytes;
      const body = this.fetchBody(record, state, size);
      const ready = record.requestEvent ? Promise.all([body, record.requestEvent]).then(([b]) => b) : body;
      ready
        .then((result) => {
          this.host.stats.bodyFetches[result.ok ? 'fetched' : result.reason]++;
          this.emitResponse(record, received, params, state, result.ok ? { body: result.body, maxBytes, skippedForSize: false } : NO_BODY);
        })
        .catch(this.onAsyncError);
      return;
    }
    if (plan === 'too_large') this.host.stats.bodyFetches.skipped_for_size++;
    const outcome = plan === 'too_large' ? SKIPPED_FOR_SIZE : NO_BODY;
    if (record.requestEvent !== undefined) {
      record.requestEvent.then(() => this.emitResponse(record, received, params, state, outcome)).catch(this.onAsyncError);
    } else {
      this.emitResponse(record, received, params, state, outcome);
    }
  };

  private readonly onLoadingFailed = (params: Protocol.Network.LoadingFailedEvent, state: TargetState): void => {
    const record = this.requests.get(params.requestId);
    if (record !== undefined) {
      this.requests.delete(params.requestId);
      this.endActivity(record);
    }
    if (!this.host.admits('network')) {
      record?.idle?.requestEnded(record.id);
      return;
    }
    if (record?.requestEvent !== undefined) {
      record.requestEvent.then(() => this.emitFailed(params, state, record)).catch(this.onAsyncError);
    } else {
      this.emitFailed(params, state, record);
    }
  };

  // ---- emission ---------------------------------------------------------------------------------

  private emitRequest(params: Protocol.Network.RequestWillBeSentEvent, ctx: EventContext, postData: FetchedBody | undefined, state: TargetState): void {
    if (!this.host.isOn('network')) return;
    const t = translateRequestWillBeSent(params, ctx, this.host.limits, postData);
    this.host.emit('network_request', this.host.clock.fromMonotonicSeconds(params.timestamp), t.data, {
      truncated: t.truncated,
      method: 'Network.requestWillBeSent',
      origin: state,
    });
  }

  /** Emits the response; only then does the request stop counting toward network_idle. */
  private emitResponse(
    record: RequestRecord,
    received: Protocol.Network.ResponseReceivedEvent,
    finished: Protocol.Network.LoadingFinishedEvent,
    state: TargetState,
    outcome: BodyOutcome,
  ): void {
    try {
      if (!this.host.isOn('network')) return;
      const t = translateResponse(record.ctx, record.method, received, outcome, this.host.limits, { finished, decodedBytes: record.decodedBytes });
      this.host.emit('network_response', this.host.clock.fromMonotonicSeconds(finished.timestamp), t.data, {
        truncated: t.truncated,
        method: 'Network.loadingFinished',
        origin: state,
      });
    } finally {
      record.idle?.requestEnded(record.id);
    }
  }

  /** The response of a request its document abandoned (see frameNavigated). */
  private emitAbandoned(record: RequestRecord, received: Protocol.Network.ResponseReceivedEvent): void {
    const emit = (): void => {
      if (!this.host.isOn('network')) return;
      const t = translateResponse(record.ctx, record.method, received, NO_BODY, this.host.limits);
      this.host.emit('network_response', this.host.clock.nowUs(), t.data, {
        truncated: t.truncated,
        method: 'Network.responseReceived',
        origin: record.receivedOn,
      });
    };
    if (record.requestEvent !== undefined) record.requestEvent.then(emit).catch(this.onAsyncError);
    else emit();
  }

  private emitFailed(params: Protocol.Network.LoadingFailedEvent, state: TargetState, record: RequestRecord | undefined): void {
    try {
      // A request never seen starting: partial context, no resource_type (docs/events.md#types).
      const ctx = record !== undefined ? record.ctx : partialContext(state.target, this.host.tracker.navSeqOf(state.target));
      const resourceType = record !== undefined ? (record.resourceType ?? params.type) : undefined;
      const t = translateLoadingFailed(params, ctx, resourceType, this.host.limits);
      this.host.emit('network_loading_failed', this.host.clock.fromMonotonicSeconds(params.timestamp), t.data, {
        truncated: t.truncated,
        method: 'Network.loadingFailed',
        origin: state,
      });
    } finally {
      record?.idle?.requestEnded(record.id);
    }
  }

  /**
   * The machine already ignores timers of an earlier nav_seq; the context is the tab's current
   * one (the core may also learn of a navigation from a frame tree, without frameNavigated).
   */
  private emitIdle(tab: TargetState): void {
    if (!this.host.isOn('network') || tab.target.isDetached) return;
    this.host.emit('network_idle', this.host.clock.nowUs(), this.host.tracker.contextOf(tab));
  }

  private readonly onAsyncError = (err: unknown): void => {
    this.host.logger.warn({ err: (err as Error)?.message ?? String(err) }, 'network event failed');
  };

  // ---- bookkeeping ------------------------------------------------------------------------------

  private track(id: string, target: AttachedTarget, navSeq: number | undefined, resourceType: string | undefined, ctx: EventContext): RequestRecord {
    const tab = target.tab;
    const counts = tab !== undefined && (resourceType === undefined || !LONG_LIVED_TYPES.has(resourceType));
    const idle = counts ? this.machineFor(tab) : undefined;
    const record = new RequestRecord(id, target.sessionId, tab, navSeq, idle, ctx, undefined, resourceType);
    this.requests.set(id, record);
    idle?.requestStarted(id);
    if (counts) {
      record.active = true;
      this.schedule.requestStarted(tab.sessionId);
    }
    if (this.requests.size > MAX_TRACKED_REQUESTS) {
      const oldest = this.requests.values().next().value!;
      this.forget(oldest);
    }
    return record;
  }

  /** Drop the requests a session started and, for a tab, its idle machine. */
  private forgetSession(sessionId: string): void {
    for (const [id, record] of this.requests) {
      if (record.sessionId !== sessionId) continue;
      this.requests.delete(id);
      this.endActivity(record);
      record.idle?.requestEnded(id);
    }
    const machine = this.machines.get(sessionId);
    if (machine) {
      machine.dispose();
      this.machines.delete(sessionId);
    }
  }

  private forget(record: RequestRecord): void {
    this.requests.delete(record.id);
    this.endActivity(record);
    record.idle?.requestEnded(record.id);
  }

  /** The request no longer counts in its tab's activity (finished, failed or forgotten). */
  private endActivity(record: RequestRecord): void {
    if (!record.active) return;
    record.active = false;
    this.schedule.requestEnded(record.tab!.sessionId);
  }

  // ---- bodies -----------------------------------------------------------------------------------

  /** The body policy of the current config, compiled once per policy object. */
  private bodyMatcher(): BodyMatcher {
    const policy: BodyPolicy = this.host.config.browser.network.bodies;
    if (this.matcher?.policy !== policy) this.matcher = new BodyMatcher(policy);
    return this.matcher;
  }

  /**
   * The response body. A page's or an iframe's body waits for its tab (body-schedule.ts); a
   * worker's is fetched at once (a worker may end at any time, and its bodies with it), as is one
   * with no tab (service and shared workers). A durable body is asked for on the tab's session:
   * the browser shares durable bodies between all the sessions of a connection, and the tab's
   * outlives its iframes (an out-of-process iframe's session ends when the page navigates on,
   * often before its bodies were asked for). Otherwise it is asked for on the session that
   * finished the request, which alone holds it.
   */
  private fetchBody(record: RequestRecord, state: TargetState, bytes: number): Promise<BodyResult> {
    const target = state.target;
    const tab = target.tab;
    if (tab === undefined || !DEFERRING_TARGET_TYPES.has(target.type)) return this.fetcher.responseBody(target.sessionId, record.id);
    const durable = this.durableSessions.has(target.sessionId) && this.durableSessions.has(tab.sessionId);
    const via = durable ? tab.sessionId : target.sessionId;
    return new Promise<BodyResult>((resolve) => {
      this.schedule.defer(tab.sessionId, {
        sessionId: via,
        rootFrameId: target.targetId,
        bytes,
        durable,
        run: (urgent) => void this.fetcher.responseBody(via, record.id, urgent).then(resolve),
        drop: () => resolve(GONE),
      });
    });
  }

  /** The tab's idle machine, created on first use. */
  private machineFor(tab: AttachedTarget): NetworkIdleMachine | undefined {
    let machine = this.machines.get(tab.sessionId);
    if (machine !== undefined) return machine;
    const tabState = this.host.tracker.get(tab.sessionId);
    if (tabState === undefined || tab.isDetached) return undefined;
    machine = new NetworkIdleMachine({
      navSeq: tabState.navSeq,
      timers: this.options.timers,
      onIdle: () => this.emitIdle(tabState),
    });
    this.machines.set(tab.sessionId, machine);
    return machine;
  }
}
