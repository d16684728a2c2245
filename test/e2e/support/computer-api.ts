// Helpers of the computer-batch end-to-end tests: calling the batch route, loading the fixture
// page in a tab and reading its state back through CDP.

import { readFileSync } from 'node:fs';
import { TOKEN, type Tab, type TestRig } from './harness.ts';

export const PLAYGROUND = readFileSync(new URL('../../fixtures/computer/playground.html', import.meta.url), 'utf8');

export interface BatchResponse {
  status: number;
  headers: Headers;
  body: any;
}

export async function postBatch(rig: TestRig, actions: unknown[] | { actions?: unknown }, token = TOKEN): Promise<BatchResponse> {
  const body = Array.isArray(actions) ? { actions } : actions;
  const res = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/computer/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
}

/** Poll `probe` (a page expression) until `accept` holds; fails with the last value after the timeout. */
export async function waitUntil<T>(tab: Tab, expression: string, accept: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await evaluate<T>(tab, expression).catch(() => undefined as T);
    if (last !== undefined && accept(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${expression}; last value ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function evaluate<T>(tab: Tab, expression: string): Promise<T> {
  const { result, exceptionDetails } = await tab.evaluate(expression);
  if (exceptionDetails) throw new Error(`${expression}: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
  return result.value as T;
}

/** Navigate `tab` to `url` and wait until the fixture's script has run. */
export async function load(tab: Tab, url: string): Promise<void> {
  const marker = `${Date.now()}-${Math.random()}`;
  await evaluate(tab, `window.__loadMarker = ${JSON.stringify(marker)}`).catch(() => undefined);
  await tab.navigate(url);
  await waitUntil<boolean>(
    tab,
    `window.__loadMarker !== ${JSON.stringify(marker)} && window.fixtureReady === true && document.readyState === 'complete'`,
    (v) => v,
  );
}

/** The centre of an element, in viewport CSS px (integers). */
export async function centerOf(tab: Tab, selector: string): Promise<{ x: number; y: number }> {
  return evaluate(
    tab,
    `(() => { const r = document.querySelector(${JSON.stringify(selector)}).getBoundingClientRect(); return { x: Math.round(r.left + r.width / 2), y: Math.round(r.top + r.height / 2) }; })()`,
  );
}
