// The visible text of a clicked element (docs/events.md#types: trimmed, at most 200 chars). innerText would
// be exact but costs the whole subtree and a layout; this walk is bounded instead: it visits at
// most MAX_NODES nodes, skips hidden and non-rendered subtrees, separates block-level elements
// with a space, collapses white space and stops once it has enough characters.

import { PAGE_SCRIPT_LIMITS } from './schema.ts';
import { isFormField, isSensitiveField } from './privacy.ts';

const MAX_NODES = 1000;
const NOT_RENDERED = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'TITLE', 'META', 'LINK']);
const BLOCKS = new Set([
  'ADDRESS',
  'ARTICLE',
  'ASIDE',
  'BLOCKQUOTE',
  'BR',
  'DD',
  'DETAILS',
  'DIALOG',
  'DIV',
  'DL',
  'DT',
  'FIELDSET',
  'FIGCAPTION',
  'FIGURE',
  'FOOTER',
  'FORM',
  'H1',
  'H2',
  'H3',
  'H4',
  'H5',
  'H6',
  'HEADER',
  'HR',
  'LI',
  'MAIN',
  'NAV',
  'OL',
  'P',
  'PRE',
  'SECTION',
  'SUMMARY',
  'TABLE',
  'TD',
  'TH',
  'TR',
  'UL',
  'OPTION',
  'BUTTON',
]);

export function visibleText(element: Element, max: number = PAGE_SCRIPT_LIMITS.textChars): string {
  if (isSensitiveField(element) || isFormField(element)) return '';
  if (element instanceof HTMLInputElement) return cut(collapse(element.type === 'image' ? element.alt : element.value), max);
  let out = '';
  let visited = 0;
  const walker = element.ownerDocument.createTreeWalker(element, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  for (let node: Node | null = walker.currentNode; node;) {
    if (++visited > MAX_NODES || out.length > max * 2) break;
    if (node.nodeType === Node.TEXT_NODE) {
      out += (node as Text).data;
      node = walker.nextNode();
      continue;
    }
    const el = node as Element;
    const skip = el !== element && (NOT_RENDERED.has(el.tagName) || isSensitiveField(el) || isFormField(el) || !isVisible(el));
    if (BLOCKS.has(el.tagName)) out += ' ';
    node = skip ? nextSkippingChildren(walker) : walker.nextNode();
  }
  return cut(collapse(out), max);
}

function isVisible(element: Element): boolean {
  return typeof element.checkVisibility !== 'function' || element.checkVisibility({ checkVisibilityCSS: true });
}

function nextSkippingChildren(walker: TreeWalker): Node | null {
  const next = walker.nextSibling();
  if (next) return next;
  while (walker.parentNode()) {
    if (walker.currentNode === walker.root) return null;
    const sibling = walker.nextSibling();
    if (sibling) return sibling;
  }
  return null;
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** At most `max` UTF-16 units, never splitting a surrogate pair. */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end).trimEnd();
}
