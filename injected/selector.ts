// Unique CSS selectors (docs/page-script.md): the shortest path that selects exactly one element. Within one
// tree scope (the document or an open shadow root) the path is built bottom-up, one step per
// ancestor, and stops at the first suffix that is unique in the scope: a step is `#id` when the id
// is unique in the scope (which also ends the path), else the tag with `:nth-of-type(k)` when a
// sibling shares the tag. An element inside an open shadow root is reached through its host:
// `<host path> >>> <path inside the shadow root>`, each part resolved in its own scope.
//
// Cost: one querySelectorAll per step (an id lookup for `#id`, which Blink answers from its id
// map). Run only for a click, a key press or a settled scroll, never on a page hot path.

/** Joins the parts of a selector across open shadow roots. */
export const SHADOW_PIERCE = ' >>> ';

type Scope = Document | ShadowRoot;

export function uniqueSelector(element: Element): string {
  const parts: string[] = [];
  let current: Element | undefined = element;
  while (current) {
    const scope = scopeOf(current);
    parts.push(selectorInScope(current, scope));
    current = scope instanceof ShadowRoot ? scope.host : undefined;
  }
  return parts.reverse().join(SHADOW_PIERCE);
}

/** The elements a selector made by `uniqueSelector` selects (for checks and for tests). */
export function resolveSelector(selector: string, root: Document = document): Element[] {
  let scopes: Array<Document | ShadowRoot> = [root];
  let found: Element[] = [];
  for (const part of selector.split(SHADOW_PIERCE)) {
    found = [];
    for (const scope of scopes) found.push(...Array.from(scope.querySelectorAll(part)));
    scopes = [];
    for (const element of found) if (element.shadowRoot) scopes.push(element.shadowRoot);
  }
  return found;
}

/** True when `selector` still selects exactly `element` (a cached selector may go stale). */
export function selectsExactly(selector: string, element: Element): boolean {
  try {
    const found = resolveSelector(selector, element.ownerDocument);
    return found.length === 1 && found[0] === element;
  } catch {
    return false;
  }
}

function scopeOf(element: Element): Scope {
  const root = element.getRootNode();
  if (root instanceof ShadowRoot) return root;
  // A detached element: describe it relative to its document; the caller checks isConnected.
  return element.ownerDocument;
}

function selectorInScope(element: Element, scope: Scope): string {
  const steps: string[] = [];
  let node: Element = element;
  for (;;) {
    const id = node.id;
    if (id && isUnique(scope, `#${CSS.escape(id)}`)) {
      steps.push(`#${CSS.escape(id)}`);
      return joinSteps(steps);
    }
    steps.push(typeStep(node));
    const candidate = joinSteps(steps);
    if (isUnique(scope, candidate)) return candidate;
    const parent = node.parentElement;
    if (!parent) {
      // The top of the scope and still ambiguous (a look-alike chain deeper in the tree): anchor
      // the path to the scope itself.
      if (scope instanceof ShadowRoot) return `:host > ${candidate}`;
      if (node === scope.documentElement) steps[steps.length - 1] = ':root';
      return joinSteps(steps);
    }
    node = parent;
  }
}

/** Steps are collected leaf first. */
function joinSteps(steps: string[]): string {
  let out = steps[steps.length - 1]!;
  for (let i = steps.length - 2; i >= 0; i--) out += ` > ${steps[i]!}`;
  return out;
}

function typeStep(node: Element): string {
  const tag = CSS.escape(node.localName);
  const parent = node.parentNode;
  if (!parent) return tag;
  let index = 0;
  let total = 0;
  for (let sibling = parent.firstElementChild; sibling; sibling = sibling.nextElementSibling) {
    // `:nth-of-type` counts siblings of the same expanded name (namespace and local name).
    if (sibling.localName !== node.localName || sibling.namespaceURI !== node.namespaceURI) continue;
    total++;
    if (sibling === node) index = total;
  }
  return total > 1 ? `${tag}:nth-of-type(${index})` : tag;
}

function isUnique(scope: Scope, selector: string): boolean {
  try {
    return scope.querySelectorAll(selector).length === 1;
  } catch {
    return false;
  }
}
