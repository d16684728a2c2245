// Fan-out pacing while a tab loads (docs/events.md "Delivery"): on real Chromium, console lines
// logged every 20 ms while the page's load event is held back by a slow image reach the subscriber
// in a few writes, one per --stream-load-pace-ms; the same lines logged after the load event come
// one write per tick (--stream-pace-ms).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleText, startRig, type TestRig } from './support/harness.ts';

const LOAD_PACE_MS = 100;
const DURING = 40;
const AFTER = 20;

/** Groups of arrival times: a new group after a gap of more than `gapMs`. */
function writes(arrivals: number[], gapMs: number): number {
  let groups = 0;
  let last = -Infinity;
  for (const at of arrivals) {
    if (at - last > gapMs) groups++;
    last = at;
  }
  return groups;
}

describe('fan-out pacing while a tab loads', () => {
  let rig: TestRig;

  beforeAll(async () => {
    rig = await startRig({ streamPaceMs: 1, streamLoadPaceMs: LOAD_PACE_MS });
    // The load event waits for this image: the tab is loading for 2 s.
    rig.server.slowImage('/slow.gif', 2000);
    const page = rig.server.route(
      '/pace.html',
      `<!doctype html><title>pace</title><img src="/slow.gif"><script>
let i = 0;
const during = setInterval(() => { console.log('during ' + i); if (++i === ${DURING}) clearInterval(during); }, 20);
addEventListener('load', () => {
  let j = 0;
  const after = setInterval(() => { console.log('after ' + j); if (++j === ${AFTER}) clearInterval(after); }, 25);
});
</script>`,
    );
    const tab = await rig.driver.firstPage();
    await tab.ready(rig.stream);
    await tab.navigate(page);
    await rig.stream.waitFor((s) => s.events.some((e) => consoleText(e) === `after ${AFTER - 1}`), 'the last line after the load', 20_000);
  });
  afterAll(() => rig?.close());

  const arrivalsOf = (prefix: string): number[] =>
    rig.stream.envelopes.flatMap((envelope, i) => (consoleText(envelope.event)?.startsWith(prefix) ? [rig.stream.arrivals[i]!] : []));

  it('delivers the lines logged while the tab loads in a few writes, one per load pace', () => {
    const during = arrivalsOf('during ');
    expect(during).toHaveLength(DURING);
    // 40 ticks over 800 ms: at most one write per 100 ms, and the first at once.
    expect(writes(during, 10)).toBeLessThanOrEqual(800 / LOAD_PACE_MS + 3);
    expect(during.at(-1)! - during[0]!).toBeGreaterThanOrEqual(LOAD_PACE_MS);
  });

  it('delivers the lines logged after the load event one write per tick again', () => {
    const after = arrivalsOf('after ');
    expect(after).toHaveLength(AFTER);
    // 20 ticks 25 ms apart, paced 1 ms: nearly every tick is a write of its own.
    expect(writes(after, 10)).toBeGreaterThanOrEqual(AFTER * 0.6);
  });
});
