// page_snapshot on real Chromium (docs/events.md "Snapshots", docs/page-script.md "Snapshots"):
// who gets the events (only the readers that name the category), what successive snapshots of a
// page that changes a little cost (a reference to the unchanged rest), which fields are masked,
// and, with the category off, that the page script takes none (its own counter says so) while the
// trace still opens in Playwright's command line.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope, PageSnapshotData, TelemetryEvent } from '../../injected/schema.ts';
import { SnapshotTrees } from '../../injected/snapshot-tree.ts';
import { centerOf, load, postBatch } from './support/computer-api.ts';
import { SseClient, startRig, TOKEN, type Tab, type TestRig } from './support/harness.ts';
import { openTraceViewer, readTraceListings } from './support/playwright-trace.ts';

/** A page of about 1,500 nodes; the button changes one line of it. */
const LIST_PAGE = `<!doctype html><html><head><title>list</title><style>li { margin: 2px }</style></head><body>
<h1 id="status">clicked 0 times</h1>
<button id="more" style="width:160px;height:40px" onclick="document.getElementById('status').textContent = 'clicked ' + (++window.clicks) + ' times'">more</button>
<form><input id="card" autocomplete="cc-number"><input id="code" data-bta-mask><input id="plain"></form>
<ul>${Array.from({ length: 500 }, (_, i) => `<li class="row">row ${i}</li>`).join('')}</ul>
<script>window.clicks = 0; window.fixtureReady = true;</script></body></html>`;

/** Evaluates `expression` in the agent's page script world of the tab's main frame. */
async function inScriptWorld(rig: TestRig, tab: Tab, expression: string): Promise<unknown> {
  const contexts: Array<{ id: number; name: string; auxData?: { frameId?: string } }> = [];
  const off = rig.driver.onCdpEvent('Runtime.executionContextCreated', tab.sessionId, (p: { context: (typeof contexts)[number] }) => contexts.push(p.context));
  await tab.send('Runtime.enable');
  off();
  await tab.send('Runtime.disable');
  const world = contexts.find((c) => c.name.startsWith('browser-telemetry-agent-') && c.auxData?.frameId === tab.targetId);
  if (world === undefined) throw new Error(`no page script world among ${contexts.map((c) => c.name).join(', ')}`);
  const { result, exceptionDetails } = await tab.send('Runtime.evaluate', { expression, contextId: world.id, returnByValue: true });
  if (exceptionDetails !== undefined) throw new Error(JSON.stringify(exceptionDetails));
  return result.value;
}

async function history(rig: TestRig, query: string): Promise<Envelope[]> {
  const res = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/telemetry/events?since=10m&limit=1000&${query}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  return (await res.json()) as Envelope[];
}

/** Runs a batch; resolves with its computer actions once the stream has them all. */
async function batch(rig: TestRig, actions: unknown[]): Promise<Array<TelemetryEvent<'computer_action'>>> {
  const response = await postBatch(rig, actions);
  expect(response.status).toBe(204);
  const requestId = response.headers.get('x-request-id');
  const ofBatch = () => rig.stream.ofType('computer_action').filter((e) => e.data!.request_id === requestId);
  await rig.stream.waitFor(() => ofBatch().length === actions.length, `the batch's ${actions.length} actions`);
  return ofBatch();
}

async function clickMore(rig: TestRig, tab: Tab, times: number): Promise<Array<TelemetryEvent<'computer_action'>>> {
  const point = await centerOf(tab, '#more');
  return batch(
    rig,
    Array.from({ length: times }, () => ({ type: 'click_mouse', click_mouse: point })),
  );
}

/** The snapshot that shows `action` after it. */
function afterOf(stream: SseClient, action: TelemetryEvent<'computer_action'>): Promise<TelemetryEvent<'page_snapshot'>> {
  return stream.waitForEvent('page_snapshot', (e) => e.data!.actions?.some((a) => a.action_id === action.data!.action_id && a.phase === 'after') === true);
}

describe('page_snapshot', () => {
  let rig: TestRig;
  let snapshotStream: SseClient;
  let tab: Tab;
  let snapshots: Array<TelemetryEvent<'page_snapshot'>>;

  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
    snapshotStream = await SseClient.open(`${rig.streamUrl}?replay=all&category=snapshot`, TOKEN);
    const url = rig.server.route('/list.html', LIST_PAGE);
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await load(tab, url);
    await rig.stream.waitForEvent('page_navigation_settled', (e) => e.data!.target_id === tab.targetId);
    await clickMore(rig, tab, 3);
    const last = rig.stream.ofType('computer_action').at(-1)!;
    await snapshotStream.waitForEvent(
      'page_snapshot',
      (e) => e.data!.actions?.some((a) => a.action_id === last.data!.action_id && a.phase === 'after') === true,
    );
    snapshots = snapshotStream.ofType('page_snapshot').filter((e) => e.data!.target_id === tab.targetId);
  }, 60_000);

  afterAll(async () => {
    snapshotStream?.close();
    await rig?.close();
  });

  it('goes to a stream that names its category, not to one that names none', () => {
    expect(snapshots.length).toBeGreaterThanOrEqual(4);
    expect(rig.stream.ofType('page_snapshot')).toEqual([]);
  });

  it('is left out of a history read that names no category or type, and in one that names its type', async () => {
    expect((await history(rig, '')).filter((e) => e.event.type === 'page_snapshot')).toEqual([]);
    expect((await history(rig, 'type=page_snapshot')).length).toBe(snapshots.length);
  });

  it('takes one snapshot at the settled navigation, and one before and after each click', () => {
    const data = snapshots.map((e) => e.data!);
    expect(data[0]!.reason).toBe('navigation_settled');
    const clicks = rig.stream.ofType('computer_action').map((e) => e.data!.action_id);
    expect(clicks).toHaveLength(3);
    for (const id of clicks) {
      expect(data.filter((d) => d.actions?.some((a) => a.action_id === id && a.phase === 'before'))).toHaveLength(1);
      expect(data.filter((d) => d.actions?.some((a) => a.action_id === id && a.phase === 'after'))).toHaveLength(1);
    }
  });

  it('holds the point each click hit', () => {
    const before = snapshots.flatMap((e) => e.data!.actions ?? []).find((a) => a.phase === 'before')!;
    expect(typeof before.x).toBe('number');
    expect(typeof before.y).toBe('number');
  });

  it('refers to the previous snapshot for what did not change: a small change costs a small fraction of the page', () => {
    const sizes = snapshots.map((e) => JSON.stringify(e.data).length);
    const main = (e: TelemetryEvent<'page_snapshot'>) => e.data!.frames[0]!;
    expect(main(snapshots[0]!).base).toBeUndefined();
    for (const e of snapshots.slice(1)) expect(main(e).base).toBe(main(e).number - 1);
    for (const size of sizes.slice(1)) expect(size).toBeLessThan(sizes[0]! / 10);
  });

  it('rebuilds, from the references, the page as it was at each snapshot', () => {
    const trees = new SnapshotTrees();
    const texts = snapshots.map((e) => {
      const frame = e.data!.frames[0]!;
      const root = trees.add(frame)!;
      expect(root.size).toBe(frame.nodes);
      return JSON.stringify(root).match(/clicked \d+ times/)![0];
    });
    expect(texts.at(-1)).toBe('clicked 3 times');
    expect(texts[0]).toBe('clicked 0 times');
  });

  it('masks the fields of the documented selector list, and keeps the others', async () => {
    let typed: Array<TelemetryEvent<'computer_action'>> = [];
    for (const [selector, text] of [
      ['#card', '4111111111111111'],
      ['#code', '987654'],
      ['#plain', 'plain-visible'],
    ] as const) {
      typed = await batch(rig, [
        { type: 'click_mouse', click_mouse: await centerOf(tab, selector) },
        { type: 'type_text', type_text: { text } },
      ]);
    }
    const after = await afterOf(snapshotStream, typed.at(-1)!);
    const all = JSON.stringify(snapshotStream.ofType('page_snapshot').map((e) => e.data));
    expect(all).not.toContain('4111111111111111');
    expect(all).not.toContain('987654');
    const trees = new SnapshotTrees();
    let root;
    for (const e of snapshotStream.ofType('page_snapshot').filter((s) => s.data!.target_id === tab.targetId)) {
      root = trees.add(e.data!.frames[0]!);
      if (e === after) break;
    }
    expect(JSON.stringify(root)).toContain('"__playwright_value_":"plain-visible"');
  });

  it('counts the snapshots the page script took in its world', async () => {
    const stats = (await inScriptWorld(rig, tab, 'globalThis.__browserTelemetryAgent.snapshotStats()')) as { snapshots: number };
    expect(stats.snapshots).toBeGreaterThanOrEqual(snapshots.length);
  });
});

describe('page_snapshot with the snapshot category off', () => {
  let rig: TestRig;
  let tab: Tab;
  const dir = mkdtempSync(join(tmpdir(), 'bta-snapshot-off-'));

  beforeAll(async () => {
    rig = await startRig({ screenshots: false, telemetry: { browser: { snapshot: { enabled: false } } } });
    const url = rig.server.route('/list.html', LIST_PAGE);
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await load(tab, url);
    await rig.stream.waitForEvent('page_navigation_settled', (e) => e.data!.target_id === tab.targetId);
    await clickMore(rig, tab, 2);
  }, 60_000);

  afterAll(async () => {
    await rig?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes no snapshot in the page: the page script counts none', async () => {
    expect(await inScriptWorld(rig, tab, 'globalThis.__browserTelemetryAgent.snapshotStats().snapshots')).toBe(0);
    expect(await history(rig, 'type=page_snapshot')).toEqual([]);
  });

  it('still exports a trace that opens, with the clicks', async () => {
    const res = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/trace`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const zip = join(dir, 'off.trace.zip');
    writeFileSync(zip, Buffer.from(await res.arrayBuffer()));
    const cli = await readTraceListings(dir, zip);
    expect(cli.open).toMatch(/Browser:\s+chromium/);
    expect(cli.actions).toContain('click_mouse');
    expect(cli.actions).not.toContain('frame-snapshot');
  });

  it("opens in Playwright's viewer (show-trace), with the batch", async () => {
    const res = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/trace`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const zip = join(dir, 'off-viewer.trace.zip');
    writeFileSync(zip, Buffer.from(await res.arrayBuffer()));
    const viewer = await openTraceViewer(zip, dir);
    try {
      const batches = viewer.page.locator('.actions-tree-view .action-title-method', { hasText: 'computerBatch' });
      await batches.first().waitFor({ timeout: 20_000 });
      expect(await batches.count()).toBe(1);
    } finally {
      await viewer.browser.close();
      viewer.process.kill();
    }
  }, 60_000);

  it('starts taking them once turned on (PATCH), with no reconnect', async () => {
    const patch = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ telemetry: { browser: { snapshot: { enabled: true } } } }),
    });
    expect(patch.status).toBe(200);
    await clickMore(rig, tab, 1);
    const stream = await SseClient.open(`${rig.streamUrl}?replay=all&category=snapshot`, TOKEN);
    try {
      const snapshot = await stream.waitForEvent('page_snapshot', (e) => (e.data as PageSnapshotData).target_id === tab.targetId);
      expect(snapshot.data!.frames[0]!.base).toBeUndefined();
    } finally {
      stream.close();
    }
  });
});
