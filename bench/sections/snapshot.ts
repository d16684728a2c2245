// Section 10, DOM snapshots (docs/events.md "Snapshots"): what a snapshot costs, on real headless
// Chromium with the agent CLI.
//
// - Time in the page: a page of 1,500 and one of 15,000 elements, each clicked `clicks` times by
//   a computer batch (one click per batch); every click takes a snapshot before and after it. The
//   page script's own collection time of each snapshot (`collection_ms` of its main frame), p50 and
//   p99.
// - Bytes per action: on the 1,500-element page, where each click changes one line of text, the
//   stored envelope bytes of the snapshots after the first, per click.
// - Page load: the typical page loaded in blocks with the snapshot category on and off (switched
//   with PATCH between blocks, one agent for every block), the arms alternating every round. The
//   p50 ratio on/off: snapshots are taken around actions and at each settled navigation only.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { BenchBrowser } from '../clients/chromium.ts';
import { AgentCli, TOKEN } from '../clients/consumers.ts';
import type { BenchContext } from '../lib/context.ts';
import { featureLoads, type FeatureLoads } from '../lib/feature-loads.ts';
import { sleep } from '../lib/processes.ts';
import { median, quantile } from '../lib/stats.ts';

export interface SnapshotOptions {
  /** Clicks per page size. */
  clicks: number;
  rounds: number;
  loadsPerBlock: number;
  warmupLoads: number;
}

export interface SnapshotPageResult {
  elements: number;
  /** Per snapshot, the page script's collection time of the main frame. */
  collectionMs: number[];
  p50Ms: number;
  p99Ms: number;
  /** Envelope bytes of each snapshot, in order. */
  bytes: number[];
  /** Bytes stored per click after the first snapshot. */
  bytesPerAction: number;
}

export interface SnapshotResult {
  options: SnapshotOptions;
  pages: SnapshotPageResult[];
  load: FeatureLoads;
}

const SIZES = [1500, 15_000] as const;
const auth = { authorization: `Bearer ${TOKEN}` };
const json = { ...auth, 'content-type': 'application/json' };

/** A page of about `elements` elements (rows of a list, a few attributes and text each) and a fixed button that changes one row. */
function nodePage(elements: number): string {
  const rows = Math.max(1, Math.floor((elements - 20) / 3));
  const items: string[] = [];
  for (let i = 0; i < rows; i++) items.push(`<li class="row r${i % 7}" data-i="${i}"><span class="k">item ${i}</span><em>${i * 7}</em></li>`);
  return `<!doctype html><html><head><title>${elements} elements</title><style>
.row { padding: 1px 4px; } .r0 { color: #333; } .k { font-weight: 600; }
#go { position: fixed; left: 0; top: 0; width: 120px; height: 40px; z-index: 1; }
</style></head><body style="margin: 0">
<button id="go" onclick="const r = document.querySelectorAll('li')[this.dataset.n = (Number(this.dataset.n || 0) + 1) % ${rows}]; r.lastChild.textContent = 'changed ' + this.dataset.n">change one row</button>
<ul style="margin-top: 48px">${items.join('')}</ul></body></html>`;
}

async function servePages(): Promise<{ url: (elements: number) => string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const elements = Number(/^\/n\/(\d+)$/.exec(req.url ?? '')?.[1]);
    if (!Number.isSafeInteger(elements)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(nodePage(elements));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: (elements) => `http://127.0.0.1:${port}/n/${elements}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

async function setSnapshots(agent: AgentCli, enabled: boolean): Promise<void> {
  const response = await fetch(`${agent.url}/browsers/${agent.sessionId}`, {
    method: 'PATCH',
    headers: json,
    body: JSON.stringify({ telemetry: { browser: { snapshot: { enabled } } } }),
  });
  if (response.status !== 200) throw new Error(`PATCH answered ${response.status}: ${await response.text()}`);
}

interface StoredSnapshot {
  seq: number;
  bytes: number;
  collectionMs: number;
  reason: string;
}

async function storedSnapshots(agent: AgentCli): Promise<StoredSnapshot[]> {
  const out: StoredSnapshot[] = [];
  let offset = 1;
  for (;;) {
    const response = await fetch(`${agent.url}/browsers/${agent.sessionId}/telemetry/events?type=page_snapshot&since=1h&limit=100&offset=${offset}`, {
      headers: auth,
    });
    if (response.status !== 200) throw new Error(`history answered ${response.status}: ${await response.text()}`);
    const text = await response.text();
    const envelopes = JSON.parse(text) as Array<{ seq: number; event: { data: { reason: string; frames: Array<{ collection_ms: number }> } } }>;
    for (const envelope of envelopes)
      out.push({
        seq: envelope.seq,
        // The envelope as stored: its JSON.
        bytes: Buffer.byteLength(JSON.stringify(envelope)),
        collectionMs: envelope.event.data.frames[0]?.collection_ms ?? 0,
        reason: envelope.event.data.reason,
      });
    if (response.headers.get('x-has-more') !== 'true') return out;
    offset = Number(response.headers.get('x-next-offset'));
  }
}

async function clickOnce(agent: AgentCli): Promise<void> {
  const response = await fetch(`${agent.url}/browsers/${agent.sessionId}/computer/batch`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ actions: [{ type: 'click_mouse', click_mouse: { x: 60, y: 20 } }] }),
  });
  if (response.status !== 204) throw new Error(`batch answered ${response.status}: ${await response.text()}`);
}

async function snapshotPage(ctx: BenchContext, url: string, elements: number, clicks: number): Promise<SnapshotPageResult> {
  const browser = await BenchBrowser.launch(url);
  try {
    const agent = await AgentCli.start(browser.httpUrl);
    try {
      // The page has loaded and settled; the agent's start-up is not a snapshot's cost.
      await sleep(2000);
      for (let i = 0; i < clicks; i++) await clickOnce(agent);
      // The last click's after-snapshot.
      let snapshots: StoredSnapshot[] = [];
      for (let tries = 0; tries < 50; tries++) {
        snapshots = (await storedSnapshots(agent)).filter((s) => s.reason === 'action');
        if (snapshots.length >= clicks + 1) break;
        await sleep(200);
      }
      const collectionMs = snapshots.map((s) => s.collectionMs);
      const bytes = snapshots.map((s) => s.bytes);
      const later = bytes.slice(1).reduce((sum, b) => sum + b, 0);
      const result: SnapshotPageResult = {
        elements,
        collectionMs,
        p50Ms: quantile(collectionMs, 0.5),
        p99Ms: quantile(collectionMs, 0.99),
        bytes,
        bytesPerAction: later / Math.max(1, clicks),
      };
      ctx.log(
        `[snapshot] ${elements} elements: ${snapshots.length} snapshots, in the page p50 ${result.p50Ms.toFixed(2)} ms p99 ${result.p99Ms.toFixed(2)} ms; first ${((bytes[0] ?? 0) / 1024).toFixed(1)} KB, then ${(result.bytesPerAction / 1024).toFixed(2)} KB per click`,
      );
      return result;
    } finally {
      await agent.stop();
    }
  } finally {
    await browser.close();
  }
}

async function pageLoads(ctx: BenchContext, options: SnapshotOptions): Promise<FeatureLoads> {
  const load = await featureLoads(ctx, options, async (agent, on) => {
    await setSnapshots(agent, on);
    return undefined;
  });
  ctx.log(
    `[snapshot] typical page load p50 ${median(load.offMs).toFixed(0)} ms with snapshots off, ${median(load.onMs).toFixed(0)} ms on (×${load.p50Ratio.toFixed(3)})`,
  );
  return load;
}

export async function runSnapshot(ctx: BenchContext, options: SnapshotOptions): Promise<SnapshotResult> {
  const server = await servePages();
  try {
    const pages: SnapshotPageResult[] = [];
    for (const elements of SIZES) pages.push(await snapshotPage(ctx, server.url(elements), elements, options.clicks));
    const load = await pageLoads(ctx, options);
    return { options, pages, load };
  } finally {
    await server.close();
  }
}

const f = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : '–');

export function renderSnapshot(result: SnapshotResult): string {
  const rows = result.pages.map(
    (p) =>
      `| ${p.elements} | ${p.collectionMs.length} | ${f(p.p50Ms, 2)} | ${f(p.p99Ms, 2)} | ${f((p.bytes[0] ?? NaN) / 1024, 1)} | ${f(p.bytesPerAction / 1024, 2)} |`,
  );
  return [
    '### DOM snapshots',
    '',
    '| Elements | Snapshots | In the page p50 (ms) | p99 (ms) | First (KB) | Per click after (KB) |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    `Typical page load p50: ${f(median(result.load.offMs), 0)} ms off, ${f(median(result.load.onMs), 0)} ms on (×${f(result.load.p50Ratio, 3)}, 95% CI ${f(result.load.p50Ci[0], 3)}–${f(result.load.p50Ci[1], 3)}).`,
    '',
  ].join('\n');
}

export function snapshotBudget(result: SnapshotResult): Array<{ line: string; limit: string; measured: string; pass: boolean }> {
  const page = (elements: number) => result.pages.find((p) => p.elements === elements);
  const small = page(1500);
  const large = page(15_000);
  return [
    {
      line: 'snapshot: time in the page p50, 1,500 elements',
      limit: '≤ 5 ms',
      measured: `${f(small?.p50Ms ?? NaN, 2)} ms (p99 ${f(small?.p99Ms ?? NaN, 2)})`,
      pass: (small?.p50Ms ?? Infinity) <= 5,
    },
    {
      line: 'snapshot: time in the page p50, 15,000 elements',
      limit: '≤ 40 ms',
      measured: `${f(large?.p50Ms ?? NaN, 2)} ms (p99 ${f(large?.p99Ms ?? NaN, 2)})`,
      pass: (large?.p50Ms ?? Infinity) <= 40,
    },
    {
      line: 'snapshot: bytes stored per action after the first, a page that changes a little',
      limit: '≤ 20 KB',
      measured: `${f((small?.bytesPerAction ?? NaN) / 1024, 2)} KB`,
      pass: (small?.bytesPerAction ?? Infinity) <= 20 * 1024,
    },
    {
      line: 'snapshot: typical page load p50, category on / off (interleaved)',
      limit: '≤ 1.02',
      measured: f(result.load.p50Ratio, 3),
      pass: result.load.p50Ratio <= 1.02,
    },
  ];
}
