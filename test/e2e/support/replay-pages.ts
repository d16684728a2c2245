// The page the replay tests record: its background colour changes when asked, each change's time
// noted by the page itself, and a clock ticks in a corner (so the page paints all the time).

import type { Tab, TestRig } from './harness.ts';

/** The background changes when asked (runColours), each change's time noted by the page itself; a clock ticks in a corner. */
export const COLOUR_PAGE = `<!doctype html><html><head><style>
html,body{margin:0;height:100%;background:rgb(255,0,0)}
#clock{position:fixed;left:4px;top:4px;font:16px monospace;color:#fff}
</style></head><body><div id="clock"></div><script>
window.changes = [];
function tick() { document.getElementById('clock').textContent = (performance.now() / 1000).toFixed(2); requestAnimationFrame(tick); }
requestAnimationFrame(tick);
window.runColours = (steps) => {
  for (const [delay, colour] of steps) setTimeout(() => {
    if (colour) document.body.style.background = colour;
    window.changes.push({ colour, at: performance.timeOrigin + performance.now() });
  }, delay);
};
</script></body></html>`;

export async function openColourPage(rig: TestRig): Promise<Tab> {
  const url = rig.server.route('/colours.html', COLOUR_PAGE);
  const tab = await rig.driver.newTab();
  await tab.ready(rig.stream);
  await tab.send('Emulation.setDeviceMetricsOverride', { width: 640, height: 360, deviceScaleFactor: 1, mobile: false });
  await tab.send('Page.enable');
  await tab.navigate(url);
  await waitForPage(tab, 'typeof window.runColours === "function"');
  return tab;
}

export async function waitForPage(tab: Tab, expression: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { result } = (await tab.evaluate(expression)) as { result: { value?: unknown } };
    if (result.value === true) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${expression}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
