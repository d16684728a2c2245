// Section cdp, the CDP proxy's cost (docs/performance.md "Budget", docs/operations.md "CDP
// endpoint"). An agent host in embedded mode (its own Chromium); against the same browser:
// - a round trip, `Runtime.evaluate` of `1` on a page, through the agent's endpoint and directly
//   on Chromium's, alternating sample by sample (p50, p99 of each and their difference);
// - a Playwright script (navigate, then click, `steps` times) through the agent and directly,
//   in interleaved runs whose order alternates (median duration of each, their ratio);
// - the agent's CPU per relayed message: its CPU over a block of round trips through it, less its
//   CPU over an equal block sent directly (the agent's own telemetry of the same work), divided by
//   the messages relayed (a command and its answer each).

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import WebSocket from 'ws';
import { AgentHost, TOKEN } from '../clients/consumers.ts';
import type { BenchContext } from '../lib/context.ts';
import { cpuSeconds, monoMs } from '../lib/processes.ts';
import { median, quantile } from '../lib/stats.ts';

export interface CdpProxyOptions {
  /** Round trips sampled per path. */
  roundTrips: number;
  /** Playwright runs per path. */
  scripts: number;
  /** Navigate-and-click steps per Playwright run. */
  steps: number;
}

export interface CdpProxyResult {
  options: CdpProxyOptions;
  roundTrip: { directP50Ms: number; directP99Ms: number; agentP50Ms: number; agentP99Ms: number };
  playwright: { directMs: number[]; agentMs: number[]; ratio: number };
  /** Agent CPU per relayed message (µs). */
  cpuPerMessageUs: number;
}

const PAGE = '<!doctype html><title>bench cdp</title><button id="b" onclick="document.title=\'clicked\'">b</button>';

/** A CDP client on one WebSocket: send() resolves with the answer's round trip in ms. */
class RawClient {
  private next = 1;
  private readonly waiting = new Map<number, () => void>();
  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      const id = (JSON.parse(data.toString()) as { id?: number }).id;
      if (id !== undefined) this.waiting.get(id)?.();
    });
  }

  static async open(url: string, headers: Record<string, string> = {}): Promise<RawClient> {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    return new RawClient(ws);
  }

  async evaluateOne(): Promise<number> {
    const id = this.next++;
    const t0 = monoMs();
    await new Promise<void>((resolve) => {
      this.waiting.set(id, resolve);
      this.ws.send(JSON.stringify({ id, method: 'Runtime.evaluate', params: { expression: '1', returnByValue: true } }));
    });
    this.waiting.delete(id);
    return monoMs() - t0;
  }

  close(): void {
    this.ws.close();
  }
}

export async function runCdpProxy(ctx: BenchContext, options: CdpProxyOptions): Promise<CdpProxyResult> {
  const server = http.createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end(PAGE));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const host = await AgentHost.start({});
  const auth = { authorization: `Bearer ${TOKEN}` };
  try {
    const { url: agentUrl, browserWsUrl } = host.info;
    const direct = new URL(browserWsUrl).host;
    const targets = (await (await fetch(`${agentUrl}/json/list`, { headers: auth })).json()) as Array<{
      id: string;
      type: string;
      webSocketDebuggerUrl: string;
    }>;
    const page = targets.find((t) => t.type === 'page');
    if (!page) throw new Error('cdp: the agent lists no page');
    const viaAgent = await RawClient.open(page.webSocketDebuggerUrl, auth);
    const straight = await RawClient.open(`ws://${direct}/devtools/page/${page.id}`);

    // Round trips, alternating; a warm-up first.
    for (let i = 0; i < 50; i++) await Promise.all([viaAgent.evaluateOne(), straight.evaluateOne()]);
    const agentMs: number[] = [];
    const directMs: number[] = [];
    for (let i = 0; i < options.roundTrips; i++) {
      if (i % 2 === 0) {
        agentMs.push(await viaAgent.evaluateOne());
        directMs.push(await straight.evaluateOne());
      } else {
        directMs.push(await straight.evaluateOne());
        agentMs.push(await viaAgent.evaluateOne());
      }
    }
    ctx.log(`cdp: round trip p50 direct ${quantile(directMs, 0.5).toFixed(3)} ms, agent ${quantile(agentMs, 0.5).toFixed(3)} ms`);

    // CPU per relayed message: the agent's CPU over a block through it, less over a direct block.
    const block = async (client: RawClient): Promise<number> => {
      const before = cpuSeconds(host.pid);
      for (let i = 0; i < options.roundTrips; i++) await client.evaluateOne();
      return cpuSeconds(host.pid) - before;
    };
    const throughAgent = await block(viaAgent);
    const alongside = await block(straight);
    const cpuPerMessageUs = (Math.max(0, throughAgent - alongside) / (2 * options.roundTrips)) * 1e6;
    viaAgent.close();
    straight.close();

    // Playwright runs, interleaved.
    const script = async (through: 'agent' | 'direct'): Promise<number> => {
      const browser =
        through === 'agent'
          ? await chromium.connectOverCDP(agentUrl, { headers: { Authorization: `Bearer ${TOKEN}` } })
          : await chromium.connectOverCDP(`http://${direct}`);
      try {
        const tab = await browser.contexts()[0]!.newPage();
        const t0 = monoMs();
        for (let i = 0; i < options.steps; i++) {
          await tab.goto(`${base}/?step=${i}`);
          await tab.click('#b');
        }
        const took = monoMs() - t0;
        await tab.close();
        return took;
      } finally {
        await browser.close();
      }
    };
    const pw = { agentMs: [] as number[], directMs: [] as number[] };
    await script('direct');
    for (let r = 0; r < options.scripts; r++) {
      const order: Array<'agent' | 'direct'> = r % 2 === 0 ? ['agent', 'direct'] : ['direct', 'agent'];
      for (const through of order) (through === 'agent' ? pw.agentMs : pw.directMs).push(await script(through));
    }
    return {
      options,
      roundTrip: {
        directP50Ms: quantile(directMs, 0.5),
        directP99Ms: quantile(directMs, 0.99),
        agentP50Ms: quantile(agentMs, 0.5),
        agentP99Ms: quantile(agentMs, 0.99),
      },
      playwright: { ...pw, ratio: median(pw.agentMs) / median(pw.directMs) },
      cpuPerMessageUs,
    };
  } finally {
    await host.stop();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
