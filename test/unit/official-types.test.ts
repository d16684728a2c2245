// The failure signals the official client (@onkernel/sdk 0.84) defines, checked against its types:
// service_crashed and system_oom_kill (category system), live_view_connect and
// live_view_disconnect (connection). The assignments below are compiled by `tsc` (npm run lint,
// npm test); the events they hold are the ones the agent's code builds, so the runtime checks
// cover the fields that type checks alone cannot (category, type, no stray field).

import type {
  BrowserLiveViewConnectEvent,
  BrowserLiveViewDisconnectEvent,
  BrowserServiceCrashedEvent,
  BrowserSystemOomKillEvent,
} from '@onkernel/sdk/resources/browsers/telemetry';
import { readFileSync } from 'node:fs';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  EVENT_TYPE_CATEGORY,
  type LiveViewConnectData,
  type LiveViewDisconnectData,
  type ServiceCrashedData,
  type SystemOomKillData,
  type TelemetryEvent,
} from '../../injected/schema.ts';
import { BrowserClock } from '../../src/telemetry/clock.ts';
import { kmsgMessage, OomKillParser } from '../../src/telemetry/oom-kill-parser.ts';
import { OperationalEvents } from '../../src/telemetry/operational-events.ts';
import { defaultTelemetryConfig } from '../../src/telemetry/telemetry-config.ts';

/** The fields of the official shapes (ours may add extensions, which the official client ignores). */
type Official<T> = Required<T>;

describe('failure signals against the official client 0.84 types', () => {
  it('has data types assignable to the official data', () => {
    expectTypeOf<ServiceCrashedData>().toExtend<NonNullable<BrowserServiceCrashedEvent['data']>>();
    expectTypeOf<SystemOomKillData>().toExtend<NonNullable<BrowserSystemOomKillEvent['data']>>();
    expectTypeOf<LiveViewConnectData>().toExtend<NonNullable<BrowserLiveViewConnectEvent['data']>>();
    expectTypeOf<LiveViewDisconnectData>().toExtend<NonNullable<BrowserLiveViewDisconnectEvent['data']>>();
    // Every official field exists in ours with the same type.
    expectTypeOf<Pick<Required<SystemOomKillData>, keyof Official<BrowserSystemOomKillEvent.Data>>>().toEqualTypeOf<Official<BrowserSystemOomKillEvent.Data>>();
    expectTypeOf<Pick<Required<ServiceCrashedData>, keyof Official<BrowserServiceCrashedEvent.Data>>>().toEqualTypeOf<
      Official<BrowserServiceCrashedEvent.Data>
    >();
  });

  it('puts each type in the official category', () => {
    const categories: {
      service_crashed: BrowserServiceCrashedEvent['category'];
      system_oom_kill: BrowserSystemOomKillEvent['category'];
      live_view_connect: BrowserLiveViewConnectEvent['category'];
      live_view_disconnect: BrowserLiveViewDisconnectEvent['category'];
    } = { service_crashed: 'system', system_oom_kill: 'system', live_view_connect: 'connection', live_view_disconnect: 'connection' };
    for (const [type, category] of Object.entries(categories)) expect(EVENT_TYPE_CATEGORY[type as keyof typeof categories]).toBe(category);
  });

  it('emits events whose data the official types accept', () => {
    const events: TelemetryEvent[] = [];
    const operational = new OperationalEvents({ append: (e) => events.push(e) }, new BrowserClock(), () => defaultTelemetryConfig());
    const parser = new OomKillParser();
    let kill: SystemOomKillData | undefined;
    for (const record of readFileSync(new URL('../fixtures/kmsg/linux-5.10-global.txt', import.meta.url), 'utf8').split('\n')) {
      if (record !== '') kill ??= parser.push(kmsgMessage(record)!);
    }
    operational.emit('system_oom_kill', kill!);
    operational.emit('service_crashed', { service_name: 'chromium', phase: 'running', pid: 42, signal: 'SIGKILL' });
    operational.liveViewOpened('viewer-1')();
    const oom: BrowserSystemOomKillEvent.Data = events[0]!.data as SystemOomKillData;
    const crash: BrowserServiceCrashedEvent.Data = events[1]!.data as ServiceCrashedData;
    const connect: BrowserLiveViewConnectEvent.Data = events[2]!.data as LiveViewConnectData;
    const disconnect: BrowserLiveViewDisconnectEvent.Data = events[3]!.data as LiveViewDisconnectData;
    expect(events.map((e) => e.type)).toEqual(['system_oom_kill', 'service_crashed', 'live_view_connect', 'live_view_disconnect']);
    expect(oom).toMatchObject({ pid: 7731, process_name: 'python3', constraint: 'none', trigger_pid: 7731 });
    expect(oom.top_tasks).toHaveLength(5);
    expect(crash).toMatchObject({ service_name: 'chromium', phase: 'running', pid: 42 });
    expect(connect).toEqual({ session_id: 'viewer-1' });
    expect(disconnect).toEqual({ session_id: 'viewer-1', duration_ms: expect.any(Number) });
  });

  it('emits nothing of a category that is off', () => {
    const events: TelemetryEvent[] = [];
    const config = defaultTelemetryConfig();
    config.browser.system.enabled = false;
    const operational = new OperationalEvents({ append: (e) => events.push(e) }, new BrowserClock(), () => config);
    operational.emit('service_crashed', { service_name: 'chromium', phase: 'gave_up', attempts: 10 });
    operational.liveViewOpened('v')();
    expect(events.map((e) => e.type)).toEqual(['live_view_connect', 'live_view_disconnect']);
  });
});
