// The HAR export's memory (docs/export.md "HAR", "Memory") on the agent as users run it
// (`node dist/main.js`, a child process): a store pre-filled with 5,000 requests carrying large
// headers (cookies, a long user agent hint, a CSP), then GET /browsers/{id}/har read at the pace
// of a slow client. Budget: the agent's RSS at most 50 MiB above what it was before the export,
// whatever the document's size; the document is a valid HAR with every request.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { sessionEvents } from '../../bench/sections/har.ts';
import type { AgentProcess } from './support/agent-process.ts';
import { measureRss, MIB, seedStore, startSeededAgent } from './support/export-memory.ts';

const TOKEN = 'har-memory-token';
const SESSION = 'harmemory000000000001';
const REQUESTS = 5_000;

/** A header value of about `bytes` characters, different per request (no two entries alike). */
function filler(i: number, bytes: number): string {
  let out = '';
  for (let k = 0; out.length < bytes; k++) out += `${(i * 7919 + k * 104729).toString(36)}-`;
  return out.slice(0, bytes);
}

/** The HAR bench's requests, each with about 10 KB more of request and response headers. */
function* bigHeaderEvents(): Generator<TelemetryEvent> {
  let i = 0;
  for (const event of sessionEvents(REQUESTS, 50)) {
    i++;
    if (event.type === 'network_request') {
      const data = event.data as { headers: Record<string, string> };
      data.headers = { ...data.headers, Cookie: `session=${filler(i, 3000)}; prefs=${filler(i + 1, 1000)}`, 'x-trace-context': filler(i + 2, 1000) };
    } else if (event.type === 'network_response') {
      const data = event.data as { headers: Record<string, string> };
      data.headers = {
        ...data.headers,
        'set-cookie': `session=${filler(i, 2000)}; Path=/; HttpOnly\nprefs=${filler(i + 1, 500)}; Path=/`,
        'content-security-policy': filler(i + 3, 2500),
      };
    }
    yield event;
  }
}

describe('the HAR of 5,000 requests with large headers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bta-har-memory-'));
  let agent: AgentProcess;
  const measured = { baselineMiB: 0, peakAboveMiB: 0, harMiB: 0, totalMs: 0 };
  let har: { log: { entries: Array<{ request: { headers: unknown[] } }>; pages: unknown[] } } | undefined;

  beforeAll(async () => {
    seedStore(dir, SESSION, bigHeaderEvents());
    let url: string;
    ({ agent, url } = await startSeededAgent(dir, SESSION, TOKEN));
    const rss = await measureRss(agent.pid, async () => {
      const started = performance.now();
      const response = await fetch(`${url}/browsers/${SESSION}/har`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(response.status).toBe(200);
      const chunks: Buffer[] = [];
      let sinceRest = 0;
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        chunks.push(Buffer.from(chunk));
        // A slow client: the agent has to wait for its socket rather than buffer the rest.
        sinceRest += chunk.length;
        if (sinceRest >= 4 * MIB) {
          sinceRest = 0;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      measured.totalMs = performance.now() - started;
      const text = Buffer.concat(chunks).toString('utf8');
      measured.harMiB = text.length / MIB;
      har = JSON.parse(text) as typeof har;
    });
    measured.baselineMiB = rss.baselineMiB;
    measured.peakAboveMiB = rss.peakAboveMiB;
    process.stdout.write(`har memory: ${JSON.stringify(measured)}\n`);
  }, 300_000);

  afterAll(async () => {
    await agent?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is a HAR with every request and its headers', () => {
    expect(har!.log.entries).toHaveLength(REQUESTS);
    expect(har!.log.pages).toHaveLength(50);
    expect(measured.harMiB).toBeGreaterThan(40);
    for (const entry of har!.log.entries) expect(entry.request.headers.length).toBeGreaterThanOrEqual(8);
  });

  it("keeps the agent's RSS within 50 MiB above its baseline", () => {
    expect(measured.peakAboveMiB).toBeLessThan(50);
  });
});
