// A Telemetry core on a FakeConnection, for unit tests of families: attach fake targets, deliver
// CDP events, read the events it admits.

import pino from 'pino';
import type { TelemetryEvent } from '../../../injected/schema.ts';
import { AttachedTarget } from '../../../src/browser/target-manager.ts';
import { DEFAULT_LIMITS } from '../../../src/limits.ts';
import { defaultTelemetryConfig, mergeTelemetryConfig, type TelemetryConfigPatch } from '../../../src/telemetry/telemetry-config.ts';
import { Telemetry } from '../../../src/telemetry/telemetry.ts';
import { FakeConnection } from './fake-connection.ts';

export class TelemetryRig {
  readonly connection = new FakeConnection();
  readonly events: TelemetryEvent[] = [];
  readonly telemetry: Telemetry;

  constructor(patch: TelemetryConfigPatch = {}, options: { onTabsLoading?: (loading: boolean) => void } = {}) {
    const config = mergeTelemetryConfig(defaultTelemetryConfig(), patch);
    const sink = { append: (event: TelemetryEvent) => this.events.push(event) };
    this.telemetry = new Telemetry(this.connection.asConnection(), sink, { config, limits: DEFAULT_LIMITS, logger: pino({ level: 'silent' }), ...options });
    this.telemetry.start();
  }

  /** Attach a target (paused, brand new) and run its setup. */
  attach(sessionId: string, targetId: string, type: string, parent?: AttachedTarget): AttachedTarget {
    const info = { targetId, type, url: 'about:blank', title: '', attached: true, canAccessOpener: false };
    const target = new AttachedTarget(this.connection.asConnection(), sessionId, targetId, type, info, parent, true);
    void this.telemetry.setUpTarget(target);
    return target;
  }

  /** A committed navigation of a frame of `sessionId`'s target. */
  navigate(sessionId: string, frameId: string, loaderId: string, url: string, parentId?: string): void {
    const frame = {
      id: frameId,
      loaderId,
      url,
      parentId,
      domainAndRegistry: '',
      securityOrigin: '',
      mimeType: 'text/html',
      secureContextType: 'Insecure',
      crossOriginIsolatedContextType: 'NotIsolated',
      gatedAPIFeatures: [],
    };
    this.connection.emit('Page.frameNavigated', { frame, type: 'Navigation' }, sessionId);
  }

  ofType(type: string): TelemetryEvent[] {
    return this.events.filter((e) => e.type === type);
  }

  dispose(): void {
    this.telemetry.dispose();
  }
}
