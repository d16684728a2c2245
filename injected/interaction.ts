// Interaction listeners (docs/page-script.md): click, keydown and scroll on `window`, capture phase, passive,
// installed before any page script runs, so the page can neither stop nor precede them. Only
// trusted events count: anything the page dispatches itself has `isTrusted: false`.

import { isSensitiveField } from './privacy.ts';
import type { Report } from './report.ts';
import { PAGE_SCRIPT_LIMITS } from './schema.ts';
import { selectsExactly, uniqueSelector } from './selector.ts';
import { cut, visibleText } from './visible-text.ts';

/** A scroll has settled once its position has not changed for this long. */
export const SCROLL_SETTLE_MS = 300;
/** Settled scrolls that moved this little are not reported. */
export const SCROLL_MIN_DISTANCE_PX = 2;

/** A click on a descendant of one of these is reported as a click on it (the button, not its icon). */
const INTERACTIVE =
  'a[href],button,input,select,textarea,label,summary,option,[role="button"],[role="link"],[role="checkbox"],' +
  '[role="radio"],[role="menuitem"],[role="tab"],[role="option"],[role="switch"]';
const MAX_PROMOTION_DEPTH = 8;
/** A label forwards its click to its control right away: that second click is not reported. */
const LABEL_FORWARD_MS = 50;

interface PendingScroll {
  target: Document | Element;
  from: Position;
  lastEventAt: number;
}

interface Position {
  x: number;
  y: number;
}

export function installInteraction(report: Report, win: Window): () => void {
  const doc = win.document;
  const options: AddEventListenerOptions = { capture: true, passive: true };
  let forwardedControl: Element | null = null;
  let forwardedAt = 0;
  let lastKeyElement: Element | undefined;
  let lastKeySelector = '';
  const pendingScrolls = new Map<Document | Element, PendingScroll>();
  let stopped = false;
  // Where each target was when its previous scroll settled; the document starts where it is now:
  // at 0,0 while it is still being parsed (nothing is read then, so no layout is forced).
  const loading = doc.readyState === 'loading';
  const settledPositions = new WeakMap<Document | Element, Position>();
  settledPositions.set(doc, loading ? { x: 0, y: 0 } : positionOf(doc, win));

  const onClick = (event: MouseEvent): void => {
    if (!event.isTrusted) return;
    const path = event.composedPath();
    const target = clickTarget(path);
    if (!target) return;
    if (target === forwardedControl && performance.now() - forwardedAt < LABEL_FORWARD_MS) {
      forwardedControl = null;
      return;
    }
    forwardedControl = target instanceof HTMLLabelElement ? target.control : null;
    forwardedAt = performance.now();
    report({
      type: 'interaction_click',
      x: Math.round(event.clientX),
      y: Math.round(event.clientY),
      selector: uniqueSelector(target),
      tag: target.tagName.toUpperCase(),
      text: visibleText(target),
    });
  };

  const onKeyDown = (event: KeyboardEvent): void => {
    if (!event.isTrusted) return;
    const first = event.composedPath()[0];
    const target = first instanceof Element ? first : doc.activeElement;
    if (!target || isSensitiveField(target)) return;
    // Typing repeats the same target: reuse its selector while it still selects exactly it.
    if (target !== lastKeyElement || !selectsExactly(lastKeySelector, target)) {
      lastKeyElement = target;
      lastKeySelector = uniqueSelector(target);
    }
    report({ type: 'interaction_key', key: cut(event.key, PAGE_SCRIPT_LIMITS.keyChars), selector: lastKeySelector, tag: target.tagName.toUpperCase() });
  };

  // Constant time per scroll event: note the time; one timer per scrolling target checks later.
  const onScroll = (event: Event): void => {
    if (!event.isTrusted) return;
    const eventTarget = event.target;
    if (eventTarget !== doc && !(eventTarget instanceof Element)) return;
    const target = eventTarget as Document | Element;
    const now = performance.now();
    const pending = pendingScrolls.get(target);
    if (pending) {
      pending.lastEventAt = now;
      return;
    }
    const from = settledPositions.get(target) ?? { x: 0, y: 0 };
    const entry: PendingScroll = { target, from, lastEventAt: now };
    pendingScrolls.set(target, entry);
    win.setTimeout(() => checkScroll(entry), SCROLL_SETTLE_MS);
  };

  const checkScroll = (entry: PendingScroll): void => {
    if (stopped) return;
    const quietFor = performance.now() - entry.lastEventAt;
    if (quietFor < SCROLL_SETTLE_MS) {
      win.setTimeout(() => checkScroll(entry), SCROLL_SETTLE_MS - quietFor);
      return;
    }
    pendingScrolls.delete(entry.target);
    const element = entry.target === doc ? doc.documentElement : (entry.target as Element);
    if (!element || !element.isConnected) return;
    const to = positionOf(entry.target, win);
    if (Math.hypot(to.x - entry.from.x, to.y - entry.from.y) <= SCROLL_MIN_DISTANCE_PX) return;
    settledPositions.set(entry.target, to);
    report({
      type: 'interaction_scroll_settled',
      from_x: entry.from.x,
      from_y: entry.from.y,
      to_x: to.x,
      to_y: to.y,
      target_selector: uniqueSelector(element),
    });
  };

  const listen = (): void => {
    // Adding a listener that is already there does nothing, so this can run again at any time.
    win.addEventListener('click', onClick, options);
    win.addEventListener('keydown', onKeyDown, options);
    win.addEventListener('scroll', onScroll, options);
  };
  listen();
  // document.open() erases every listener of the window, ours included, and keeps the window and
  // the document (no new script run): it empties the document first, which this observer sees.
  // It watches the document's own children only, so it never wakes up otherwise; in a document
  // still being parsed it starts at DOMContentLoaded, or the parser inserting <html> would wake it.
  const reopened = new MutationObserver(listen);
  const watch = (): void => {
    if (!stopped) reopened.observe(doc, { childList: true });
  };
  if (loading) doc.addEventListener('DOMContentLoaded', watch, { once: true });
  else watch();
  return () => {
    stopped = true;
    pendingScrolls.clear();
    doc.removeEventListener('DOMContentLoaded', watch);
    reopened.disconnect();
    win.removeEventListener('click', onClick, options);
    win.removeEventListener('keydown', onKeyDown, options);
    win.removeEventListener('scroll', onScroll, options);
  };
}

function clickTarget(path: EventTarget[]): Element | undefined {
  const limit = Math.min(path.length, MAX_PROMOTION_DEPTH);
  for (let i = 0; i < limit; i++) {
    const node = path[i];
    if (node instanceof Element && node.matches(INTERACTIVE)) return node;
  }
  const first = path[0];
  return first instanceof Element ? first : undefined;
}

function positionOf(target: Document | Element, win: Window): Position {
  if (target instanceof Element) return { x: Math.round(target.scrollLeft), y: Math.round(target.scrollTop) };
  return { x: Math.round(win.scrollX), y: Math.round(win.scrollY) };
}
