// The trace export's limits (docs/export.md "Playwright trace", "Limits") on the agent as users run
// it (`node dist/main.js`, a child process): a store pre-filled with a 1-hour session of 100k
// events (5k requests with their bodies, console lines, clicks, keys, scrolls and a screenshot
// every 10 s), then GET /browsers/{id}/trace. Budget: the response starts within 1 s, the whole
// archive within 10 s, the agent's RSS at most 50 MB (50 000 000 bytes) above what it was before
// the export; the archive opens in `playwright trace open` with every request.

import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { sessionEvents } from '../../bench/sections/har.ts';
import type { AgentProcess } from './support/agent-process.ts';
import { measureRss, MIB, seedStore, startSeededAgent } from './support/export-memory.ts';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../node_modules/playwright-core/cli.js', import.meta.url));
const TOKEN = 'trace-limits-token';
const SESSION = 'tracelimits0000000001';
const EVENTS = 100_000;
const REQUESTS = 5_000;
const HOUR_US = 3_600_000_000;
const SCREENSHOT_EVERY_US = 10_000_000;
/** The RSS budget above the baseline: 50 MB, read as 10^6 bytes (the stricter reading). */
const RSS_BUDGET_BYTES = 50_000_000;

/** A PNG's signature and IHDR (1280×720), padded to the size of a real screenshot. */
function screenshot(bytes: number): string {
  const head = Buffer.from('89504e470d0a1a0a0000000d4948445200000500000002d00802000000', 'hex');
  return Buffer.concat([head, Buffer.alloc(bytes - head.length, 7)]).toString('base64');
}

/** The session: the HAR bench's 5k requests, spread over an hour among filler events, in seq order. */
function* hourOfEvents(): Generator<TelemetryEvent> {
  const requests = [...sessionEvents(REQUESTS, 50)];
  const t0 = Date.now() * 1000 - HOUR_US;
  const step = HOUR_US / EVENTS;
  const png = screenshot(60 * 1024);
  const ctx = {
    session_id: 'S1',
    target_id: 'TAB0000000000000000000000000000001',
    target_type: 'page',
    frame_id: 'TAB0000000000000000000000000000001',
    url: 'http://127.0.0.1:8080/app/page.html',
    nav_seq: 1,
  };
  let next = 0;
  let nextShot = t0;
  const fillerEvery = Math.floor(EVENTS / requests.length);
  for (let i = 0; i < EVENTS; i++) {
    const ts = Math.round(t0 + i * step);
    if (ts >= nextShot) {
      nextShot += SCREENSHOT_EVERY_US;
      yield { ts, type: 'monitor_screenshot', source: { kind: 'agent' }, data: { png } };
      continue;
    }
    if (i % fillerEvery === 0 && next < requests.length) {
      const event = requests[next++]!;
      yield { ...event, ts };
      continue;
    }
    const kind = i % 4;
    if (kind === 0)
      yield {
        ts,
        type: 'console_log',
        source: { kind: 'cdp' },
        data: { ...ctx, level: 'log', text: `step ${i} of the agent's task: reading the list`, args: [`step ${i}`] },
      };
    else if (kind === 1)
      yield {
        ts,
        type: 'interaction_click',
        source: { kind: 'agent' },
        data: { ...ctx, x: i % 1280, y: i % 720, selector: `#item-${i % 50}`, tag: 'BUTTON', text: 'Open' },
      };
    else if (kind === 2) yield { ts, type: 'interaction_key', source: { kind: 'agent' }, data: { ...ctx, key: 'a', selector: '#search', tag: 'INPUT' } };
    else
      yield {
        ts,
        type: 'interaction_scroll_settled',
        source: { kind: 'agent' },
        data: { ...ctx, from_x: 0, from_y: i % 900, to_x: 0, to_y: (i % 900) + 300, target_selector: 'html' },
      };
  }
  while (next < requests.length) yield { ...requests[next++]!, ts: t0 + HOUR_US };
}

describe('the trace of a 1-hour session of 100k events and 5k requests', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bta-trace-limits-'));
  let agent: AgentProcess;
  let url: string;
  const measured = { firstByteMs: 0, totalMs: 0, baselineMiB: 0, peakAboveMiB: 0, zipMiB: 0, events: 0 };
  let open = '';

  beforeAll(async () => {
    measured.events = seedStore(dir, SESSION, hourOfEvents());
    ({ agent, url } = await startSeededAgent(dir, SESSION, TOKEN));
    const rss = await measureRss(agent.pid, async () => {
      const started = performance.now();
      const response = await fetch(`${url}/browsers/${SESSION}/trace`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(response.status).toBe(200);
      const chunks: Buffer[] = [];
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        if (chunks.length === 0) measured.firstByteMs = performance.now() - started;
        chunks.push(Buffer.from(chunk));
      }
      measured.totalMs = performance.now() - started;
      const zip = Buffer.concat(chunks);
      measured.zipMiB = zip.length / MIB;
      writeFileSync(join(dir, 'hour.trace.zip'), zip);
    });
    measured.baselineMiB = rss.baselineMiB;
    measured.peakAboveMiB = rss.peakAboveMiB;
    process.stdout.write(`trace limits: ${JSON.stringify(measured)}\n`);
    open = (await run(process.execPath, [CLI, 'trace', 'open', join(dir, 'hour.trace.zip')], { cwd: dir, maxBuffer: 64 * MIB })).stdout;
  }, 300_000);

  afterAll(async () => {
    await agent?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts the response within 1 s', () => {
    expect(measured.firstByteMs).toBeLessThan(1000);
  });

  it('sends the whole archive within 10 s', () => {
    expect(measured.totalMs).toBeLessThan(10_000);
  });

  it("keeps the agent's RSS within 50 MB above its baseline", () => {
    expect(measured.peakAboveMiB * MIB).toBeLessThan(RSS_BUDGET_BYTES);
  });

  it('opens in playwright trace with every request', () => {
    expect(open).toMatch(new RegExp(`Network:\\s+${REQUESTS} requests`));
    expect(open).toMatch(/Actions:\s+[1-9]\d{4}\b/);
  });
});
