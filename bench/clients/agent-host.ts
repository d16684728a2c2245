// Helper process: the agent itself (startAgent from src/, bundled like dist/), plus bench-only
// instrumentation. Used where the orchestrator needs more than the CLI offers: the CDP arrival time
// of marked console lines (latency), memory figures (soak), the embedded browser's pid (reconnect).
//
// Arrival times: chrome-remote-interface reads CDP through `ws` (the project's ws 8, forced by the
// `overrides` in package.json; it emits text messages as Buffers). Wrapping that WebSocket class's
// `emit` for 'message' records
// CLOCK_MONOTONIC when a raw CDP message containing the marker arrives, before the agent parses it.
// The cost is one clock read and one indexOf per message, and only while a marker is set.
//
// argv[2]: JSON of StartAgentOptions (port, token, cdpUrl, telemetry, ...).

import { createRequire } from 'node:module';
import { startAgent, type StartAgentOptions } from '../../src/agent.ts';
import { pushEvent, serveIpc } from '../lib/ipc.ts';
import { monoMs } from '../lib/processes.ts';
import { readNumber } from './sse-reader.ts';

interface EmitterClass {
  prototype: { emit(event: string | symbol, ...args: unknown[]): boolean };
}

export interface HostInfo {
  url: string;
  sessionId: string;
  browserWsUrl: string;
  browserPid: number | undefined;
  cdpConnected: boolean;
}

export interface HostMemory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

let markPrefix: string | undefined;
let marks: Array<[number, number]> = [];
/** process.cpuUsage() and the time at the first and the latest sampled marked message. */
let cpuAtFirstMark: (NodeJS.CpuUsage & { at: number }) | undefined;
let cpuAtLastMark: (NodeJS.CpuUsage & { at: number }) | undefined;

/**
 * Ticks in which marked messages arrived: messages handled in one synchronous run (one socket
 * read) share a tick, so marks / ticks is how many events a write could be batched over.
 */
let markTicks = 0;
let tickOpen = false;
const closeTick = (): void => {
  tickOpen = false;
};
/** The same per event-loop iteration (closed by setImmediate, after the poll phase's reads). */
let markIterations = 0;
let iterationOpen = false;
const closeIteration = (): void => {
  iterationOpen = false;
};

export interface TakenMarks {
  /** [marker number, monotonic ms of arrival] */
  marks: Array<[number, number]>;
  /** user+system CPU (µs) over `cpuSpanMs`, a span of the marked phase (steady state only). */
  cpuMicros: number;
  /** The system (kernel) part of cpuMicros: syscalls, socket writes. */
  systemMicros: number;
  cpuSpanMs: number;
  /** Distinct ticks the marked messages arrived in. */
  ticks: number;
  /** Distinct event-loop iterations they arrived in. */
  iterations: number;
}

/** readNumber over the bytes of a message (ASCII digits). */
function readNumberBytes(bytes: Buffer, from: number): number {
  let n = 0;
  let i = from;
  for (; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (c < 48 || c > 57) break;
    n = n * 10 + (c - 48);
  }
  return i === from ? -1 : n;
}

function instrumentCdpSocket(): void {
  const require = createRequire(import.meta.url);
  const criEntry = require.resolve('chrome-remote-interface');
  const WebSocket = createRequire(criEntry)('ws') as EmitterClass;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called below with .call(this, ...)
  const emit = WebSocket.prototype.emit;
  WebSocket.prototype.emit = function (this: unknown, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'message' && markPrefix !== undefined) {
      const at = monoMs();
      const data = args[0];
      if (typeof data === 'string' || Buffer.isBuffer(data)) {
        const i = data.indexOf(markPrefix);
        if (i !== -1) {
          const n = typeof data === 'string' ? readNumber(data, i + markPrefix.length) : readNumberBytes(data, i + Buffer.byteLength(markPrefix));
          if (n >= 0) {
            marks.push([n, at]);
            if (!tickOpen) {
              tickOpen = true;
              markTicks++;
              process.nextTick(closeTick);
            }
            if (!iterationOpen) {
              iterationOpen = true;
              markIterations++;
              setImmediate(closeIteration);
            }
            // getrusage is not free: sample it on every 100th marked message only.
            if (marks.length % 100 === 1) {
              cpuAtLastMark = { ...process.cpuUsage(), at };
              cpuAtFirstMark ??= cpuAtLastMark;
            }
          }
        }
      }
    }
    return emit.call(this, event, ...args);
  };
}

instrumentCdpSocket();
const options = JSON.parse(process.argv[2] ?? '{}') as StartAgentOptions;
type Agent = Awaited<ReturnType<typeof startAgent>>;
// The durable store as the command line has it (bench/run.ts sets DATA_DIR); options may say none.
const start = (): Promise<Agent> => startAgent({ port: 0, logLevel: 'warn', ...(process.env.DATA_DIR ? { dataDir: process.env.DATA_DIR } : {}), ...options });
// detach() closes the agent and attach() starts a new one in this process: the browser is left
// alone meanwhile, and the code V8 compiled for the agent stays (page loads: the `warm` mode).
let agent: Agent | undefined = await start();
const attached = (): Agent => {
  if (agent === undefined) throw new Error('the agent is detached');
  return agent;
};
const infoOf = (a: Agent): HostInfo => ({
  url: a.url,
  sessionId: a.sessionId,
  browserWsUrl: a.browserWsUrl,
  browserPid: a.browserPid,
  cdpConnected: a.cdpConnected,
});

serveIpc({
  info(): HostInfo {
    return infoOf(attached());
  },
  async detach(): Promise<void> {
    const current = agent;
    agent = undefined;
    await current?.close();
  },
  async attach(): Promise<HostInfo> {
    agent ??= await start();
    return infoOf(agent);
  },
  setMarkPrefix(prefix: string | null): void {
    markPrefix = prefix ?? undefined;
    marks = [];
    markTicks = 0;
    markIterations = 0;
    cpuAtFirstMark = cpuAtLastMark = undefined;
  },
  takeMarks(): TakenMarks {
    const first = cpuAtFirstMark;
    const last = cpuAtLastMark;
    const taken = {
      marks,
      cpuMicros: first && last ? last.user + last.system - first.user - first.system : 0,
      systemMicros: first && last ? last.system - first.system : 0,
      cpuSpanMs: first && last ? last.at - first.at : 0,
      ticks: markTicks,
      iterations: markIterations,
    };
    markTicks = 0;
    markIterations = 0;
    marks = [];
    cpuAtFirstMark = cpuAtLastMark = undefined;
    return taken;
  },
  mem(args: { gc?: boolean } | null): HostMemory {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (args?.gc && gc) {
      gc();
      gc();
    }
    const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
    return { rss, heapUsed, heapTotal, external, arrayBuffers };
  },
  async close(): Promise<void> {
    await agent?.close();
    // Exit normally after the answer went out, so --cpu-prof writes its profile.
    setTimeout(() => process.exit(0), 50);
  },
});

pushEvent({ event: 'ready' });
