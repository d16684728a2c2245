// Playing the user on a tab through CDP `Input.*` (trusted events, as a real user makes them), and
// checking selectors reported by the page script against the live page.

import type { Tab } from './harness.ts';

export interface Point {
  x: number;
  y: number;
}

/** The centre of the first element matching `selector` (main world), in viewport CSS px. */
export async function centerOf(tab: Tab, selector: string): Promise<Point> {
  const { result, exceptionDetails } = await tab.evaluate(
    `(() => { const r = document.querySelector(${JSON.stringify(selector)}).getBoundingClientRect(); return { x: r.x + r.width / 2, y: r.y + r.height / 2 }; })()`,
  );
  if (exceptionDetails) throw new Error(`centerOf(${selector}): ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
  const { x, y } = result.value as Point;
  // Whole pixels: the input pipeline truncates fractional coordinates.
  return { x: Math.round(x), y: Math.round(y) };
}

export async function click(tab: Tab, at: Point): Promise<void> {
  await tab.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: at.x, y: at.y });
  await tab.send('Input.dispatchMouseEvent', { type: 'mousePressed', x: at.x, y: at.y, button: 'left', clickCount: 1 });
  await tab.send('Input.dispatchMouseEvent', { type: 'mouseReleased', x: at.x, y: at.y, button: 'left', clickCount: 1 });
}

export async function clickOn(tab: Tab, selector: string): Promise<Point> {
  const at = await centerOf(tab, selector);
  await click(tab, at);
  return at;
}

/** Each character as keyDown (with text: keydown, keypress, input) and keyUp. */
export async function typeText(tab: Tab, text: string): Promise<void> {
  for (const ch of text) {
    await tab.send('Input.dispatchKeyEvent', { type: 'keyDown', key: ch, text: ch, unmodifiedText: ch });
    await tab.send('Input.dispatchKeyEvent', { type: 'keyUp', key: ch });
  }
}

export async function wheel(tab: Tab, at: Point, deltaY: number, deltaX = 0): Promise<void> {
  await tab.send('Input.dispatchMouseEvent', { type: 'mouseWheel', x: at.x, y: at.y, deltaX, deltaY });
}

/**
 * How many elements a reported selector selects in the page (parts joined by ` >>> ` are resolved
 * in successive open shadow roots), and whether the single match is `expected` (an expression).
 */
export async function selects(tab: Tab, selector: string, expected: string): Promise<{ count: number; isExpected: boolean }> {
  const { result, exceptionDetails } = await tab.evaluate(`(() => {
    let scopes = [document], found = [];
    for (const part of ${JSON.stringify(selector)}.split(' >>> ')) {
      found = scopes.flatMap((s) => [...s.querySelectorAll(part)]);
      scopes = found.filter((e) => e.shadowRoot).map((e) => e.shadowRoot);
    }
    return { count: found.length, isExpected: found.length === 1 && found[0] === (${expected}) };
  })()`);
  if (exceptionDetails) throw new Error(`selects(${selector}): ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
  return result.value;
}
