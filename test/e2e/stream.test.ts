import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleText, SseClient, startRig, TOKEN, type Tab, type TestRig } from './harness.ts';

describe('stall experiment', () => {
  let rig: TestRig;
  let tab: Tab;
  beforeAll(async () => {
    rig = await startRig({ ringEvents: 1000 });
    tab = await rig.driver.firstPage();
    await tab.ready(rig.stream);
  });
  afterAll(() => rig?.close());

  it('exp', async () => {
    const healthy = await SseClient.open(rig.streamUrl, TOKEN);
    const stalled = await SseClient.open(rig.streamUrl, TOKEN);
    stalled.pause();
    const m0 = process.memoryUsage();
    const t0 = Date.now();
    const N = 5000;
    await tab.evaluate(`for (let i=0;i<${N};i++) console.log('m'+i, 'x'.repeat(2000))`);
    await healthy.waitFor((c) => c.ofType('console_log').some((e) => consoleText(e) === `m${N-1}`), 'last', 30000);
    const m1 = process.memoryUsage();
    console.log('flood ms', Date.now() - t0, 'healthy frames', healthy.frameIds.length, 'stalled frames', stalled.frameIds.length, 'rawlen', healthy.raw.length);
    console.log('heap', (m1.heapUsed - m0.heapUsed) / 1e6, 'ab', (m1.arrayBuffers - m0.arrayBuffers) / 1e6, 'rss', (m1.rss - m0.rss) / 1e6);
    const ids = healthy.frameIds;
    let gaps = 0; for (let i = 1; i < ids.length; i++) if (ids[i] !== ids[i-1]! + 1) gaps++;
    console.log('healthy gaps', gaps);
    stalled.resume();
    const last = ids[ids.length - 1]!;
    await stalled.waitFor((c) => c.frameIds.at(-1) === last, 'stalled catch up', 30000);
    const s = stalled.frameIds;
    const sg: string[] = []; for (let i = 1; i < s.length; i++) if (s[i] !== s[i-1]! + 1) sg.push(`${s[i-1]}->${s[i]}`);
    console.log('stalled frames', s.length, 'first', s[0], 'gaps', sg);
  }, 60000);
});
