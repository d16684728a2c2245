// What the gateway's replay suites share: a gateway and a real agent program registered with it,
// a tab of the agent's browser (640×360) on the colour page (test/e2e/support/replay-pages.ts),
// and the official client with the admin key.

import type Kernel from '@onkernel/sdk';
import { expect } from 'vitest';
import type { GatewayRig } from './gateway-harness.ts';
import { AgentProgram } from './gateway-processes.ts';
import type { GatewaySuite } from './gateway-suite.ts';
import { Driver, type Tab } from '../../../../test/e2e/support/harness.ts';
import { waitForPage } from '../../../../test/e2e/support/replay-pages.ts';

export interface ReplayRig {
  rig: GatewayRig;
  agent: AgentProgram;
  /** The agent's session id, registered with the gateway. */
  id: string;
  driver: Driver;
  tab: Tab;
  client: Kernel;
}

/**
 * Starts the agent beside `gateway` (started by the caller, with its own options), registers it,
 * opens the page; on a failure stops what it started.
 */
export async function startReplayRig(suite: GatewaySuite, gateway: Promise<GatewayRig>, agentToken: string): Promise<ReplayRig> {
  const [rig, agent] = await Promise.all([gateway, AgentProgram.start(suite.bundles, agentToken)]);
  let driver: Driver | undefined;
  try {
    const id = agent.sessionId;
    expect((await rig.registerBrowser({ session_id: id, agent_url: agent.url, agent_token: agentToken })).status).toBe(201);
    driver = await Driver.connect(agent.browserWsUrl());
    const tab = await driver.firstPage();
    await tab.send('Page.enable');
    await tab.send('Emulation.setDeviceMetricsOverride', { width: 640, height: 360, deviceScaleFactor: 1, mobile: false });
    await tab.navigate(suite.fixtures.url('/page'));
    await waitForPage(tab, 'typeof window.runColours === "function"');
    return { rig, agent, id, driver, tab, client: rig.sdk(rig.adminKey, { maxRetries: 0 }) };
  } catch (err) {
    // The caller's afterAll never sees what was started here.
    await driver?.close().catch(() => undefined);
    await agent.stop();
    await rig.close();
    throw err;
  }
}
