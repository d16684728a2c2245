// What the telemetry core remembers about targets is bounded by the targets that exist: a sidecar
// runs for days while tabs, iframes and workers come and go. The core and the target manager on a
// FakeConnection, driven with the CDP events Chromium sends when a tab is opened, used and closed.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { TargetManager } from '../../src/browser/target-manager.ts';
import { DEFAULT_LIMITS } from '../../src/limits.ts';
import { defaultTelemetryConfig } from '../../src/telemetry/telemetry-config.ts';
import { Telemetry, TelemetryMemory } from '../../src/telemetry/telemetry.ts';
import { FakeConnection } from './support/fake-connection.ts';

function rig(memory: TelemetryMemory) {
  const connection = new FakeConnection();
  const events: TelemetryEvent[] = [];
  const sink = { append: (e: TelemetryEvent) => events.push(e) };
  const logger = pino({ level: 'silent' });
  const telemetry = new Telemetry(connection.asConnection(), sink, { config: defaultTelemetryConfig(), limits: DEFAULT_LIMITS, logger, memory });
  telemetry.start();
  const targets = new TargetManager(connection.asConnection(), telemetry, logger);
  return { connection, events, telemetry, targets };
}

/** A tab that opens, commits a document with an iframe, logs a line. */
function useTab(connection: FakeConnection, targetId: string, sessionId: string): void {
  const targetInfo = { targetId, type: 'page', url: 'http://a.test/', title: '', attached: true, canAccessOpener: false };
  connection.emit('Target.targetCreated', { targetInfo });
  connection.emit('Target.attachedToTarget', { sessionId, targetInfo, waitingForDebugger: false });
  const frame = (id: string, parentId?: string) => ({
    id,
    parentId,
    loaderId: `L-${id}`,
    url: 'http://a.test/',
    domainAndRegistry: 'a.test',
    securityOrigin: 'http://a.test',
    mimeType: 'text/html',
    secureContextType: 'InsecureScheme',
    crossOriginIsolatedContextType: 'NotIsolated',
    gatedAPIFeatures: [],
  });
  connection.emit('Page.frameNavigated', { frame: frame(targetId), type: 'Navigation' }, sessionId);
  connection.emit('Page.frameNavigated', { frame: frame(`${targetId}-child`, targetId), type: 'Navigation' }, sessionId);
  connection.emit(
    'Runtime.consoleAPICalled',
    { type: 'log', args: [{ type: 'string', value: 'hi' }], executionContextId: 1, timestamp: Date.now() },
    sessionId,
  );
}

describe('TelemetryMemory', () => {
  it('forgets a tab once Chromium destroys it: no announcement, watermark or frame loader stays behind', async () => {
    const memory = new TelemetryMemory();
    const { connection, events, telemetry, targets } = rig(memory);
    await targets.start();
    for (let i = 0; i < 50; i++) {
      useTab(connection, `T${i}`, `S${i}`);
      connection.emit('Target.detachedFromTarget', { sessionId: `S${i}`, targetId: `T${i}` });
      connection.emit('Target.targetDestroyed', { targetId: `T${i}` });
    }
    expect(events.filter((e) => e.type === 'page_tab_opened')).toHaveLength(50);
    expect(events.filter((e) => e.type === 'console_log')).toHaveLength(50);
    expect(memory.size).toBe(0);
    expect(telemetry.announcedFrameCount).toBe(0);
  });

  it('keeps what a live tab needs across a reconnect, and forgets it only when the tab is destroyed', async () => {
    const memory = new TelemetryMemory();
    const first = rig(memory);
    await first.targets.start();
    useTab(first.connection, 'T1', 'S1');
    expect(memory.announcedTabs.has('T1')).toBe(true);
    expect(memory.consoleWatermarks.has('T1')).toBe(true);
    // The connection drops: every target detaches, none is destroyed.
    first.connection.emit('Target.detachedFromTarget', { sessionId: 'S1', targetId: 'T1' });
    first.targets.dispose();
    first.telemetry.dispose();
    expect(memory.announcedTabs.has('T1')).toBe(true);
    expect(memory.consoleWatermarks.has('T1')).toBe(true);

    const second = rig(memory);
    await second.targets.start();
    const targetInfo = { targetId: 'T1', type: 'page', url: 'http://a.test/', title: '', attached: false, canAccessOpener: false };
    second.connection.emit('Target.targetCreated', { targetInfo });
    expect(second.events.filter((e) => e.type === 'page_tab_opened')).toHaveLength(0);
    second.connection.emit('Target.targetDestroyed', { targetId: 'T1' });
    expect(memory.size).toBe(0);
  });
});
