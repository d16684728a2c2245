// The viewer's responsiveness under a flood (docs/viewer.md "Responsiveness"): an agent watching a
// page that logs RATE console messages per second, the viewer open in a second headless Chromium,
// and the viewer page's main thread observed for DURATION seconds: long tasks (PerformanceObserver
// 'longtask', every task over 50 ms), the gaps between animation frames, and how far the viewer
// trails the agent's newest seq at the end.
//
//   node bench/viewer.mjs [--rate 1000] [--seconds 30] [--hide-console]
//
// --hide-console unticks Console in the viewer first, so the agent filters the stream (the way
// to watch a page that floods the console).

import CDP from 'chrome-remote-interface';
import type { EventEmitter } from 'node:events';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { startAgent } from '../../src/agent.ts';
import { ChromiumProcess } from '../../src/browser/chromium-launcher.ts';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '30' },
    'hide-console': { type: 'boolean', default: false },
    /** Write a CPU profile of the viewer page over the measurement (Chrome DevTools format). */
    profile: { type: 'string' },
    /** Trace the viewer's main thread over the measurement and print where its time went. */
    trace: { type: 'boolean', default: false },
  },
});
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const WARMUP_MS = 3000;
const TOKEN = 'bench-viewer-token';

/** Logs RATE messages a second, on schedule whatever the timer's granularity. */
const FLOOD_PAGE = `<!doctype html><title>flood</title><h1>flood</h1><script>
  const rate = ${RATE};
  const start = performance.now();
  let sent = 0;
  setInterval(() => {
    const due = Math.floor(((performance.now() - start) * rate) / 1000);
    while (sent < due) console.log('flood', sent++, 'some text to make the line as long as a real one');
  }, 10);
</script>`;

/** Installed in the viewer before its own script: what the main thread did. */
const OBSERVER = `
  window.__bench = { longtasks: [], frames: [], measuring: false, since: 0 };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (window.__bench.measuring) window.__bench.longtasks.push([e.startTime - window.__bench.since, e.duration]);
  }).observe({ type: 'longtask', buffered: true });
  let last = 0;
  const frame = (t) => {
    if (window.__bench.measuring && last > 0) window.__bench.frames.push(t - last);
    last = t;
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
`;

interface Measured {
  heap?: number;
  /** [start ms since the measurement began, duration ms] */
  longtasks: Array<[number, number]>;
  frames: number[];
  status: string;
  seq: number;
}

async function main(): Promise<void> {
  const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(FLOOD_PAGE));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const pageUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/flood.html`;
  const agent = await startAgent({ port: 0, token: TOKEN, logLevel: 'silent', screenshots: false });
  const viewerBrowser = await ChromiumProcess.launch();
  let watched: CDP.Client | undefined;
  let viewer: CDP.Client | undefined;
  try {
    const minted = await fetch(`${agent.url}/browsers/${agent.sessionId}/viewer/sessions`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    const { url } = (await minted.json()) as { url: string };

    const port = Number(new URL(viewerBrowser.browserWsUrl).port);
    const page = (await CDP.List({ port })).find((t) => t.type === 'page')!;
    viewer = await CDP({ port, target: page.id, local: true });
    await viewer.send('Emulation.setDeviceMetricsOverride', { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false });
    await viewer.send('Page.enable');
    await viewer.send('Page.addScriptToEvaluateOnNewDocument', { source: OBSERVER });
    await viewer.send('Page.navigate', { url });
    const evaluate = async <T>(expression: string): Promise<T> => {
      const { result, exceptionDetails } = (await viewer!.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true })) as any;
      if (exceptionDetails) throw new Error(exceptionDetails.exception?.description ?? exceptionDetails.text);
      return result.value as T;
    };
    for (let i = 0; !(await evaluate<boolean>(`document.querySelector('.conn-status')?.dataset.state === 'live'`)); i++) {
      if (i > 500) throw new Error('the viewer did not go live');
      await sleep(20);
    }
    if (values['hide-console']) await evaluate(`document.querySelector('.filters input[value=console]').click()`);

    watched = await CDP({ target: agent.browserWsUrl, local: true });
    await watched.send('Target.createTarget', { url: pageUrl });
    await sleep(WARMUP_MS);
    if (values.profile) {
      await viewer.send('Profiler.enable');
      await viewer.send('Profiler.start');
    }
    const traceEvents: TraceEvent[] = [];
    if (values.trace) {
      viewer.on('Tracing.dataCollected', (params: { value: TraceEvent[] }) => traceEvents.push(...params.value));
      await viewer.send('Tracing.start', { categories: 'devtools.timeline,v8', transferMode: 'ReportEvents' });
    }
    await evaluate(`window.__bench.since = performance.now(); window.__bench.measuring = true`);
    const agentSeqBefore = await latestSeq(agent.url, agent.sessionId);
    await sleep(SECONDS * 1000);
    const measured = await evaluate<Measured>(
      `(() => { window.__bench.measuring = false; const s = document.querySelector('.conn-status').textContent; return { ...window.__bench, status: s, seq: Number(/seq (\\d+)/.exec(s)?.[1] ?? 0) }; })()`,
    );
    const agentSeq = await latestSeq(agent.url, agent.sessionId);
    if (values.profile) {
      const { profile } = (await viewer.send('Profiler.stop')) as { profile: unknown };
      writeFileSync(values.profile, JSON.stringify(profile));
    }
    if (values.trace) {
      const done = new Promise((resolve) => (viewer as unknown as EventEmitter).once('Tracing.tracingComplete', resolve));
      await viewer.send('Tracing.end');
      await done;
      printTrace(traceEvents);
    }
    const heap = await evaluate<number>(`performance.memory?.usedJSHeapSize ?? 0`);
    report({ ...measured, heap }, agentSeq - agentSeqBefore, agentSeq);
  } finally {
    await viewer?.close().catch(() => undefined);
    await watched?.close().catch(() => undefined);
    await viewerBrowser.close();
    await agent.close();
    server.close();
  }
}

function report(m: Measured, agentEvents: number, agentSeq: number): void {
  const frames = [...m.frames].sort((a, b) => a - b);
  const pct = (p: number) => frames[Math.min(frames.length - 1, Math.floor((frames.length * p) / 100))] ?? 0;
  const summary = {
    rate_per_s: RATE,
    seconds: SECONDS,
    hide_console: values['hide-console'],
    agent_events_per_s: Math.round(agentEvents / SECONDS),
    longtasks: m.longtasks.length,
    longtask_max_ms: Math.round(Math.max(0, ...m.longtasks.map(([, d]) => d))),
    longtask_total_ms: Math.round(m.longtasks.reduce((a, [, d]) => a + d, 0)),
    /** Long tasks per 10 s of the measurement (do they come with the page's trims at 50,000 events?). */
    longtasks_per_10s: Array.from({ length: Math.ceil(SECONDS / 10) }, (_, i) => m.longtasks.filter(([t]) => t >= i * 10_000 && t < (i + 1) * 10_000).length),
    frames: frames.length,
    frame_gap_p50_ms: Math.round(pct(50) * 10) / 10,
    frame_gap_p99_ms: Math.round(pct(99) * 10) / 10,
    frame_gap_max_ms: Math.round(frames[frames.length - 1] ?? 0),
    frames_over_100ms: frames.filter((f) => f > 100).length,
    viewer_seq_behind_agent: agentSeq - m.seq,
    viewer_js_heap_mib: Math.round((m.heap ?? 0) / 1048576),
    viewer_status: m.status,
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}

interface TraceEvent {
  name: string;
  ph: string;
  ts?: number;
  dur?: number;
  tid: number;
  pid: number;
  args?: { data?: { frame?: string } };
}

/** Time per trace event name on the page's main thread (top-level events only). */
function printTrace(events: TraceEvent[]): void {
  // The renderer's main thread: the one that ran the most script.
  const byThread = new Map<string, Map<string, number>>();
  for (const e of events) {
    if (e.ph !== 'X' || e.dur === undefined) continue;
    const key = `${e.pid}:${e.tid}`;
    let names = byThread.get(key);
    if (!names) byThread.set(key, (names = new Map()));
    names.set(e.name, (names.get(e.name) ?? 0) + e.dur);
  }
  const [thread, names] = [...byThread.entries()].sort((a, b) => (b[1].get('FunctionCall') ?? 0) - (a[1].get('FunctionCall') ?? 0))[0]!;
  const rows = [...names.entries()].sort((a, b) => b[1] - a[1]).slice(0, 15);
  process.stdout.write(`main thread ${thread}, ms per event name (nested events overlap):\n`);
  for (const [name, dur] of rows) process.stdout.write(`  ${String(Math.round(dur / 1000)).padStart(7)}  ${name}\n`);
  // What the long tasks were made of.
  const onThread = events.filter((e) => `${e.pid}:${e.tid}` === thread && e.ph === 'X' && e.dur !== undefined);
  const long = onThread.filter((e) => e.name === 'RunTask' && e.dur! > 50_000);
  for (const task of long.slice(0, 20)) {
    const inside = new Map<string, number>();
    for (const e of onThread) {
      if (e === task || e.ts === undefined || task.ts === undefined || e.ts < task.ts || e.ts + e.dur! > task.ts + task.dur!) continue;
      inside.set(e.name, (inside.get(e.name) ?? 0) + e.dur!);
    }
    const top = [...inside.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([n, d]) => `${n} ${Math.round(d / 1000)}`);
    process.stdout.write(`  long task ${Math.round(task.dur! / 1000)} ms: ${top.join(', ')}\n`);
  }
}

async function latestSeq(url: string, sessionId: string): Promise<number> {
  const response = await fetch(`${url}/browsers/${sessionId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return ((await response.json()) as { seq: number }).seq;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

await main();
