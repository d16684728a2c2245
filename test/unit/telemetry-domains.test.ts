// Which CDP domains the telemetry core enables on each target type (docs/chromium.md "Domains by
// target type"): the core and the target manager on a FakeConnection, targets attached as
// Chromium attaches them.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { TargetManager } from '../../src/browser/target-manager.ts';
import { DEFAULT_LIMITS } from '../../src/limits.ts';
import type { CdpCuts } from '../../src/telemetry/cdp-cuts.ts';
import { defaultTelemetryConfig, mergeTelemetryConfig, type TelemetryConfig } from '../../src/telemetry/telemetry-config.ts';
import { Telemetry } from '../../src/telemetry/telemetry.ts';
import { FakeConnection } from './support/fake-connection.ts';

const TYPES = ['page', 'iframe', 'worker', 'service_worker', 'shared_worker', 'auction_worklet'] as const;

/** Attaches one target of each type; the Runtime.enable and Page.enable each got. */
async function domainsByType(config: TelemetryConfig, cuts?: Partial<CdpCuts>): Promise<Record<string, string[]>> {
  const connection = new FakeConnection();
  const logger = pino({ level: 'silent' });
  const telemetry = new Telemetry(connection.asConnection(), { append: () => 0 }, { config, limits: DEFAULT_LIMITS, logger, cuts });
  telemetry.start();
  const targets = new TargetManager(connection.asConnection(), telemetry, logger);
  await targets.start();
  for (const type of TYPES) {
    const targetInfo = { targetId: `T-${type}`, type, url: 'http://a.test/', title: '', attached: true, canAccessOpener: false };
    connection.emit('Target.attachedToTarget', { sessionId: `S-${type}`, targetInfo, waitingForDebugger: true });
  }
  await targets.idle();
  const wanted = new Set(['Page.enable', 'Runtime.enable', 'Network.enable']);
  return Object.fromEntries(TYPES.map((type) => [type, connection.commandsFor(`S-${type}`).filter((m) => wanted.has(m))]));
}

const consoleOff = () => mergeTelemetryConfig(defaultTelemetryConfig(), { browser: { console: { enabled: false } } });

describe('domains by target type', () => {
  it('enables Page on pages and iframes, Runtime and Network on every target that reports them', async () => {
    expect(await domainsByType(defaultTelemetryConfig())).toEqual({
      page: ['Page.enable', 'Runtime.enable', 'Network.enable'],
      iframe: ['Page.enable', 'Runtime.enable', 'Network.enable'],
      worker: ['Runtime.enable', 'Network.enable'],
      service_worker: ['Runtime.enable', 'Network.enable'],
      shared_worker: ['Runtime.enable', 'Network.enable'],
      auction_worklet: ['Runtime.enable'],
    });
  });

  it('with console off, enables Runtime only where the page script runs (pages and iframes)', async () => {
    expect(await domainsByType(consoleOff())).toEqual({
      page: ['Page.enable', 'Runtime.enable', 'Network.enable'],
      iframe: ['Page.enable', 'Runtime.enable', 'Network.enable'],
      worker: ['Network.enable'],
      service_worker: ['Network.enable'],
      shared_worker: ['Network.enable'],
      auction_worklet: [],
    });
  });

  it('with the domains-by-type cut off, enables Runtime on every target whenever a category needs it', async () => {
    const domains = await domainsByType(consoleOff(), { domainsByTargetType: false });
    for (const type of TYPES) expect(domains[type]).toContain('Runtime.enable');
  });
});
