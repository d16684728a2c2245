// service_crashed for the agent itself (docs/events.md "Failure signals"): the built agent killed
// with SIGKILL and started again on the same data directory and session reports the previous
// process; a clean stop (SIGTERM) followed by a start reports nothing.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../injected/schema.ts';
import { AgentProcess, cleanEnv } from './support/agent-process.ts';

const TOKEN = 'agent-crash-test-token';

async function crashes(url: string, sessionId: string): Promise<Envelope[]> {
  const response = await fetch(`${url}/browsers/${sessionId}/telemetry/events?type=service_crashed&limit=100`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Envelope[];
}

describe('an agent of the same session that ended without a clean shutdown', () => {
  const sessionId = 'agent-crash-session';
  let dataDir: string;
  let agent: AgentProcess | undefined;

  const start = async () => {
    agent = AgentProcess.start(['--port', '0', '--token', TOKEN, '--session-id', sessionId, '--screenshots', 'off'], cleanEnv({ DATA_DIR: dataDir }));
    return (await agent.listening()).url;
  };

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'bta-agent-crash-'));
  });
  afterAll(async () => {
    await agent?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('is reported by the next agent after kill -9, once, with its pid and last seq', async () => {
    let url = await start();
    expect(await crashes(url, sessionId)).toEqual([]);
    const killed = agent!;
    killed.child.kill('SIGKILL');
    await killed.waitForExit(5_000);
    url = await start();
    const [crash, ...more] = await crashes(url, sessionId);
    expect(more).toEqual([]);
    expect(crash!.event).toMatchObject({
      type: 'service_crashed',
      category: 'system',
      source: { kind: 'agent' },
      data: { service_name: 'browser-telemetry-agent', phase: 'running', pid: killed.pid },
    });
    expect(crash!.event.data).toHaveProperty('last_seq');
    expect(agent!.logLines.some((line) => line.msg === 'the previous agent of this session ended without a clean shutdown')).toBe(true);
  }, 60_000);

  it('is not reported after a clean stop', async () => {
    const before = (await crashes((await agent!.listening()).url, sessionId)).length;
    await agent!.stop();
    expect(agent!.exited?.code).toBe(0);
    const url = await start();
    expect(await crashes(url, sessionId)).toHaveLength(before);
  }, 60_000);
});
