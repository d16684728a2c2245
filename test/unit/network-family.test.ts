// The network family over a fake CDP connection: request bookkeeping across sessions, body
// fetching policy, and the per-tab network_idle wiring. Params are recorded ones (see
// test/fixtures/cdp/record-network.mjs) with ids and URLs adjusted per test.

import { readFileSync } from 'node:fs';
import type { Protocol } from 'devtools-protocol';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TelemetryStats } from '../../src/telemetry/telemetry-stats.ts';
import type { EventDataByType, EventType } from '../../injected/schema.ts';
import { AttachedTarget } from '../../src/browser/target-manager.ts';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.ts';
import { BrowserClock } from '../../src/telemetry/clock.ts';
import { EventContextTracker, type TargetState } from '../../src/telemetry/event-context.ts';
import type { FamilyHost } from '../../src/telemetry/family.ts';
import { BODY_QUIET_MS, MAX_DEFER_MS } from '../../src/telemetry/body-schedule.ts';
import { LoadingTabsFamily } from '../../src/telemetry/loading-tabs-family.ts';
import { NetworkFamily } from '../../src/telemetry/network-family.ts';
import { defaultTelemetryConfig, isCategoryOn, mergeTelemetryConfig, type TelemetryConfig } from '../../src/telemetry/telemetry-config.ts';
import { FakeConnection } from './support/fake-connection.ts';

const recorded = JSON.parse(readFileSync(new URL('../fixtures/cdp/network-events.json', import.meta.url), 'utf8')) as Record<
  string,
  { events: Array<{ method: string; params: any }> }
>;

// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the recorded event's params type
function recordedParams<T>(name: string, method: string): T {
  return structuredClone(recorded[name]!.events.find((e) => e.method === method)!.params) as T;
}

// ---- CDP params -------------------------------------------------------------------------------

function requestWillBeSent(
  requestId: string,
  url: string,
  over: Partial<Protocol.Network.RequestWillBeSentEvent> = {},
): Protocol.Network.RequestWillBeSentEvent {
  const params = recordedParams<Protocol.Network.RequestWillBeSentEvent>('get_json', 'Network.requestWillBeSent');
  params.requestId = requestId;
  params.request.url = url;
  return { ...params, ...over };
}

function responseReceived(
  requestId: string,
  mimeType = 'application/json',
  type: Protocol.Network.ResourceType = 'Fetch',
): Protocol.Network.ResponseReceivedEvent {
  const params = recordedParams<Protocol.Network.ResponseReceivedEvent>('get_json', 'Network.responseReceived');
  params.requestId = requestId;
  params.type = type;
  params.response.mimeType = mimeType;
  return params;
}

const loadingFinished = (requestId: string, encodedDataLength = 100): Protocol.Network.LoadingFinishedEvent => ({
  requestId,
  timestamp: 1300,
  encodedDataLength,
});
const dataReceived = (requestId: string, dataLength: number): Protocol.Network.DataReceivedEvent => ({
  requestId,
  timestamp: 1300,
  dataLength,
  encodedDataLength: dataLength,
});
const loadingFailed = (requestId: string): Protocol.Network.LoadingFailedEvent => ({
  requestId,
  timestamp: 1300,
  type: 'Fetch',
  errorText: 'net::ERR_ABORTED',
  canceled: true,
});

function frame(id: string, loaderId: string, url: string): Protocol.Page.Frame {
  return {
    id,
    loaderId,
    url,
    domainAndRegistry: '',
    securityOrigin: '',
    mimeType: 'text/html',
    secureContextType: 'InsecureScheme',
    crossOriginIsolatedContextType: 'NotIsolated',
    gatedAPIFeatures: [],
  };
}

// ---- a fake core ------------------------------------------------------------------------------

interface Emitted<T extends EventType = EventType> {
  type: T;
  data: EventDataByType[T];
  truncated: boolean;
  method: string | undefined;
}

function setup(options: { limits?: Partial<Limits>; config?: TelemetryConfig; smallRendererBuffers?: boolean } = {}) {
  const connection = new FakeConnection();
  const tracker = new EventContextTracker();
  const events: Emitted[] = [];
  let config = options.config ?? defaultTelemetryConfig();
  const loadingTabs = new LoadingTabsFamily();
  const host: FamilyHost = {
    connection: connection.asConnection(),
    tracker,
    clock: new BrowserClock(),
    limits: { ...DEFAULT_LIMITS, ...options.limits },
    logger: pino({ level: 'silent' }),
    loadingTabs,
    get config() {
      return config;
    },
    handle(event, handler) {
      connection.on(event, (params, sessionId) => {
        const state = tracker.get(sessionId);
        if (state) handler(params, state);
      });
    },
    isOn: (category) => isCategoryOn(config, category),
    admits: (category) => isCategoryOn(config, category),
    stats: new TelemetryStats(),
    emit(type, _ts, data, options) {
      events.push({ type, data, truncated: options?.truncated === true, method: options?.method });
    },
    setUpStep: (_target, _step, command) => command.catch(() => undefined),
  };
  const family = new NetworkFamily({ smallRendererBuffers: options.smallRendererBuffers });
  // The core's tracker first, as in Telemetry: the family hears of load ends from it.
  loadingTabs.start(host);
  family.start(host);

  const attach = (sessionId: string, targetId: string, type: string, parent?: AttachedTarget): TargetState => {
    const info = { targetId, type, url: '', title: '', attached: true, canAccessOpener: false };
    const target = new AttachedTarget(connection.asConnection(), sessionId, targetId, type, info, parent, true);
    const state = tracker.add(target);
    void family.setUpTarget(state);
    return state;
  };

  /** The tab's main frame commits a document (as the core does before calling the family). */
  const navigate = (tab: TargetState, loaderId: string): void => {
    tab.navSeq++;
    family.frameNavigated(tab, frame(tab.target.targetId, loaderId, 'http://fixture.test/'), true);
  };

  const ofType = <T extends EventType>(type: T) => events.filter((e): e is Emitted<T> => e.type === type);
  const setConfig = (next: TelemetryConfig) => {
    config = next;
    for (const state of tracker.all()) void family.reconfigure(state);
  };
  return { connection, tracker, family, events, attach, navigate, ofType, setConfig, host };
}

/** A complete request on one session: start, response, data, end. */
function completeRequest(c: FakeConnection, sessionId: string, requestId: string, url: string, mimeType = 'application/json'): void {
  c.emit('Network.requestWillBeSent', requestWillBeSent(requestId, url), sessionId);
  c.emit('Network.responseReceived', responseReceived(requestId, mimeType), sessionId);
  c.emit('Network.dataReceived', dataReceived(requestId, 20), sessionId);
  c.emit('Network.loadingFinished', loadingFinished(requestId), sessionId);
}

const networkOff = () => mergeTelemetryConfig(defaultTelemetryConfig(), { browser: { network: { enabled: false } } });

/** Past the quiet period after which a loaded tab's deferred bodies are fetched. */
const settle = () => vi.advanceTimersByTimeAsync(BODY_QUIET_MS);

describe('NetworkFamily', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  describe('setup', () => {
    it('enables Network with raised buffers on page, iframe, worker, service and shared worker targets', () => {
      const { connection, attach } = setup();
      const tab = attach('S-page', 'T-page', 'page');
      attach('S-iframe', 'T-iframe', 'iframe', tab.target);
      attach('S-worker', 'T-worker', 'worker', tab.target);
      attach('S-sw', 'T-sw', 'service_worker');
      attach('S-shared', 'T-shared', 'shared_worker');
      const enables = connection.sent.filter((c) => c.method === 'Network.enable');
      expect(enables.map((c) => c.sessionId)).toEqual(['S-page', 'S-iframe', 'S-worker', 'S-sw', 'S-shared']);
      expect(enables[0]!.params).toEqual({ maxTotalBufferSize: 100 * 1024 * 1024, maxResourceBufferSize: 2 * 1024 * 1024, maxPostDataSize: 64 * 1024 });
    });

    describe('with the renderer-buffer cut (smallRendererBuffers)', () => {
      const raised = { maxTotalBufferSize: 100 * 1024 * 1024, maxResourceBufferSize: 2 * 1024 * 1024, maxPostDataSize: 64 * 1024 };

      it('asks the renderer to keep no bodies, the browser keeping durable copies', () => {
        const { connection, attach } = setup({ smallRendererBuffers: true });
        attach('S-page', 'T-page', 'page');
        expect(connection.sent.find((c) => c.method === 'Network.enable')!.params).toEqual({ ...raised, maxTotalBufferSize: 1, maxResourceBufferSize: 1 });
      });

      it('gives the renderer raised buffers when the browser refuses durable bodies, on that session and every later one', async () => {
        const { connection, attach } = setup({ smallRendererBuffers: true });
        connection.answers.set('Network.configureDurableMessages', () => Promise.reject(new Error("'Network.configureDurableMessages' wasn't found")));
        attach('S-page', 'T-page', 'page');
        await vi.advanceTimersByTimeAsync(0);
        attach('S-worker', 'T-worker', 'service_worker');
        const enables = connection.sent.filter((c) => c.method === 'Network.enable');
        expect(enables.map((c) => [c.sessionId, c.params])).toEqual([
          ['S-page', { ...raised, maxTotalBufferSize: 1, maxResourceBufferSize: 1 }],
          ['S-page', raised],
          ['S-worker', raised],
        ]);
      });
    });

    it('asks for durable bodies right after Network.enable: 32 MiB, a resource as large as the renderer keeps', () => {
      const { connection, attach } = setup();
      attach('S-page', 'T-page', 'page');
      expect(connection.commandsFor('S-page')).toEqual(['Network.enable', 'Network.configureDurableMessages']);
      expect(connection.sent[1]!.params).toEqual({ maxTotalBufferSize: 32 * 1024 * 1024, maxResourceBufferSize: 2 * 1024 * 1024 });
    });

    it('does not enable Network when the network category is off', () => {
      const { connection, attach } = setup({ config: networkOff() });
      attach('S-page', 'T-page', 'page');
      expect(connection.sent.map((c) => c.method)).not.toContain('Network.enable');
    });

    it('disables Network on every target when the category is switched off, and enables it again when on', () => {
      const { connection, attach, setConfig } = setup();
      attach('S-page', 'T-page', 'page');
      setConfig(networkOff());
      setConfig(defaultTelemetryConfig());
      expect(connection.commandsFor('S-page')).toEqual([
        'Network.enable',
        'Network.configureDurableMessages',
        'Network.disable',
        'Network.enable',
        'Network.configureDurableMessages',
      ]);
    });
  });

  describe('requests and responses', () => {
    it('reports a request, then its response with the body fetched on the session that finished it', async () => {
      const { connection, attach, events } = setup();
      connection.answers.set('Network.getResponseBody', async () => ({ body: '{"a":1}', base64Encoded: false }));
      attach('S1', 'T1', 'page');
      completeRequest(connection, 'S1', 'R1', 'http://fixture.test/a.json');
      await settle();
      expect(events.map((e) => e.type)).toEqual(['network_request', 'network_response']);
      expect(events[1]!.data).toMatchObject({ request_id: 'R1', url: 'http://fixture.test/a.json', body: '{"a":1}' });
      expect(connection.sent.find((c) => c.method === 'Network.getResponseBody')).toMatchObject({ params: { requestId: 'R1' }, sessionId: 'S1' });
    });

    it("reports a request started on the parent's session and finished on the iframe's once, in the parent's context", async () => {
      const { connection, attach, ofType } = setup();
      connection.answers.set('Network.getResponseBody', async () => ({ body: '<p>inner', base64Encoded: false }));
      const tab = attach('S-page', 'T-page', 'page');
      const iframe = attach('S-iframe', 'T-iframe', 'iframe', tab.target);
      connection.emit(
        'Network.requestWillBeSent',
        requestWillBeSent('DOC-IFRAME', 'http://other.test/inner.html', { type: 'Document', frameId: 'T-iframe', loaderId: 'DOC-IFRAME' }),
        'S-page',
      );
      connection.emit('Network.responseReceived', responseReceived('DOC-IFRAME', 'text/html', 'Document'), 'S-page');
      connection.emit('Network.dataReceived', dataReceived('DOC-IFRAME', 9), iframe.target.sessionId);
      connection.emit('Network.loadingFinished', loadingFinished('DOC-IFRAME'), 'S-iframe');
      await settle();
      const [response] = ofType('network_response');
      expect(ofType('network_response')).toHaveLength(1);
      expect(response!.data).toMatchObject({ session_id: 'S-page', target_type: 'page', frame_id: 'T-iframe', loader_id: 'DOC-IFRAME', body: '<p>inner' });
      // Durable bodies are asked for on the tab's session (see "when bodies are fetched").
      expect(connection.sent.find((c) => c.method === 'Network.getResponseBody')!.sessionId).toBe('S-page');
    });

    it('never asks for a textual body over the fetch limit, and marks its response truncated', async () => {
      const { connection, attach, ofType } = setup();
      attach('S1', 'T1', 'page');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('HUGE', 'http://fixture.test/huge.txt'), 'S1');
      connection.emit('Network.responseReceived', responseReceived('HUGE', 'text/plain'), 'S1');
      for (let i = 0; i < 20; i++) connection.emit('Network.dataReceived', dataReceived('HUGE', 1024 * 1024), 'S1');
      connection.emit('Network.loadingFinished', loadingFinished('HUGE', 20 * 1024 * 1024 + 200), 'S1');
      await vi.advanceTimersByTimeAsync(0);
      expect(connection.sent.map((c) => c.method)).not.toContain('Network.getResponseBody');
      const [response] = ofType('network_response');
      expect(response!.data).not.toHaveProperty('body');
      expect(response!.truncated).toBe(true);
    });

    it('never asks for the body of an image', async () => {
      const { connection, attach, ofType } = setup();
      attach('S1', 'T1', 'page');
      completeRequest(connection, 'S1', 'IMG', 'http://fixture.test/a.png', 'image/png');
      await vi.advanceTimersByTimeAsync(0);
      expect(connection.sent.map((c) => c.method)).not.toContain('Network.getResponseBody');
      expect(ofType('network_response')[0]!.truncated).toBe(false);
    });

    it('emits the response without a body when the fetch fails', async () => {
      const { connection, attach, ofType } = setup();
      connection.answers.set('Network.getResponseBody', async () => {
        throw new Error('No resource with given identifier found');
      });
      attach('S1', 'T1', 'page');
      completeRequest(connection, 'S1', 'R1', 'http://fixture.test/a.json');
      await settle();
      const [response] = ofType('network_response');
      expect(response!.data).not.toHaveProperty('body');
      expect(response!.truncated).toBe(false);
    });

    it('runs at most 4 body fetches at once', async () => {
      const { connection, attach, ofType } = setup();
      const pending: Array<() => void> = [];
      connection.answers.set('Network.getResponseBody', () => new Promise((resolve) => pending.push(() => resolve({ body: 'x', base64Encoded: false }))));
      attach('S1', 'T1', 'page');
      for (let i = 0; i < 10; i++) completeRequest(connection, 'S1', `R${i}`, `http://fixture.test/${i}.json`);
      await settle();
      expect(pending).toHaveLength(4);
      pending.shift()!();
      await vi.advanceTimersByTimeAsync(0);
      expect(ofType('network_response')).toHaveLength(1);
      expect(pending).toHaveLength(4);
    });

    it('does not hold back other events while bodies are being fetched', async () => {
      const { connection, attach, ofType } = setup();
      connection.answers.set('Network.getResponseBody', () => new Promise(() => undefined));
      attach('S1', 'T1', 'page');
      completeRequest(connection, 'S1', 'SLOW', 'http://fixture.test/slow.json');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('NEXT', 'http://fixture.test/next.json'), 'S1');
      connection.emit('Network.loadingFailed', loadingFailed('NEXT'), 'S1');
      expect(ofType('network_request')).toHaveLength(2);
      expect(ofType('network_loading_failed')).toHaveLength(1);
      expect(ofType('network_response')).toHaveLength(0);
    });

    it('emits the network_request of a Blob POST with its fetched body, before its response', async () => {
      const { connection, attach, events } = setup();
      connection.answers.set('Network.getRequestPostData', async () => ({ postData: 'blob-body', base64Encoded: false }));
      connection.answers.set('Network.getResponseBody', async () => ({ body: '{}', base64Encoded: false }));
      attach('S1', 'T1', 'page');
      const params = requestWillBeSent('BLOB', 'http://fixture.test/echo');
      params.request.method = 'POST';
      params.request.hasPostData = true;
      connection.emit('Network.requestWillBeSent', params, 'S1');
      connection.emit('Network.responseReceived', responseReceived('BLOB'), 'S1');
      connection.emit('Network.loadingFinished', loadingFinished('BLOB'), 'S1');
      await settle();
      expect(events.map((e) => e.type)).toEqual(['network_request', 'network_response']);
      expect(events[0]!.data).toMatchObject({ method: 'POST', post_data: 'blob-body' });
    });

    it('keeps the nav_seq and loader_id of a request that spans a navigation', async () => {
      const { connection, attach, navigate, ofType } = setup();
      const tab = attach('S1', 'T1', 'page');
      navigate(tab, 'L1');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('BEACON', 'http://fixture.test/beacon', { loaderId: 'L1', frameId: 'T1' }), 'S1');
      navigate(tab, 'L2');
      connection.emit('Network.responseReceived', responseReceived('BEACON', 'image/gif'), 'S1');
      connection.emit('Network.loadingFinished', loadingFinished('BEACON'), 'S1');
      expect(ofType('network_response')[0]!.data).toMatchObject({ nav_seq: 1, loader_id: 'L1' });
    });

    it('reports the response of a document replaced before its HTML finished, without a body, once', async () => {
      const { connection, attach, navigate, ofType } = setup();
      const tab = attach('S1', 'T1', 'page');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('L1', 'http://fixture.test/a.html', { type: 'Document', loaderId: 'L1' }), 'S1');
      connection.emit('Network.responseReceived', responseReceived('L1', 'text/html', 'Document'), 'S1');
      navigate(tab, 'L1');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('L2', 'http://fixture.test/b.html', { type: 'Document', loaderId: 'L2' }), 'S1');
      connection.emit('Network.responseReceived', responseReceived('L2', 'text/html', 'Document'), 'S1');
      navigate(tab, 'L2');
      connection.emit('Network.loadingFinished', loadingFinished('L1'), 'S1');
      await vi.advanceTimersByTimeAsync(0);
      const responses = ofType('network_response');
      expect(responses.map((e) => [e.data.request_id, e.method])).toEqual([['L1', 'Network.responseReceived']]);
      expect(responses[0]!.data).toMatchObject({ url: 'http://fixture.test/a.html', loader_id: 'L1', nav_seq: 0 });
      expect(responses[0]!.data).not.toHaveProperty('body');
    });

    it('stops tracking requests an old document left without a response after two navigations', async () => {
      const { connection, attach, navigate, ofType } = setup();
      const tab = attach('S1', 'T1', 'page');
      navigate(tab, 'L1');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('HANG', 'http://fixture.test/hang'), 'S1');
      navigate(tab, 'L2');
      navigate(tab, 'L3');
      connection.emit('Network.responseReceived', responseReceived('HANG'), 'S1');
      connection.emit('Network.loadingFinished', loadingFinished('HANG'), 'S1');
      await settle();
      // Now unknown: reported as a request first seen at its response, in the current document.
      expect(ofType('network_response')[0]!.data).toMatchObject({ nav_seq: 3 });
      expect(ofType('network_response')[0]!.data).not.toHaveProperty('method');
    });

    it('reports the failure of a request it never saw start with a partial context', () => {
      const { connection, attach, ofType } = setup();
      attach('S1', 'T1', 'page');
      connection.emit('Network.loadingFailed', loadingFailed('EARLY'), 'S1');
      expect(ofType('network_loading_failed')[0]!.data).toEqual({
        session_id: 'S1',
        target_id: 'T1',
        target_type: 'page',
        nav_seq: 0,
        request_id: 'EARLY',
        error_text: 'net::ERR_ABORTED',
        canceled: true,
      });
    });

    it("reports a response whose request it never saw (a service worker's own script) with what the response tells", () => {
      const { connection, attach, ofType } = setup();
      attach('S-sw', 'T-sw', 'service_worker');
      connection.emit('Network.responseReceived', responseReceived('SW-SCRIPT', 'image/png'), 'S-sw');
      connection.emit('Network.loadingFinished', loadingFinished('SW-SCRIPT'), 'S-sw');
      const data = ofType('network_response')[0]!.data;
      expect(data).toMatchObject({ target_type: 'service_worker', url: 'http://fixture.test/data.json', request_id: 'SW-SCRIPT' });
      expect(data).not.toHaveProperty('method');
      expect(data).not.toHaveProperty('nav_seq');
    });

    it('produces no events and fetches no body when the category is off', async () => {
      const { connection, attach, events, setConfig } = setup();
      attach('S1', 'T1', 'page');
      setConfig(networkOff());
      completeRequest(connection, 'S1', 'R1', 'http://fixture.test/a.json');
      await vi.advanceTimersByTimeAsync(1000);
      expect(events).toEqual([]);
      expect(connection.sent.map((c) => c.method)).not.toContain('Network.getResponseBody');
    });
  });

  describe('when bodies are fetched', () => {
    const bodyAsks = (c: FakeConnection) =>
      c.sent.filter((x) => x.method === 'Network.getResponseBody').map((x) => (x.params as { requestId: string }).requestId);
    /** The tab starts loading a document in its main frame (its request, then its commit). */
    const startLoad = (c: FakeConnection, tab: TargetState, loaderId: string) =>
      c.emit(
        'Network.requestWillBeSent',
        requestWillBeSent(loaderId, `http://fixture.test/${loaderId}.html`, { type: 'Document', frameId: tab.target.targetId, loaderId }),
        tab.target.sessionId,
      );
    /** The document's HTML has arrived (its body is wanted too). */
    const finishDocument = (c: FakeConnection, tab: TargetState, loaderId: string) => {
      c.emit('Network.responseReceived', responseReceived(loaderId, 'text/html', 'Document'), tab.target.sessionId);
      c.emit('Network.loadingFinished', loadingFinished(loaderId), tab.target.sessionId);
    };

    it("waits for the tab's load event", async () => {
      const { connection, attach, ofType } = setup();
      const tab = attach('S1', 'T1', 'page');
      startLoad(connection, tab, 'L1');
      completeRequest(connection, 'S1', 'R1', 'http://fixture.test/a.json');
      finishDocument(connection, tab, 'L1');
      await vi.advanceTimersByTimeAsync(1000);
      expect(bodyAsks(connection)).toEqual([]);
      expect(ofType('network_response')).toHaveLength(0);
      connection.emit('Page.loadEventFired', { timestamp: 1 }, 'S1');
      expect(bodyAsks(connection)).toEqual(['R1', 'L1']);
      await vi.advanceTimersByTimeAsync(0);
      expect(ofType('network_response')).toHaveLength(2);
    });

    it('stops waiting for a load that ends without a load event', async () => {
      const { connection, attach } = setup();
      const tab = attach('S1', 'T1', 'page');
      startLoad(connection, tab, 'L1');
      finishDocument(connection, tab, 'L1');
      connection.emit('Page.frameStoppedLoading', { frameId: 'a-child-frame' }, 'S1');
      await settle();
      expect(bodyAsks(connection)).toEqual([]);
      connection.emit('Page.frameStoppedLoading', { frameId: 'T1' }, 'S1');
      await settle();
      expect(bodyAsks(connection)).toEqual(['L1']);
    });

    it('after the load, waits while another request of the tab is in flight, then BODY_QUIET_MS', async () => {
      const { connection, attach } = setup();
      attach('S1', 'T1', 'page');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('SLOW', 'http://fixture.test/slow.json'), 'S1');
      completeRequest(connection, 'S1', 'R1', 'http://fixture.test/a.json');
      await vi.advanceTimersByTimeAsync(1000);
      expect(bodyAsks(connection)).toEqual([]);
      connection.emit('Network.responseReceived', responseReceived('SLOW'), 'S1');
      connection.emit('Network.loadingFinished', loadingFinished('SLOW'), 'S1');
      await vi.advanceTimersByTimeAsync(BODY_QUIET_MS - 1);
      expect(bodyAsks(connection)).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(bodyAsks(connection)).toEqual(['R1', 'SLOW']);
    });

    it('fetches at most MAX_DEFER_MS after the first deferred body, quiet or not', async () => {
      const { connection, attach } = setup();
      attach('S1', 'T1', 'page');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('POLL', 'http://fixture.test/poll'), 'S1');
      completeRequest(connection, 'S1', 'R1', 'http://fixture.test/a.json');
      await vi.advanceTimersByTimeAsync(MAX_DEFER_MS - 1);
      expect(bodyAsks(connection)).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(bodyAsks(connection)).toEqual(['R1']);
    });

    it('keeps durable bodies waiting when the tab starts a new document', async () => {
      const { connection, attach, navigate } = setup();
      const tab = attach('S1', 'T1', 'page');
      await vi.advanceTimersByTimeAsync(0);
      startLoad(connection, tab, 'L1');
      completeRequest(connection, 'S1', 'R1', 'http://fixture.test/a.json');
      startLoad(connection, tab, 'L2');
      expect(bodyAsks(connection)).toEqual([]);
      navigate(tab, 'L2');
      connection.emit('Page.loadEventFired', { timestamp: 1 }, 'S1');
      connection.emit('Network.responseReceived', responseReceived('L2', 'image/png', 'Document'), 'S1');
      connection.emit('Network.loadingFinished', loadingFinished('L2'), 'S1');
      await settle();
      expect(bodyAsks(connection)).toEqual(['R1']);
    });

    it('asks at once, past the concurrency limit, for the bodies without durable storage a new document would drop', async () => {
      const { connection, attach } = setup();
      connection.answers.set('Network.getResponseBody', () => new Promise(() => undefined));
      connection.answers.set('Network.configureDurableMessages', async () => {
        throw new Error("'Network.configureDurableMessages' wasn't found");
      });
      const tab = attach('S1', 'T1', 'page');
      await vi.advanceTimersByTimeAsync(0);
      startLoad(connection, tab, 'L1');
      for (let i = 0; i < 6; i++) completeRequest(connection, 'S1', `R${i}`, `http://fixture.test/${i}.json`);
      startLoad(connection, tab, 'L2');
      expect(bodyAsks(connection)).toEqual(['R0', 'R1', 'R2', 'R3', 'R4', 'R5']);
    });

    it("leaves the tab's bodies waiting when only one of its iframes loads a new document", async () => {
      const { connection, attach } = setup();
      connection.answers.set('Network.configureDurableMessages', async () => {
        throw new Error("'Network.configureDurableMessages' wasn't found");
      });
      const tab = attach('S1', 'T1', 'page');
      attach('S-iframe', 'T-iframe', 'iframe', tab.target);
      await vi.advanceTimersByTimeAsync(0);
      startLoad(connection, tab, 'L1');
      completeRequest(connection, 'S1', 'R-page', 'http://fixture.test/a.json');
      completeRequest(connection, 'S-iframe', 'R-iframe', 'http://other.test/b.json');
      connection.emit(
        'Network.requestWillBeSent',
        requestWillBeSent('L-IF', 'http://other.test/next.html', { type: 'Document', frameId: 'T-iframe', loaderId: 'L-IF' }),
        'S1',
      );
      expect(bodyAsks(connection)).toEqual(['R-iframe']);
    });

    it('fetches the bodies of a dedicated worker at once', async () => {
      const { connection, attach } = setup();
      const tab = attach('S1', 'T1', 'page');
      attach('S-worker', 'T-worker', 'worker', tab.target);
      startLoad(connection, tab, 'L1');
      completeRequest(connection, 'S-worker', 'R-worker', 'http://fixture.test/w.json');
      await vi.advanceTimersByTimeAsync(0);
      expect(bodyAsks(connection)).toEqual(['R-worker']);
    });

    it('counts a body evicted before it was asked for, and emits the response without it', async () => {
      const { connection, attach, ofType, host } = setup();
      connection.answers.set('Network.getResponseBody', async () => {
        throw new Error('Request content was evicted from inspector cache');
      });
      attach('S1', 'T1', 'page');
      completeRequest(connection, 'S1', 'R1', 'http://fixture.test/a.json');
      await settle();
      expect(host.stats.bodyFetches).toMatchObject({ evicted: 1, failed: 0, fetched: 0 });
      expect(ofType('network_response')[0]!.data).not.toHaveProperty('body');
    });

    it("asks for an iframe's durable body on the tab's session, also after the iframe detached", async () => {
      const { connection, attach, family, tracker, ofType } = setup();
      connection.answers.set('Network.getResponseBody', async () => ({ body: '{"in":"iframe"}', base64Encoded: false }));
      const tab = attach('S1', 'T1', 'page');
      const iframe = attach('S-iframe', 'T-iframe', 'iframe', tab.target);
      await vi.advanceTimersByTimeAsync(0);
      startLoad(connection, tab, 'L1');
      completeRequest(connection, 'S-iframe', 'R-iframe', 'http://other.test/b.json');
      family.targetDetached(iframe);
      tracker.remove(iframe.target);
      connection.emit('Page.loadEventFired', { timestamp: 1 }, 'S1');
      await vi.advanceTimersByTimeAsync(0);
      expect(connection.sent.filter((c) => c.method === 'Network.getResponseBody').map((c) => c.sessionId)).toEqual(['S1']);
      expect(ofType('network_response')[0]!.data.body).toBe('{"in":"iframe"}');
    });

    it('emits the response without a body, unasked, when its iframe without durable storage detaches first', async () => {
      const { connection, attach, family, tracker, ofType } = setup();
      connection.answers.set('Network.configureDurableMessages', async () => {
        throw new Error("'Network.configureDurableMessages' wasn't found");
      });
      const tab = attach('S1', 'T1', 'page');
      const iframe = attach('S-iframe', 'T-iframe', 'iframe', tab.target);
      await vi.advanceTimersByTimeAsync(0);
      startLoad(connection, tab, 'L1');
      completeRequest(connection, 'S-iframe', 'R-iframe', 'http://other.test/b.json');
      family.targetDetached(iframe);
      tracker.remove(iframe.target);
      await vi.advanceTimersByTimeAsync(0);
      expect(bodyAsks(connection)).toEqual([]);
      expect(ofType('network_response')[0]!.data).not.toHaveProperty('body');
    });

    it('fetches only what the body policy wants, cut to its max_bytes', async () => {
      const config = mergeTelemetryConfig(defaultTelemetryConfig(), { browser: { network: { bodies: { resource_types: ['Stylesheet'], max_bytes: 3 } } } });
      const { connection, attach, ofType } = setup({ config });
      connection.answers.set('Network.getResponseBody', async () => ({ body: 'body{color:red}', base64Encoded: false }));
      attach('S1', 'T1', 'page');
      completeRequest(connection, 'S1', 'JSON', 'http://fixture.test/a.json');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('CSS', 'http://fixture.test/a.css', { type: 'Stylesheet' }), 'S1');
      connection.emit('Network.responseReceived', responseReceived('CSS', 'text/css', 'Stylesheet'), 'S1');
      connection.emit('Network.loadingFinished', loadingFinished('CSS'), 'S1');
      await settle();
      expect(bodyAsks(connection)).toEqual(['CSS']);
      const css = ofType('network_response').find((e) => e.data.request_id === 'CSS')!;
      expect(css.data.body).toBe('bod');
      expect(css.truncated).toBe(true);
    });

    it('leaves no timer behind on dispose', async () => {
      const { connection, attach, family } = setup();
      const tab = attach('S1', 'T1', 'page');
      startLoad(connection, tab, 'L1');
      completeRequest(connection, 'S1', 'R1', 'http://fixture.test/a.json');
      family.dispose();
      expect(vi.getTimerCount()).toBe(0);
    });
  });

  describe('network_idle', () => {
    it('fires 500 ms after the last response of the tab, with the tab context', async () => {
      const { connection, attach, navigate, ofType } = setup();
      const tab = attach('S1', 'T1', 'page');
      navigate(tab, 'L1');
      completeRequest(connection, 'S1', 'R1', 'http://fixture.test/a.json', 'image/png');
      await vi.advanceTimersByTimeAsync(499);
      expect(ofType('network_idle')).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(ofType('network_idle').map((e) => e.data)).toEqual([{ session_id: 'S1', target_id: 'T1', target_type: 'page', frame_id: 'T1', nav_seq: 1 }]);
      expect(ofType('network_idle')[0]!.method).toBeUndefined();
    });

    it('waits for the requests of its iframes and dedicated workers', async () => {
      const { connection, attach, navigate, ofType } = setup();
      const tab = attach('S1', 'T1', 'page');
      attach('S-iframe', 'T-iframe', 'iframe', tab.target);
      attach('S-worker', 'T-worker', 'worker', tab.target);
      navigate(tab, 'L1');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('IF', 'http://other.test/slow'), 'S-iframe');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('WK', 'http://fixture.test/w'), 'S-worker');
      await vi.advanceTimersByTimeAsync(2000);
      connection.emit('Network.loadingFailed', loadingFailed('IF'), 'S-iframe');
      await vi.advanceTimersByTimeAsync(2000);
      expect(ofType('network_idle')).toHaveLength(0);
      connection.emit('Network.loadingFailed', loadingFailed('WK'), 'S-worker');
      await vi.advanceTimersByTimeAsync(500);
      expect(ofType('network_idle')).toHaveLength(1);
    });

    it('does not count an EventSource', async () => {
      const { connection, attach, navigate, ofType } = setup();
      const tab = attach('S1', 'T1', 'page');
      navigate(tab, 'L1');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('ES', 'http://fixture.test/events', { type: 'EventSource' }), 'S1');
      await vi.advanceTimersByTimeAsync(500);
      expect(ofType('network_idle')).toHaveLength(1);
    });

    it('does not count requests of a service worker toward any tab', async () => {
      const { connection, attach, navigate, ofType } = setup();
      const tab = attach('S1', 'T1', 'page');
      attach('S-sw', 'T-sw', 'service_worker');
      navigate(tab, 'L1');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('SW', 'http://fixture.test/sw-fetch'), 'S-sw');
      await vi.advanceTimersByTimeAsync(500);
      expect(ofType('network_idle')).toHaveLength(1);
    });

    it("does not fire while the new document's HTML is still arriving", async () => {
      const { connection, attach, navigate, ofType } = setup();
      const tab = attach('S1', 'T1', 'page');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('L1', 'http://fixture.test/trickle.html', { type: 'Document', loaderId: 'L1' }), 'S1');
      connection.emit('Network.responseReceived', responseReceived('L1', 'image/png', 'Document'), 'S1');
      navigate(tab, 'L1');
      await vi.advanceTimersByTimeAsync(2000);
      expect(ofType('network_idle')).toHaveLength(0);
      connection.emit('Network.loadingFinished', loadingFinished('L1'), 'S1');
      await vi.advanceTimersByTimeAsync(500);
      expect(ofType('network_idle').map((e) => e.data.nav_seq)).toEqual([1]);
    });

    it('waits for the network_response of the last request, body fetch included', async () => {
      const { connection, attach, navigate, events } = setup();
      let answer: () => void = () => undefined;
      connection.answers.set('Network.getResponseBody', () => new Promise((resolve) => (answer = () => resolve({ body: '{}', base64Encoded: false }))));
      const tab = attach('S1', 'T1', 'page');
      navigate(tab, 'L1');
      completeRequest(connection, 'S1', 'R1', 'http://fixture.test/a.json');
      await vi.advanceTimersByTimeAsync(1000);
      answer();
      await vi.advanceTimersByTimeAsync(500);
      expect(events.map((e) => e.type)).toEqual(['network_request', 'network_response', 'network_idle']);
    });

    it('goes idle when an iframe with a request in flight is detached', async () => {
      const { connection, attach, navigate, family, tracker, ofType } = setup();
      const tab = attach('S1', 'T1', 'page');
      const iframe = attach('S-iframe', 'T-iframe', 'iframe', tab.target);
      navigate(tab, 'L1');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('IF', 'http://other.test/hang'), 'S-iframe');
      await vi.advanceTimersByTimeAsync(1000);
      family.targetDetached(iframe);
      tracker.remove(iframe.target);
      await vi.advanceTimersByTimeAsync(500);
      expect(ofType('network_idle')).toHaveLength(1);
    });

    it('never fires for a tab that was closed', async () => {
      const { connection, attach, navigate, family, ofType } = setup();
      const tab = attach('S1', 'T1', 'page');
      navigate(tab, 'L1');
      completeRequest(connection, 'S1', 'R1', 'http://fixture.test/a.png', 'image/png');
      family.targetDetached(tab);
      await vi.advanceTimersByTimeAsync(1000);
      expect(ofType('network_idle')).toHaveLength(0);
    });

    it("keeps one tab's requests from delaying another tab's idle", async () => {
      const { connection, attach, navigate, ofType } = setup();
      const a = attach('SA', 'TA', 'page');
      const b = attach('SB', 'TB', 'page');
      navigate(a, 'LA');
      navigate(b, 'LB');
      connection.emit('Network.requestWillBeSent', requestWillBeSent('A-HANG', 'http://fixture.test/hang'), 'SA');
      await vi.advanceTimersByTimeAsync(500);
      expect(ofType('network_idle').map((e) => e.data.target_id)).toEqual(['TB']);
    });
  });
});
