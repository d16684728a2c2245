// What the export memory tests (HAR, Playwright trace) share: a session's store written before the
// agent starts, the agent started on it as users run it and left to settle, and its RSS sampled
// while an export is read (docs/export.md "Memory").

import { readFileSync } from 'node:fs';
import type { TelemetryEvent } from '../../../injected/schema.ts';
import { EventStore } from '../../../src/store/event-store.ts';
import { EventLog } from '../../../src/stream/event-log.ts';
import { AgentProcess, cleanEnv } from './agent-process.ts';

export const MIB = 2 ** 20;

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
