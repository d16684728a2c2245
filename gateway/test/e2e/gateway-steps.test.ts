// Steps through the gateway (docs/events.md "Steps", docs/gateway.md) with a real agent on real
// headless Chromium, on SQLite and on PostgreSQL: POST /browsers/{id}/telemetry/steps is forwarded
// with the caller's API key as the agent's caller (`key:<id>`, never what the client claims), so a
// key's batches carry its step and another key's do not; the step_id filter reads the same events
// through the gateway as on the agent, live and, after the DELETE, from the archive.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../../src/agent.ts';
import { BACKENDS, GatewayRig, TestStorages } from './support/gateway-harness.ts';
import { SseClient } from '../../../test/e2e/support/harness.ts';

const AGENT_TOKEN = 'agent-token-of-the-steps-tests';
const storages = new TestStorages();
afterAll(() => storages.close());

type Envelope = { seq: number; event: { type: string; data?: Record<string, unknown> } };

describe.each(BACKENDS)('steps through the gateway on %s', (backend) => {
  let rig: GatewayRig;
  let agent: Agent;
  let stream: SseClient;
  let id: string;
  let otherKey: string;
  const keyIds: Record<string, string> = {};
  let stepId: string;
  const json = { 'content-type': 'application/json' };
  const events = () => stream.envelopes as Envelope[];
  const batch = (key: string) =>
    rig.fetch(`/browsers/${id}/computer/batch`, {
      key,
      method: 'POST',
      headers: json,
      body: JSON.stringify({ actions: [{ type: 'sleep', sleep: { duration_ms: 1 } }] }),
    });
  const seqsOf = async (response: Response) => {
    expect(response.status).toBe(200);
    return ((await response.json()) as Envelope[]).map((e) => e.seq);
  };

  beforeAll(async () => {
    [rig, agent] = await Promise.all([
      storages.fresh(backend).then((storage) => GatewayRig.start(storage, { archiveLeaseMs: 1000 })),
      startAgent({ port: 0, token: AGENT_TOKEN, logLevel: 'silent', screenshots: false }),
    ]);
    id = agent.sessionId;
    const registered = await rig.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: AGENT_TOKEN });
    if (registered.status !== 201) throw new Error(await registered.text());
    otherKey = await rig.createKey({ name: 'other caller' });
    const keys = (await (await rig.fetch('/org/api_keys?limit=100')).json()) as Array<{ id: string; name: string }>;
    for (const key of keys) keyIds[key.name] = key.id;
    stream = await SseClient.open(`${agent.url}/browsers/${id}/telemetry?replay=all`, AGENT_TOKEN);

    // The client claims another caller: the gateway names the key it authenticated instead.
    const marked = await rig.fetch(`/browsers/${id}/telemetry/steps`, {
      method: 'POST',
      headers: { ...json, 'x-bta-caller': 'key:forged', 'x-bta-via-gateway': '1' },
      body: JSON.stringify({ name: 'through the gateway', data: { n: 1 } }),
    });
    expect(marked.status).toBe(200);
    stepId = ((await marked.json()) as { step_id: string }).step_id;
    expect((await batch(rig.adminKey)).status).toBe(204);
    expect((await batch(otherKey)).status).toBe(204);
    await stream.waitFor(() => events().filter((e) => e.event.type === 'api_call').length === 2, 'the two batches');
  }, 60_000);
  afterAll(async () => {
    stream?.close();
    await agent?.close();
    await rig?.close();
  });

  it("records the step for the caller's API key", () => {
    const step = events().find((e) => e.event.type === 'step')!;
    expect(step.event.data).toMatchObject({ name: 'through the gateway', via: 'http', caller: `key:${keyIds.admin}`, step_id: stepId });
  });

  it("gives the key's batch the step, and another key's batch none", () => {
    const calls = events().filter((e) => e.event.type === 'api_call');
    expect(calls.map((e) => e.event.data!.step_id)).toEqual([stepId, undefined]);
  });

  it("reads the step's events by step_id through the gateway as on the agent, live and from the archive after the DELETE", async () => {
    const query = `/browsers/${id}/telemetry/events?step_id=${stepId}&since=10m`;
    const onAgent = await seqsOf(await fetch(`${agent.url}${query}`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } }));
    // The step, the batch's api_call and its sleep.
    expect(onAgent).toHaveLength(3);
    expect(await seqsOf(await rig.fetch(query))).toEqual(onAgent);
    expect((await rig.fetch(`/browsers/${id}`, { method: 'DELETE' })).status).toBe(204);
    expect(await seqsOf(await rig.fetch(query.replace('since=10m', 'since=1h')))).toEqual(onAgent);
  });
});
