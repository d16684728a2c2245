// A small element builder. Text goes in as text nodes only: everything the viewer shows comes from
// the watched pages (console text, URLs, headers, bodies) and must never be parsed as HTML.
// No `style` attribute either: the page's CSP refuses inline styles (docs/viewer.md).

type Attributes = Record<string, string | number | boolean | undefined>;
type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Attributes = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, ...children);
  return element;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
}

/** Replaces an element's children. */
export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

/** Sets `textContent` only when it changes (recycled rows are refilled every frame). */
export function setText(element: Element, text: string): void {
  if (element.textContent !== text) element.textContent = text;
}

let idCounter = 0;
/** A document-unique id with a readable prefix. */
export function uid(prefix: string): string {
  return `${prefix}-${++idCounter}`;
}
