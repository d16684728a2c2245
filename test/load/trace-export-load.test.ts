// /healthz while 20 trace exports start at once (docs/export.md "Limits"): the built agent, as a
// child process, over a session with 8,000 stored events of 2 KB; 20 `GET /browsers/{id}/trace` run
// concurrently while /healthz is asked every 50 ms. The exports must not hold the event loop:
// every /healthz answers within 1 s, and every export completes.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN } from '../e2e/support/harness.ts';
import { AgentProcess, cleanEnv } from '../e2e/support/agent-process.ts';
import { seedConsoleStore } from '../e2e/support/export-memory.ts';

const STORED = 8_000;
const EXPORTS = 20;
const SESSION = 'trace-export-load';

let dataDir: string;
let agent: AgentProcess | undefined;

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'bta-trace-load-'));
  // Console events of one tab on disk, as an earlier run of the agent would have left them.
  seedConsoleStore(dataDir, SESSION, { count: STORED, text: (seq) => `stored ${seq} ${'x'.repeat(2000)}`, tsStep: 100, tab: true });
});

afterAll(async () => {
  await agent?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('20 trace exports at once', () => {
  it('keeps /healthz within 1 s while they start and run, and each completes', { timeout: 240_000 }, async () => {
    agent = AgentProcess.start(['--port', '0', '--token', TOKEN, '--session-id', SESSION, '--screenshots', 'off'], cleanEnv({ DATA_DIR: dataDir }));
    const { url } = await agent.listening(60_000);

    let healthzWorst = 0;
    let healthzFailures = 0;
    let sampling = true;
    const healthz = (async () => {
      while (sampling) {
        const started = performance.now();
        const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
        if (res?.status !== 200) healthzFailures++;
        await res?.arrayBuffer();
        healthzWorst = Math.max(healthzWorst, performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const started = performance.now();
    const sizes = await Promise.all(
      Array.from({ length: EXPORTS }, async () => {
        const res = await fetch(`${url}/browsers/${SESSION}/trace`, { headers: { Authorization: `Bearer ${TOKEN}` } });
        expect(res.status).toBe(200);
        return (await res.arrayBuffer()).byteLength;
      }),
    );
    const exportMs = performance.now() - started;
    sampling = false;
    await healthz;
    console.log(JSON.stringify({ export_ms: Math.round(exportMs), healthz_worst_ms: Math.round(healthzWorst), zip_bytes: sizes[0] }));
    expect(sizes.every((size) => size > 1000)).toBe(true);
    expect(healthzFailures).toBe(0);
    expect(healthzWorst).toBeLessThan(1000);
  });
});
