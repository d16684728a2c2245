// Section 4, reconnect. The agent host in embedded mode (it launches and owns its Chromium); the
// bench SIGKILLs that browser and measures, from the kill, when the subscriber sees
// monitor_reconnected and when it sees a console line logged in the relaunched browser. The line
// is logged by the bench's own CDP client as soon as the new browser exists, every 25 ms until one
// arrives, so "events flow again" is measured end to end with at most 25 ms of slack.

import CDP from 'chrome-remote-interface';
import { AgentHost, TOKEN } from '../clients/consumers.ts';
import type { BenchContext } from '../lib/context.ts';
import { monoMs, sleep, until } from '../lib/processes.ts';
import { SseReader, readNumber } from '../clients/sse-reader.ts';
import { median } from '../lib/stats.ts';

const RECONNECT_MARKER = 'BTAR';

export interface ReconnectOptions {
  kills: number;
}

export interface ReconnectKill {
  /** Kill → monitor_reconnected at the subscriber (ms). */
  reconnectedMs: number;
  /** The agent's own reconnect_duration_ms. */
  agentReportedMs: number;
  /** Kill → first console line from the new browser at the subscriber (ms). */
  firstEventMs: number;
}

export interface ReconnectResult {
  options: ReconnectOptions;
  kills: ReconnectKill[];
  median: { reconnectedMs: number; firstEventMs: number; agentReportedMs: number };
  spread: { firstEventMs: [number, number] };
}

export async function runReconnect(ctx: BenchContext, options: ReconnectOptions): Promise<ReconnectResult> {
  const host = await AgentHost.start({});
  const reconnectedAt: Array<{ at: number; durationMs: number }> = [];
  const markerAt = new Map<number, number>();
  const reader = await SseReader.open(host.streamUrl, TOKEN, {
    onFrame(frame, at) {
      if (frame.includes('"type":"monitor_reconnected"')) {
        const i = frame.indexOf('"reconnect_duration_ms":');
        reconnectedAt.push({ at, durationMs: i === -1 ? NaN : parseFloat(frame.slice(i + 24)) });
      } else if (frame.includes('"type":"console_log"')) {
        const i = frame.indexOf(RECONNECT_MARKER);
        if (i !== -1) {
          const k = readNumber(frame, i + RECONNECT_MARKER.length);
          if (!markerAt.has(k)) markerAt.set(k, at);
        }
      }
    },
  });
  const kills: ReconnectKill[] = [];
  try {
    for (let k = 0; k < options.kills; k++) {
      const before = await host.current();
      await sleep(1000);
      const reconnectsBefore = reconnectedAt.length;
      const t0 = monoMs();
      process.kill(before.browserPid!, 'SIGKILL');
      // The relaunched browser: a new pid and the agent attached to it.
      let info = before;
      await until(
        async () => {
          info = await host.current();
          return info.cdpConnected && info.browserPid !== before.browserPid && info.browserWsUrl !== before.browserWsUrl;
        },
        'the relaunched browser',
        30_000,
        10,
      );
      await logUntilSeen(info.browserWsUrl, k, () => markerAt.has(k));
      await until(() => reconnectedAt.length > reconnectsBefore, 'monitor_reconnected', 10_000);
      const reconnected = reconnectedAt[reconnectsBefore]!;
      const kill: ReconnectKill = { reconnectedMs: reconnected.at - t0, agentReportedMs: reconnected.durationMs, firstEventMs: markerAt.get(k)! - t0 };
      kills.push(kill);
      ctx.log(
        `[reconnect] kill ${k + 1}/${options.kills}: monitor_reconnected after ${kill.reconnectedMs.toFixed(0)} ms ` +
          `(agent says ${kill.agentReportedMs} ms), first console line after ${kill.firstEventMs.toFixed(0)} ms`,
      );
    }
  } finally {
    reader.close();
    await host.stop();
  }
  const first = kills.map((k) => k.firstEventMs);
  return {
    options,
    kills,
    median: {
      reconnectedMs: median(kills.map((k) => k.reconnectedMs)),
      firstEventMs: median(first),
      agentReportedMs: median(kills.map((k) => k.agentReportedMs)),
    },
    spread: { firstEventMs: [Math.min(...first), Math.max(...first)] },
  };
}

/** Log `BTAR<k>` in the new browser's tab every 25 ms until `seen()`. */
async function logUntilSeen(wsUrl: string, k: number, seen: () => boolean): Promise<void> {
  const client = await CDP({ target: wsUrl, local: true });
  const send = client.send.bind(client) as (method: string, params?: object, sessionId?: string) => Promise<unknown>;
  try {
    const { targetInfos } = (await send('Target.getTargets')) as { targetInfos: Array<{ targetId: string; type: string }> };
    const page = targetInfos.find((t) => t.type === 'page');
    if (!page) throw new Error('the relaunched browser has no page');
    const { sessionId } = (await send('Target.attachToTarget', { targetId: page.targetId, flatten: true })) as { sessionId: string };
    const deadline = monoMs() + 15_000;
    while (!seen()) {
      if (monoMs() > deadline) throw new Error(`console line ${k} never reached the subscriber`);
      void send('Runtime.evaluate', { expression: `console.log('${RECONNECT_MARKER}${k}')` }, sessionId).catch(() => undefined);
      await sleep(25);
    }
  } finally {
    await client.close().catch(() => undefined);
  }
}
