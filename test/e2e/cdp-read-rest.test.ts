// Reading CDP in batches while a tab loads (--load-cdp-read-ms, docs/performance.md "Reading CDP
// in batches while a tab loads"): on real Chromium, a page logs a console line every 20 ms while
// a slow image holds its load event for 2 s. With a long rest the agent reads what Chromium sent
// in a few socket reads; without one it wakes for nearly every line. Every line arrives either way.

import { beforeAll, describe, expect, it } from 'vitest';
import { consoleText, startRig, TOKEN, type TestRig } from './support/harness.ts';

const LINES = 40;
const REST_MS = 100;

interface Run {
  lines: number;
  reads: number;
  messages: number;
}

async function counter(rig: TestRig, name: string): Promise<number> {
  const response = await fetch(`${rig.agent.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const match = new RegExp(`^${name} (\\d+)`, 'm').exec(await response.text());
  if (match === null) throw new Error(`no ${name} in /metrics`);
  return Number(match[1]);
}

/** Loads the page once under an agent with the given rest; the CDP reads and messages of the load. */
async function loadWith(loadCdpReadMs: number): Promise<Run> {
  const rig = await startRig({ loadCdpReadMs, screenshots: false });
  try {
    // The load event waits for this image: the tab is loading for 2 s.
    rig.server.slowImage('/slow.gif', 2000);
    const page = rig.server.route(
      '/rest.html',
      `<!doctype html><title>rest</title><img src="/slow.gif"><script>
let i = 0;
const lines = setInterval(() => { console.log('line ' + i); if (++i === ${LINES}) clearInterval(lines); }, 20);
</script>`,
    );
    const tab = await rig.driver.firstPage();
    await tab.ready(rig.stream);
    const [reads0, messages0] = [await counter(rig, 'bta_cdp_socket_reads_total'), await counter(rig, 'bta_cdp_messages_total')];
    await tab.navigate(page);
    await rig.stream.waitForEvent('page_load', (e) => (e.data as { url?: string }).url === page, 20_000);
    const [reads1, messages1] = [await counter(rig, 'bta_cdp_socket_reads_total'), await counter(rig, 'bta_cdp_messages_total')];
    const lines = rig.stream.events.filter((e) => consoleText(e)?.startsWith('line ')).length;
    return { lines, reads: reads1 - reads0, messages: messages1 - messages0 };
  } finally {
    await rig.close();
  }
}

describe('reading CDP in batches while a tab loads', () => {
  let rested: Run;
  let unrested: Run;

  beforeAll(async () => {
    rested = await loadWith(REST_MS);
    unrested = await loadWith(0);
  }, 60_000);

  it('gets every line either way', () => {
    expect(rested.lines).toBe(LINES);
    expect(unrested.lines).toBe(LINES);
  });

  it('reads what Chromium sends during a load in a few reads, one per rest, and wakes per line without a rest', () => {
    // 2 s of load: about 20 rests of 100 ms, plus the reads of answers to the commands the agent
    // sends (each ends a rest); without a rest, at least one read for each line logged 20 ms apart.
    expect(unrested.reads).toBeGreaterThanOrEqual(LINES);
    expect(rested.reads).toBeLessThan(unrested.reads / 2);
    expect(rested.messages / rested.reads).toBeGreaterThan(2 * (unrested.messages / unrested.reads));
  });
});
