// The bytes a model receives from the MCP tools for a realistic hour of a session (docs/mcp.md
// "Measured"): the hour (bench/lib/hour-session.ts) goes through the agent's own log and durable
// store, and the MCP SDK's client calls what_went_wrong and the first page of get_events through
// the real server (in-memory transport). Each text answer must stay within 8 KB.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hourSession } from '../../bench/lib/hour-session.ts';
import { agentSource, createMcpServer, ToolError } from '../../src/mcp/index.ts';
import { EventStore } from '../../src/store/event-store.ts';
import { EventLog } from '../../src/stream/event-log.ts';
import { HistoryReader } from '../../src/stream/history.ts';

const BUDGET = 8192;

/** UTF-8 bytes of the text contents (what the model reads) and of the whole result (JSON-RPC). */
function sizes(result: CallToolResult): { text: number; links: number; result: number } {
  let text = 0;
  let links = 0;
  for (const item of result.content) {
    if (item.type === 'text') text += Buffer.byteLength(item.text, 'utf8');
    else links += Buffer.byteLength(JSON.stringify(item), 'utf8');
  }
  return { text, links, result: Buffer.byteLength(JSON.stringify(result), 'utf8') };
}

describe('compactness on an hour of a session', () => {
  let dir: string;
  let store: EventStore;
  let client: Client;
  let count = 0;
  let storedBytes = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bta-mcp-hour-'));
    store = new EventStore({ dataDir: dir, sessionId: 'hour', retainBytes: 4 * 1024 ** 3, retainMs: 72 * 3_600_000 });
    const log = new EventLog({ maxEvents: 10_000, maxBytes: 64 * 1024 * 1024, archive: store });
    for (const event of hourSession({ startMs: Date.now() - 3_700_000 })) {
      log.append(event);
      count++;
    }
    store.flush();
    storedBytes = store.stats().bytes;
    const source = agentSource(
      { sessionId: 'hour', createdAt: new Date(), isTerminated: () => false, history: new HistoryReader(log, store), latestSeq: () => log.latestSeq },
      { baseUrl: 'http://127.0.0.1:10001', addStep: () => Promise.reject(new ToolError('no steps here')) },
    );
    const server = createMcpServer(source, { name: 'test', version: '0' });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    client = new Client({ name: 'measure', version: '1' });
    await client.connect(clientSide);
  }, 120_000);

  afterAll(async () => {
    await client?.close();
    store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is an hour of tens of thousands of events', () => {
    expect(count).toBeGreaterThan(20_000);
    expect(storedBytes).toBeGreaterThan(50 * 1024 * 1024);
  });

  it("answers what_went_wrong in at most 8 KB, every finding's kind present", async () => {
    const result = (await client.callTool({ name: 'what_went_wrong', arguments: {} })) as CallToolResult;
    const measured = sizes(result);
    console.log(
      `what_went_wrong: ${count} events (${(storedBytes / 1024 / 1024).toFixed(1)} MiB stored): text ${measured.text} B, links ${measured.links} B, JSON-RPC result ${measured.result} B`,
    );
    expect(measured.text).toBeLessThanOrEqual(BUDGET);
    const answer = JSON.parse((result.content[0] as { text: string }).text) as Record<string, unknown>;
    expect(Object.keys(answer)).toEqual(
      expect.arrayContaining(['failed_requests', 'console_errors', 'crashes', 'hangs', 'dialogs', 'downloads', 'telemetry_gaps', 'failed_actions', 'actions']),
    );
    expect(answer.read).toMatchObject({ complete: true });
  });

  it('fits what_went_wrong into the smallest budget, keeping the whole summary', async () => {
    const result = (await client.callTool({ name: 'what_went_wrong', arguments: { budget_bytes: 2048 } })) as CallToolResult;
    expect(sizes(result).text).toBeLessThanOrEqual(2048);
    const answer = JSON.parse((result.content[0] as { text: string }).text) as { summary: string };
    expect(answer.summary).toMatch(/^375 failed requests \(2 origins\), 96 console errors \(2 kinds\), 1 crash, 2 hangs/);
  });

  it('answers the first page of get_events in at most 8 KB', async () => {
    const result = (await client.callTool({ name: 'get_events', arguments: {} })) as CallToolResult;
    const measured = sizes(result);
    const answer = JSON.parse((result.content[0] as { text: string }).text) as { events: unknown[]; has_more: boolean };
    console.log(`get_events, first page: ${answer.events.length} events, text ${measured.text} B, JSON-RPC result ${measured.result} B`);
    expect(measured.text).toBeLessThanOrEqual(BUDGET);
    expect(answer.has_more).toBe(true);
    expect(answer.events.length).toBeGreaterThan(10);
  });

  it('answers the first page of network events, the largest ones, in at most 8 KB', async () => {
    const result = (await client.callTool({ name: 'get_events', arguments: { category: 'network' } })) as CallToolResult;
    const measured = sizes(result);
    const answer = JSON.parse((result.content[0] as { text: string }).text) as { events: unknown[] };
    console.log(`get_events category=network, first page: ${answer.events.length} events, text ${measured.text} B`);
    expect(measured.text).toBeLessThanOrEqual(BUDGET);
  });
});
