// Which tabs are loading (src/telemetry/loading-tabs-family.ts): the event log's load pace follows
// it. Driven with CDP events on a fake connection; the real-Chromium side is
// test/e2e/stream-load-pace.test.ts.

import { afterEach, describe, expect, it } from 'vitest';
import { TelemetryRig } from './support/telemetry-rig.ts';

describe('loading tabs', () => {
  let rig: TelemetryRig | undefined;
  afterEach(() => rig?.dispose());

  const start = (): boolean[] => {
    const changes: boolean[] = [];
    rig = new TelemetryRig({}, { onTabsLoading: (loading) => changes.push(loading) });
    return changes;
  };

  it('says loading from the first tab main frame starting to load until no tab is loading', () => {
    const changes = start();
    rig!.attach('S1', 'T1', 'page');
    rig!.attach('S2', 'T2', 'page');
    rig!.connection.emit('Page.frameStartedLoading', { frameId: 'T1' }, 'S1');
    rig!.connection.emit('Page.frameStartedLoading', { frameId: 'T2' }, 'S2');
    expect(changes).toEqual([true]);
    rig!.connection.emit('Page.loadEventFired', { timestamp: 1 }, 'S1');
    expect(changes).toEqual([true]);
    // A main frame that stops loading without a load event (an error page, a 204) ends its load.
    rig!.connection.emit('Page.frameStoppedLoading', { frameId: 'T2' }, 'S2');
    expect(changes).toEqual([true, false]);
  });

  it('ignores subframes and iframe targets, and ends the load of a tab that goes away', () => {
    const changes = start();
    const tab = rig!.attach('S1', 'T1', 'page');
    rig!.attach('S3', 'F3', 'iframe', tab);
    rig!.connection.emit('Page.frameStartedLoading', { frameId: 'child-frame' }, 'S1');
    rig!.connection.emit('Page.frameStartedLoading', { frameId: 'F3' }, 'S3');
    expect(changes).toEqual([]);
    rig!.connection.emit('Page.frameStartedLoading', { frameId: 'T1' }, 'S1');
    expect(changes).toEqual([true]);
    rig!.telemetry.targetDetached(tab);
    expect(changes).toEqual([true, false]);
  });

  it('says no tab is loading when the telemetry is disposed mid-load (a lost connection)', () => {
    const changes = start();
    rig!.attach('S1', 'T1', 'page');
    rig!.connection.emit('Page.frameStartedLoading', { frameId: 'T1' }, 'S1');
    rig!.dispose();
    rig = undefined;
    expect(changes).toEqual([true, false]);
  });
});
