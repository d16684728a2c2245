// What the gateway suites that run the built programs share: the bundled agent and gateway, a
// fixture server with one page, and the test storages, set up once per file and removed after it.

import { afterAll, beforeAll } from 'vitest';
import { TestStorages } from './gateway-harness.ts';
import { bundlePrograms, type Bundles } from './gateway-processes.ts';
import { Driver, FixtureServer, SseClient, type Tab } from '../../../../test/e2e/support/harness.ts';

export interface GatewaySuite {
  readonly storages: TestStorages;
  readonly bundles: Bundles;
  readonly fixtures: FixtureServer;
}

/** Registers the file's beforeAll/afterAll; `page` is served at /page (and an empty /favicon.ico). */
export function gatewaySuite(name: string, page: string): GatewaySuite {
  const storages = new TestStorages();
  let bundles: Bundles | undefined;
  let fixtures: FixtureServer | undefined;
  beforeAll(async () => {
    [bundles, fixtures] = await Promise.all([bundlePrograms(name), new FixtureServer().start()]);
    fixtures.route('/page', page);
    // Chromium asks every page's site for one: a 404 would be one more failed request.
    fixtures.route('/favicon.ico', '', 'image/x-icon');
  }, 60_000);
  afterAll(async () => {
    bundles?.remove();
    await fixtures?.close();
    await storages.close();
  });
  return {
    storages,
    get bundles() {
      if (bundles === undefined) throw new Error('the programs are bundled in beforeAll');
      return bundles;
    },
    get fixtures() {
      if (fixtures === undefined) throw new Error('the fixture server starts in beforeAll');
      return fixtures;
    },
  };
}

/** A tab of an agent's browser whose console reaches the agent's stream (read with `agentToken`). */
export async function readyTab(agentUrl: string, sessionId: string, browserWsUrl: string, agentToken: string): Promise<{ driver: Driver; tab: Tab }> {
  const driver = await Driver.connect(browserWsUrl);
  const tab = await driver.firstPage();
  const watcher = await SseClient.open(`${agentUrl}/browsers/${sessionId}/telemetry`, agentToken);
  await tab.ready(watcher);
  watcher.close();
  return { driver, tab };
}
