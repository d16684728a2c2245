// Helper process: SSE subscribers of the agent's stream, away from the agent's process and the
// orchestrator's. Driven over IPC (bench/lib/ipc.ts): open N readers (some stalled), report their
// counts, and turn marker arrival times into latencies against the agent-side arrival times.

import { serveIpc } from '../lib/ipc.ts';
import { SseReader, type FrameMatch, type ReaderStats } from './sse-reader.ts';
import { summarize, type Summary } from '../lib/stats.ts';

export interface OpenArgs {
  url: string;
  token: string;
  readers: number;
  stalled: number;
  match?: FrameMatch;
  marks?: { base: number; count: number };
  retainedWindow?: number;
  /** Readers that only count frames (SseReader countOnly). */
  countOnly?: boolean;
}

export interface LatencyArgs {
  /** [marker number, monotonic ms when the CDP message reached the agent] */
  agentMarks: Array<[number, number]>;
}

export interface ReaderLatency {
  /** Markers the agent saw that reached this reader. */
  received: number;
  /** Markers the agent saw that never reached this reader. */
  lost: number;
  summary: Summary;
}

export interface LatencyReport {
  perReader: ReaderLatency[];
  /** Every (reader, marker) latency of the non-stalled readers together. */
  pooled: Summary;
}

let readers: SseReader[] = [];

serveIpc({
  async open(args: OpenArgs): Promise<number> {
    const opened: Array<Promise<SseReader>> = [];
    for (let i = 0; i < args.readers; i++) {
      opened.push(
        SseReader.open(args.url, args.token, { match: args.match, marks: args.marks, retainedWindow: args.retainedWindow, countOnly: args.countOnly }),
      );
    }
    for (let i = 0; i < args.stalled; i++) opened.push(SseReader.open(args.url, args.token, { stalled: true }));
    readers.push(...(await Promise.all(opened)));
    return readers.length;
  },
  stats(): ReaderStats[] {
    return readers.map((r) => r.stats());
  },
  reset(): void {
    for (const reader of readers) reader.reset();
  },
  latency(args: LatencyArgs): LatencyReport {
    const perReader: ReaderLatency[] = [];
    const pooled: number[] = [];
    for (const reader of readers) {
      if (reader.isStalled || !reader.markTimes) continue;
      const base = reader.markBase;
      const values: number[] = [];
      let lost = 0;
      for (const [n, agentAt] of args.agentMarks) {
        const at = reader.markTimes[n - base];
        if (at === undefined || Number.isNaN(at)) lost++;
        else values.push(at - agentAt);
      }
      perReader.push({ received: values.length, lost, summary: summarize(values) });
      for (const v of values) pooled.push(v);
    }
    return { perReader, pooled: summarize(pooled) };
  },
  closeAll(): void {
    for (const reader of readers) reader.close();
    readers = [];
  },
});
