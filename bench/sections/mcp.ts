// Section "mcp": what the MCP tools cost the agent (docs/mcp.md "Measured"), on an hour of a
// session (bench/lib/hour-session.ts) in the agent's own log and durable store, called through
// the MCP SDK's client and server (in-memory transport). Per call: the process's CPU, the wall
// time, the longest the event loop was held at once (what the browser's CDP traffic and other
// clients would wait: the tools read page by page and yield between pages), and the bytes a
// model receives. No browser is involved.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { agentSource, createMcpServer, ToolError } from '../../src/mcp/index.ts';
import { EventStore } from '../../src/store/event-store.ts';
import { EventLog } from '../../src/stream/event-log.ts';
import { HistoryReader } from '../../src/stream/history.ts';
import type { BenchContext } from '../lib/context.ts';
import { hourSession } from '../lib/hour-session.ts';
import { median } from '../lib/stats.ts';

export interface McpCallResult {
  call: string;
  /** Medians over the repetitions. */
  cpuMs: number;
  wallMs: number;
  /** The longest single stretch the event loop was busy during the call (event-loop delay max). */
  maxBlockMs: number;
  textBytes: number;
}

export interface McpResult {
  events: number;
  storedMiB: number;
  calls: McpCallResult[];
}

const CALLS: Array<{ call: string; tool: string; args: Record<string, unknown> }> = [
  { call: 'what_went_wrong (whole hour)', tool: 'what_went_wrong', args: {} },
  { call: 'get_events, first page', tool: 'get_events', args: {} },
  { call: 'get_events category=network, first page', tool: 'get_events', args: { category: 'network' } },
  { call: 'get_events text="widget" (rare), first page', tool: 'get_events', args: { text: 'recommendation widget' } },
  { call: 'get_request by request_id and seq, with body', tool: 'get_request', args: {} },
];

export async function runMcp(ctx: BenchContext, options: { reps: number }): Promise<McpResult> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-mcp-'));
  const store = new EventStore({ dataDir: dir, sessionId: 'hour', retainBytes: 8 * 1024 ** 3, retainMs: 72 * 3_600_000 });
  try {
    const log = new EventLog({ maxEvents: 10_000, maxBytes: 64 * 1024 * 1024, archive: store });
    const events = hourSession({ startMs: Date.now() - 3_700_000 });
    for (const event of events) log.append(event);
    store.flush();
    ctx.log(`mcp: ${events.length} events stored`);
    const source = agentSource(
      { sessionId: 'hour', createdAt: new Date(), isTerminated: () => false, history: new HistoryReader(log, store), latestSeq: () => log.latestSeq },
      { baseUrl: 'http://127.0.0.1:10001', addStep: () => Promise.reject(new ToolError('no steps in the bench')) },
    );
    const server = createMcpServer(source, { name: 'bench', version: '0' });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'bench', version: '0' });
    await client.connect(clientSide);
    // A request of the hour's flaky API, for get_request.
    const found = (await client.callTool({ name: 'get_events', arguments: { type: 'network_response', text: 'poll=1', limit: 1 } })) as CallToolResult;
    const example = (JSON.parse((found.content[0] as { text: string }).text) as { events: Array<{ request_id: string; seq: number }> }).events[0]!;
    CALLS[4]!.args = { request_id: example.request_id, seq: example.seq, include_body: true };

    const calls: McpCallResult[] = [];
    for (const { call, tool, args } of CALLS) {
      const cpu: number[] = [];
      const wall: number[] = [];
      const block: number[] = [];
      let textBytes = 0;
      for (let rep = 0; rep < options.reps; rep++) {
        const delay = monitorEventLoopDelay({ resolution: 1 });
        delay.enable();
        const cpuStart = process.cpuUsage();
        const wallStart = performance.now();
        const result = (await client.callTool({ name: tool, arguments: args })) as CallToolResult;
        wall.push(performance.now() - wallStart);
        const used = process.cpuUsage(cpuStart);
        cpu.push((used.user + used.system) / 1000);
        delay.disable();
        block.push(delay.max / 1e6);
        if (result.isError) throw new Error(`${tool} answered an error: ${JSON.stringify(result.content)}`);
        textBytes = result.content.reduce((sum, item) => sum + (item.type === 'text' ? Buffer.byteLength(item.text, 'utf8') : 0), 0);
      }
      calls.push({ call, cpuMs: median(cpu), wallMs: median(wall), maxBlockMs: median(block), textBytes });
      ctx.log(`mcp: ${call}: ${median(cpu).toFixed(1)} ms CPU, longest block ${median(block).toFixed(1)} ms, ${textBytes} B`);
    }
    await client.close();
    return { events: events.length, storedMiB: store.stats().bytes / 2 ** 20, calls };
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
