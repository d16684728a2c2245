// What the export memory tests (HAR, Playwright trace) share: a session's store written before the
// agent starts, the agent started on it as users run it and left to settle, and its RSS sampled
// while an export is read (docs/export.md "Memory").

import { readFileSync } from 'node:fs';
import type { TelemetryEvent } from '../../../injected/schema.ts';
import { EventStore } from '../../../src/store/event-store.ts';
import { EventLog } from '../../../src/stream/event-log.ts';
import { AgentProcess, cleanEnv } from './agent-process.ts';

export const MIB = 2 ** 20;

/** What one tab's page left: the context fields of its events. */
const TAB_CONTEXT = '"session_id":"s1","target_id":"T1","target_type":"page","frame_id":"T1","url":"http://127.0.0.1/p.html"';

/**
 * `count` console events (seq 1 to `count`, `text(seq)` each, `tsStep` µs apart, of tab T1 when
 * `tab`) written straight to session `sessionId`'s store in `dataDir`: the envelopes as the agent
 * stores them, without an event log, fast enough for the load tests' 100,000.
 */
export function seedConsoleStore(
  dataDir: string,
  sessionId: string,
  options: { count: number; text: (seq: number) => string; tsStep: number; tab: boolean },
): void {
  const store = new EventStore({ dataDir, sessionId, retainBytes: 1024 * MIB, retainMs: 3_600_000 });
  const ts = Date.now() * 1000;
  const context = options.tab ? `${TAB_CONTEXT},` : '';
  for (let seq = 1; seq <= options.count; seq++) {
    const at = ts + seq * options.tsStep;
    const json = `{"seq":${seq},"event":{"ts":${at},"type":"console_log","category":"console","source":{"kind":"cdp","event":"Runtime.consoleAPICalled"},"data":{${context}"level":"log","text":${JSON.stringify(options.text(seq))}}}}`;
    store.append(seq, { ts: at, type: 'console_log', targetId: options.tab ? 'T1' : undefined, navSeq: undefined }, Buffer.from(json));
    if (seq % 10_000 === 0) store.flush();
  }
  store.close();
}

/** Writes `events` to session `sessionId`'s durable store in `dataDir`, as the agent would have; how many. */
export function seedStore(dataDir: string, sessionId: string, events: Iterable<TelemetryEvent>): number {
  const store = new EventStore({ dataDir, sessionId, retainBytes: 2 ** 31, retainMs: 72 * 3_600_000 });
  const log = new EventLog({ maxEvents: 16_384, maxBytes: 64 * MIB, archive: store });
  let n = 0;
  for (const event of events) {
    log.append(event);
    if (++n % 500 === 0) store.flush();
  }
  store.flush();
  store.close();
  return n;
}

/** The agent (`node dist/main.js`) on the store in `dataDir`, settled after start (the browser launched, the store opened). */
export async function startSeededAgent(dataDir: string, sessionId: string, token: string): Promise<{ agent: AgentProcess; url: string }> {
  const agent = AgentProcess.start(['--port', '0', '--token', token, '--session-id', sessionId], cleanEnv({ DATA_DIR: dataDir }));
  const { url } = await agent.listening();
  await new Promise((resolve) => setTimeout(resolve, 2000));
  return { agent, url };
}

export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** Runs `work` while sampling `pid`'s RSS every 20 ms: the RSS before it and the peak above that, in MiB. */
export async function measureRss<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; baselineMiB: number; peakAboveMiB: number }> {
  const baseline = rssOf(pid);
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20);
  try {
    const result = await work();
    return { result, baselineMiB: baseline / MIB, peakAboveMiB: (peak - baseline) / MIB };
  } finally {
    clearInterval(sampler);
  }
}
