// Helper process: the bare CDP client, i.e. what following a browser costs the browser and a Node
// process before the agent does anything of its own. It attaches the way the agent does (browser
// auto-attach with waitForDebuggerOnStart, recursively on every page and iframe session, the same
// target filters, discovery on), enables the same domains on the same target types with the same
// Network buffer parameters, and resumes each target. Nothing else: no page script, no body
// fetches (unless the `fetchBodies` diagnostic asks), no translation, no stream (unless the `relay`
// diagnostic asks). It counts the events it receives (the throughput floor).
//
// Transport: chrome-remote-interface as the agent uses it (the floor), or `ws8` (bench/clients/ws8-cdp.ts,
// a diagnostic: what the same client costs without chrome-remote-interface).
//
// argv[2]: JSON of BareClientOptions.

import http from 'node:http';
import type { Socket } from 'node:net';
import CDP from 'chrome-remote-interface';
import type { Protocol } from 'devtools-protocol';
import { DEFAULT_LIMITS } from '../../src/limits.ts';
import { BodyFetcher } from '../../src/telemetry/body-fetcher.ts';
import { BodyMatcher, defaultBodyPolicy } from '../../src/telemetry/body-policy.ts';
import { planBody } from '../../src/telemetry/network.ts';
import { DEFAULT_CDP_CUTS } from '../../src/telemetry/cdp-cuts.ts';
import { durableBufferParams, networkEnableParams, networkEnableParamsDurable } from '../../src/telemetry/network-family.ts';
import { PAGE_SCRIPT_BUNDLE, PAGE_SCRIPT_GLOBAL_NAME } from '../../src/generated/page-script.ts';
import { pushEvent, serveIpc } from '../lib/ipc.ts';
import { monoMs } from '../lib/processes.ts';
import { Ws8Cdp } from './ws8-cdp.ts';

export interface BareClientOptions {
  wsUrl: string;
  /** Count `Runtime.consoleAPICalled` whose first argument starts with this. */
  consolePrefix?: string;
  /** Count `Network.responseReceived` whose URL contains this. */
  fetchPath?: string;
  /** Read process.cpuUsage() at every matched event (for matchedCpuMicros; off in throughput runs). */
  cpuOfMatched?: boolean;
  transport?: 'cri' | 'ws8';
  /**
   * Diagnostic: also fetch every response body the agent would fetch by default (the same body
   * policy and size rule, at `loadingFinished` without waiting for the load, 4 at a time) and do
   * nothing with it: what serving the bodies costs the browser, next to what the agent adds.
   */
  fetchBodies?: boolean;
  /**
   * Diagnostic: also ask for durable bodies (`Network.configureDurableMessages`, as the agent
   * does): what keeping a copy of the bodies in the browser process costs it.
   */
  durable?: boolean;
  /**
   * Diagnostic: also inject a page script the way the agent does (binding and script in an
   * isolated world of every page and iframe): `world` an empty one (what the world itself costs),
   * `agent` the agent's own with both categories (its reports are received and dropped).
   */
  pageScript?: 'world' | 'agent';
  /**
   * Diagnostic (section 3): also serve every raw CDP message it receives as an SSE frame to any
   * number of subscribers (`GET /` on an HTTP port of its own), the way the agent writes: the
   * frames of one tick joined, one plain socket write per subscriber per tick. No parse of its
   * own, no translation, no log: the cheapest fan-out that docs/events.md allows (no batching timer),
   * for what the agent costs beyond the floor and the kernel's socket writes. Needs the `ws8`
   * transport (the raw messages come from its websocket, as the agent's own do).
   */
  relay?: boolean;
  /**
   * Diagnostic (the feature split, docs/performance.md): exactly these CDP features on the
   * targets the agent would give them, with the agent's parameters, instead of the usual Page,
   * Runtime and Network. Auto-attach with waitForDebuggerOnStart (and the resume) always.
   */
  features?: CdpFeatures;
}

/** One arm of the feature split: which of the agent's CDP features a bare client uses. */
export interface CdpFeatures {
  /** `Page.enable` on pages and iframes. */
  page?: boolean;
  /** `Runtime.enable` on every target. */
  runtime?: boolean;
  /**
   * `Network.enable` on the agent's network target types: `agent` with the buffers the agent
   * uses without durable bodies, `small` with the renderer's body buffers at 1 byte (what the
   * agent uses when the browser keeps durable bodies).
   */
  network?: 'agent' | 'small';
  /** `Network.configureDurableMessages` with the agent's sizes (with `network`). */
  durable?: boolean;
  /** The page script's world and binding (with `page` and `runtime`): empty, or the agent's script. */
  script?: 'world' | 'agent';
  /** The agent's screenshots of the tab: 1 s after its load event, after an exception, at most one every 2 s (with `page`). */
  screenshots?: boolean;
}

export interface BareStats {
  events: number;
  /** With `relay`: the relay's URL. */
  relayUrl?: string;
  /** With `relay`: CDP messages relayed, and socket writes made by the first and the latest match. */
  relayed?: number;
  /** With `relay`: ticks that wrote (how many CDP messages one write carried: relayed / ticks). */
  relayTicks?: number;
  relayWritesAtFirstMatch?: number;
  relayWritesAtLastMatch?: number;
  matched: number;
  firstMatchAt: number;
  lastMatchAt: number;
  /** user+system CPU of this process (µs) over `matchedCpuSpanMs`, within the matched phase. */
  matchedCpuMicros: number;
  matchedCpuSpanMs: number;
  /** With `fetchBodies`: `Network.getResponseBody` answered with a body, and not (the agent's outcomes). */
  bodyFetches?: { fetched: number; failed: number };
  /** With the `screenshots` feature: captures taken. */
  screenshots?: number;
}

// The agent's filters (src/browser/target-manager.ts): no `tab`, no headless WebUI targets; page
// sessions leave service and shared workers to the browser session.
const BROWSER_FILTER: Protocol.Target.TargetFilter = [{ type: 'browser_ui', exclude: true }, { type: 'tab', exclude: true }, {}];
const CHILD_FILTER: Protocol.Target.TargetFilter = [
  { type: 'service_worker', exclude: true },
  { type: 'shared_worker', exclude: true },
  { type: 'browser_ui', exclude: true },
  { type: 'tab', exclude: true },
  {},
];
const NETWORK_TARGET_TYPES = new Set(['page', 'iframe', 'worker', 'service_worker', 'shared_worker']);
// The agent's Network.enable parameters (network-family.ts): the renderer keeps the bodies the
// agent may fetch, unless the renderer-buffer cut is on (cdp-cuts.ts, off by default), as in the agent
// with its defaults.
const NETWORK_PARAMS_FULL = networkEnableParams(DEFAULT_LIMITS);
const NETWORK_PARAMS_SMALL = networkEnableParamsDurable(DEFAULT_LIMITS);

const options = JSON.parse(process.argv[2] ?? '{}') as BareClientOptions;
// The usual bare client enables what the agent enables, with the same Network.enable parameters;
// one that fetches bodies without durable copies needs the renderer's.
const NETWORK_PARAMS = DEFAULT_CDP_CUTS.rendererBodyBuffers && !(options.fetchBodies && !options.durable) ? NETWORK_PARAMS_SMALL : NETWORK_PARAMS_FULL;
const FEATURES: CdpFeatures = options.features ?? {
  page: true,
  runtime: true,
  network: NETWORK_PARAMS === NETWORK_PARAMS_SMALL ? 'small' : 'agent',
  durable: options.durable,
  script: options.pageScript,
};
interface Client extends NodeJS.EventEmitter {
  close(): Promise<void>;
}
const client: Client =
  options.transport === 'ws8' ? await Ws8Cdp.connect(options.wsUrl) : ((await CDP({ target: options.wsUrl, local: true })) as unknown as Client);
const send = (client as unknown as { send: (method: string, params?: object, sessionId?: string) => Promise<unknown> }).send.bind(client);

let relayWrites = 0;
/** The counts of a measurement window, as at its start (reset() starts a new one). */
const WINDOW_START = { matched: 0, firstMatchAt: NaN, lastMatchAt: NaN, matchedCpuMicros: 0, matchedCpuSpanMs: 0 } as const;
const stats: BareStats = { events: 0, ...WINDOW_START };
let cpuAtFirstMatch: (NodeJS.CpuUsage & { at: number }) | undefined;
const match = (): void => {
  const at = monoMs();
  stats.matched++;
  // getrusage is not free: sampled on every 100th match only, as in the agent host.
  if (options.cpuOfMatched && stats.matched % 100 === 1) {
    const cpu = process.cpuUsage();
    cpuAtFirstMatch ??= { ...cpu, at };
    stats.matchedCpuMicros = cpu.user + cpu.system - cpuAtFirstMatch.user - cpuAtFirstMatch.system;
    stats.matchedCpuSpanMs = at - cpuAtFirstMatch.at;
  }
  if (Number.isNaN(stats.firstMatchAt)) {
    stats.firstMatchAt = at;
    stats.relayWritesAtFirstMatch = relayWrites;
  }
  stats.lastMatchAt = at;
  stats.relayWritesAtLastMatch = relayWrites;
};
// Both transports emit 'event' with the raw message once per CDP event.
client.on('event', (message: { method: string; params: unknown; sessionId?: string }) => {
  stats.events++;
  if (options.consolePrefix !== undefined && message.method === 'Runtime.consoleAPICalled') {
    const first = (message.params as Protocol.Runtime.ConsoleAPICalledEvent).args[0];
    if (typeof first?.value === 'string' && first.value.startsWith(options.consolePrefix)) match();
  } else if (options.fetchPath !== undefined && message.method === 'Network.responseReceived') {
    if ((message.params as Protocol.Network.ResponseReceivedEvent).response.url.includes(options.fetchPath)) match();
  }
});

if (options.fetchBodies) {
  // The agent's own fetch queue, over this client's untyped send.
  const bodyFetches = (stats.bodyFetches = { fetched: 0, failed: 0 });
  const fetcher = new BodyFetcher({ send } as unknown as ConstructorParameters<typeof BodyFetcher>[0]);
  const policy = new BodyMatcher(defaultBodyPolicy());
  // sessionId + requestId -> resource and MIME type of a response not yet finished.
  const responseOf = new Map<string, { type: string; mime: string }>();
  client.on('event', (message: { method: string; params: unknown; sessionId?: string }) => {
    if (message.method === 'Network.responseReceived') {
      const p = message.params as Protocol.Network.ResponseReceivedEvent;
      responseOf.set(`${message.sessionId}/${p.requestId}`, { type: p.type, mime: p.response.mimeType });
    } else if (message.method === 'Network.loadingFinished' || message.method === 'Network.loadingFailed') {
      const p = message.params as Protocol.Network.LoadingFinishedEvent;
      const key = `${message.sessionId}/${p.requestId}`;
      const response = responseOf.get(key);
      responseOf.delete(key);
      if (message.method === 'Network.loadingFinished' && response !== undefined && message.sessionId !== undefined) {
        // The agent sums `dataReceived` for the decoded size; the bench serves nothing compressed.
        if (planBody(policy, response.type, response.mime, p.encodedDataLength, DEFAULT_LIMITS) === 'fetch') {
          void fetcher.responseBody(message.sessionId, p.requestId).then((result) => bodyFetches[result.ok ? 'fetched' : 'failed']++);
        }
      }
    }
  });
}

if (options.relay) await startRelay();

async function startRelay(): Promise<void> {
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    res.useChunkedEncodingByDefault = false;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    const socket = res.socket!;
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stats.relayUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
  stats.relayed = 0;
  stats.relayTicks = 0;
  // The raw message as the websocket delivered it.
  if (!(client instanceof Ws8Cdp)) throw new Error('relay needs the ws8 transport');
  const ws = client.websocket;
  const frameEnd = Buffer.from('\n\n');
  let pending: Buffer[] = [];
  let seq = 0;
  const flush = (): void => {
    stats.relayTicks!++;
    const frames = Buffer.concat(pending);
    pending = [];
    for (const socket of sockets) {
      if (socket.writableLength > 1 << 20) continue; // a stalled subscriber: skip, as the agent's cursor would
      socket.write(frames);
      relayWrites++;
    }
  };
  ws.on('message', (data: Buffer) => {
    if (pending.length === 0) process.nextTick(flush);
    pending.push(Buffer.from(`id: ${++seq}\ndata: `), data, frameEnd);
    stats.relayed!++;
  });
}

// The agent's screenshots (src/telemetry/screenshot-family.ts), for the `screenshots` feature: the
// tab is captured 1 s after its own load event unless it navigated meanwhile, and at once after an
// uncaught exception in any of its frames; at most one capture in flight and one every 2 s.
const SCREENSHOT_QUIET_MS = 1000;
const SCREENSHOT_MIN_INTERVAL_MS = 2000;
/** Page or iframe session -> its tab's session. */
const tabOf = new Map<string, string>();
let screenshots = 0;
if (FEATURES.screenshots === true) {
  let pending: NodeJS.Timeout | undefined;
  let lastCaptureAt = -Infinity;
  let inFlight = false;
  const capture = (tab: string): void => {
    const now = performance.now();
    if (inFlight || now - lastCaptureAt < SCREENSHOT_MIN_INTERVAL_MS) return;
    lastCaptureAt = now;
    inFlight = true;
    void send('Page.captureScreenshot', { format: 'png' }, tab)
      .then(() => screenshots++)
      .catch(() => undefined)
      .finally(() => (inFlight = false));
  };
  client.on('event', (message: { method: string; params: unknown; sessionId?: string }) => {
    const tab = message.sessionId === undefined ? undefined : tabOf.get(message.sessionId);
    if (tab === undefined) return;
    if (message.method === 'Page.loadEventFired' && tab === message.sessionId) {
      clearTimeout(pending);
      pending = setTimeout(() => capture(tab), SCREENSHOT_QUIET_MS);
    } else if (message.method === 'Page.frameNavigated' && tab === message.sessionId) {
      if ((message.params as Protocol.Page.FrameNavigatedEvent).frame.parentId === undefined) clearTimeout(pending);
    } else if (message.method === 'Runtime.exceptionThrown') {
      capture(tab);
    }
  });
}

const attached = new Set<string>();
const setups = new Set<Promise<unknown>>();

client.on('event', (message: { method: string; params: unknown; sessionId?: string }) => {
  if (message.method === 'Target.attachedToTarget') onAttached(message.params as Protocol.Target.AttachedToTargetEvent, message.sessionId);
  else if (message.method === 'Target.detachedFromTarget') {
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- Chromium still sends it, and attached is keyed by target id
    const targetId = (message.params as Protocol.Target.DetachedFromTargetEvent).targetId;
    if (targetId) attached.delete(targetId);
  }
});

function onAttached(params: Protocol.Target.AttachedToTargetEvent, parentSessionId: string | undefined): void {
  const { sessionId, targetInfo } = params;
  const ignore = () => undefined;
  if (attached.has(targetInfo.targetId)) {
    // The same worker through a second session: release it, as the agent does.
    void send('Runtime.runIfWaitingForDebugger', {}, sessionId)
      .catch(ignore)
      .then(() => send('Target.detachFromTarget', { sessionId }).catch(ignore));
    return;
  }
  attached.add(targetInfo.targetId);
  const type = targetInfo.type;
  const f = FEATURES;
  const isFrame = type === 'page' || type === 'iframe';
  if (f.screenshots === true && isFrame) tabOf.set(sessionId, type === 'page' ? sessionId : (tabOf.get(parentSessionId ?? '') ?? sessionId));
  // Sent together, resume last, nothing awaited first (a paused service worker answers the enables
  // only after its resume: docs/chromium.md "Deadlock").
  const commands: Array<Promise<unknown>> = [];
  if (isFrame && f.page === true) commands.push(send('Page.enable', {}, sessionId));
  if (f.runtime === true) commands.push(send('Runtime.enable', {}, sessionId));
  if (NETWORK_TARGET_TYPES.has(type) && f.network)
    commands.push(send('Network.enable', f.network === 'small' ? NETWORK_PARAMS_SMALL : NETWORK_PARAMS_FULL, sessionId));
  if (NETWORK_TARGET_TYPES.has(type) && f.network && f.durable === true)
    commands.push(send('Network.configureDurableMessages', durableBufferParams(DEFAULT_LIMITS), sessionId));
  if (isFrame && f.script !== undefined) {
    const world = 'bench-bare-world';
    const install = { binding: 'benchBareReport', interaction: true, page: true, history: true };
    const source = f.script === 'world' ? '0' : `(()=>{${PAGE_SCRIPT_BUNDLE}\n${PAGE_SCRIPT_GLOBAL_NAME}.install(${JSON.stringify(install)})})()`;
    commands.push(send('Runtime.addBinding', { name: install.binding, executionContextName: world }, sessionId));
    commands.push(send('Page.addScriptToEvaluateOnNewDocument', { source, worldName: world, runImmediately: true }, sessionId));
  }
  if (type === 'page' || type === 'iframe') {
    commands.push(send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true, filter: CHILD_FILTER }, sessionId));
  }
  commands.push(send('Runtime.runIfWaitingForDebugger', {}, sessionId));
  const all = Promise.allSettled(commands);
  setups.add(all);
  void all.finally(() => setups.delete(all));
}

await send('Target.setDiscoverTargets', { discover: true, filter: BROWSER_FILTER });
await send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true, filter: BROWSER_FILTER });
// The targets that existed are attached by now; wait for their setup before saying ready.
while (setups.size > 0) await Promise.allSettled([...setups]);

serveIpc({
  stats(): BareStats {
    return { ...stats, ...(FEATURES.screenshots === true && { screenshots }) };
  },
  reset(): void {
    Object.assign(stats, WINDOW_START);
    cpuAtFirstMatch = undefined;
  },
  async close(): Promise<void> {
    await client.close();
    setTimeout(() => process.exit(0), 20);
  },
});

pushEvent({ event: 'ready' });
