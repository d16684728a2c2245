// The DOM snapshotter (docs/page-script.md "Snapshots"): one per document, in the page script's
// isolated world. The agent asks it for a snapshot before and after each recorded action; it
// serializes the frame's document in the node shape of Playwright's trace format (`SnapshotNode`)
// and refers to every subtree that is the same as in the frame's previous snapshot instead of
// repeating it, so a page that barely changes costs little per snapshot.
//
// Between snapshots only a passive capturing scroll listener runs (it notes which elements
// scrolled). Each snapshot walks the whole document (attributes, text and form state are read,
// compared with what the previous walk saw and kept per node in a WeakMap of this world; scroll
// positions are read on full snapshots and for the noted elements), which is what the bench lines
// measure (docs/performance.md "Snapshots").
//
// References are numbered by the post-order position of every node in the materialized tree
// (references expanded), and point only to the previous snapshot the agent stored (`base`): the
// agent names it on each call, and a snapshot it did not store (a deadline passed) is never
// referred to. Every KEYFRAME_EVERY snapshots one is full, so a reader needs at most that many to
// rebuild one.

import { SNAPSHOT_ATTRIBUTES as A, SNAPSHOT_LIMITS, SNAPSHOT_MASK, type FrameSnapshotReport, type SnapshotNode } from './schema.ts';

/** What the agent passes with each request. */
export interface SnapshotRequest {
  /** The number of this document's last snapshot the agent stored; absent: none (a full snapshot). */
  base?: number;
  /** Selector list of the form fields whose value is masked. */
  mask: string;
}

/** Counters the agent and tests read (docs/page-script.md "Snapshots"). */
export interface SnapshotStats {
  snapshots: number;
  lastMs: number;
  lastNodes: number;
}

export interface Snapshotter {
  snapshot(request: SnapshotRequest): string;
  /** The agent names the frame an `<iframe>` holds (its CDP frame id), for the frame's own snapshot. */
  markFrame(element: Element, frameId: string): void;
  readonly stats: SnapshotStats;
}

/** What the previous walk saw of a node, and where it was. */
interface Seen {
  values: unknown[];
  /** The snapshot that saw it, and its position there. */
  number: number;
  index: number;
}

interface Visited {
  n: SnapshotNode;
  equals: boolean;
}

const URL_IN_CSS = /url\(\s*(['"]?)([^'")\s]+)\1\s*\)/g;
const SKIPPED_LINK_RELS = new Set(['preload', 'prefetch', 'modulepreload', 'dns-prefetch', 'preconnect']);
const END = {};

export function createSnapshotter(win: Window): Snapshotter {
  const doc = win.document;
  const seen = new WeakMap<object, Seen>();
  const frames = new WeakMap<Element, string>();
  /** Per link style sheet: its text, kept while its rule count stays (docs/page-script.md "Snapshots"). */
  const linkSheets = new WeakMap<CSSStyleSheet, { rules: number; text: string | undefined }>();
  const styleSheets = new WeakMap<CSSStyleSheet, { content: string; rules: number; text: string }>();
  /** The key of a <style>'s text node in `seen` (the element itself is the element's). */
  const styleTexts = new WeakMap<Element, object>();
  // Makes the page's <link> and relative URLs resolve as they did in the page wherever it is shown.
  const fakeBase = doc.createElement('base');
  const id = randomId();
  const stats: SnapshotStats = { snapshots: 0, lastMs: 0, lastNodes: 0 };
  let last = 0;
  let lastFull = 0;
  /** Elements whose scroll position may be non-zero: scrolled since, or seen scrolled by a snapshot. */
  const scrolled = new Set<Element>();
  win.addEventListener(
    'scroll',
    (event) => {
      const target = (event.target === doc ? doc.scrollingElement : event.target) as Node | null;
      if (target !== null && target.nodeType === Node.ELEMENT_NODE) scrolled.add(target as Element);
    },
    { capture: true, passive: true },
  );

  function snapshot(request: SnapshotRequest): string {
    const started = performance.now();
    const number = ++last;
    const base = request.base !== undefined && number - lastFull < SNAPSHOT_LIMITS.keyframeEvery ? request.base : -1;
    const mask = request.mask;
    let counter = 0;
    let referred = false;
    let truncated = false;
    let headDepth = 0;
    let shadowDepth = 0;
    const adopted = new Map<CSSStyleSheet, string>();
    const definedCustom = new Set<string>();

    /** Closes a node: a reference when it and its subtree are as `base` saw them. */
    const close = (key: object, values: unknown[], childrenEqual: boolean, n: SnapshotNode): Visited => {
      const previous = seen.get(key);
      const index = counter++;
      const equals = childrenEqual && previous !== undefined && previous.number === base && sameValues(previous.values, values);
      if (equals) {
        referred = true;
        const ref: SnapshotNode = [[1, previous.index]];
        previous.number = number;
        previous.index = index;
        return { n: ref, equals };
      }
      seen.set(key, { values, number, index });
      return { n, equals };
    };

    const visit = (node: Node): Visited | undefined => {
      if (counter >= SNAPSHOT_LIMITS.maxNodes) {
        truncated = true;
        return undefined;
      }
      const type = node.nodeType;
      if (type === Node.TEXT_NODE) {
        const text = (node as Text).data;
        return close(node, [text], true, text);
      }
      if (type === Node.DOCUMENT_FRAGMENT_NODE) return visitShadowRoot(node as ShadowRoot);
      if (type !== Node.ELEMENT_NODE) return undefined;
      const element = node as Element;
      const name = element.nodeName;
      if (skipped(element, name, headDepth)) return undefined;

      const attrs: Record<string, string> = {};
      const values: unknown[] = [];
      const result: [string, Record<string, string>, ...SnapshotNode[]] = [name, attrs];
      let childrenEqual = true;
      const set = (attr: string, value: string) => {
        attrs[attr] = value;
        values.push(attr, value);
      };
      const child = (visited: Visited | undefined, identity: unknown) => {
        if (visited === undefined) return;
        result.push(visited.n);
        values.push(identity);
        childrenEqual &&= visited.equals;
      };

      const masked = (name === 'INPUT' || name === 'TEXTAREA') && mask !== '' && element.matches(mask);
      const attributes = element.attributes;
      for (let i = 0; i < attributes.length; i++) {
        const attr = attributes[i]!;
        const attrName = attr.name;
        if (skippedAttribute(name, attrName)) continue;
        let value = attr.value;
        if (masked && attrName === 'value') value = value === '' ? '' : SNAPSHOT_MASK;
        else if ((attrName === 'href' || attrName === 'src') && /^\s*(?:javascript|vbscript):/i.test(value)) value = '';
        set(attrName, value);
      }
      if (name === 'INPUT' || name === 'TEXTAREA') {
        const field = element as HTMLInputElement | HTMLTextAreaElement;
        if (field.type !== 'file') set(A.value, masked && field.value !== '' ? SNAPSHOT_MASK : field.value);
        if (field.type === 'checkbox' || field.type === 'radio') set(A.checked, String((field as HTMLInputElement).checked));
      } else if (name === 'OPTION') {
        set(A.selected, String((element as HTMLOptionElement).selected));
      } else if (name === 'IFRAME' || name === 'FRAME') {
        const frameId = frames.get(element);
        set('src', frameId === undefined ? '' : `/snapshot/${frameId}`);
      } else if (name === 'IMG') {
        const current = (element as HTMLImageElement).currentSrc;
        if (current !== '' && !/^\s*(?:javascript|vbscript):/i.test(current)) set(A.currentSrc, current);
      } else if (name === 'LINK') {
        const text = linkSheetText(element as HTMLLinkElement);
        if (text !== undefined) set(A.sheet, text);
      } else if (name === 'DIALOG' && element.matches(':modal')) {
        set(A.dialogOpen, 'modal');
      }
      if (element.hasAttribute('popover') && element.matches(':popover-open')) set(A.popoverOpen, 'true');
      if (element.localName.includes('-') && element.matches(':defined')) definedCustom.add(element.localName);
      // Reading a scroll position costs a layout check per element (about half of a snapshot's
      // time, docs/performance.md "Snapshots"): a full snapshot reads every element's; the others
      // only those that scrolled since (the scroll listener below) or were scrolled, and those in
      // shadow roots (their scroll events do not reach the document).
      if (base === -1 || shadowDepth > 0 || scrolled.has(element)) {
        const scrollTop = element.scrollTop;
        if (scrollTop) set(A.scrollTop, String(scrollTop));
        const scrollLeft = element.scrollLeft;
        if (scrollLeft) set(A.scrollLeft, String(scrollLeft));
        if (scrollTop || scrollLeft) scrolled.add(element);
        else scrolled.delete(element);
      }
      values.push(END);

      const shadow = shadowRootOf(element);
      if (shadow !== null) child(visitShadowRoot(shadow), shadow);
      if (name === 'STYLE') {
        // The style sheet as the page has it (a script may have changed it through the CSSOM).
        const text = styleText(element as HTMLStyleElement);
        let key = styleTexts.get(element);
        if (key === undefined) styleTexts.set(element, (key = {}));
        child(close(key, [text], true, text), key);
      } else if (name !== 'TEXTAREA') {
        // A textarea's text is its default value: its current value is A.value (masked when it must be).
        if (name === 'HEAD') {
          headDepth++;
          fakeBase.setAttribute('href', doc.baseURI);
          child(close(fakeBase, [doc.baseURI], true, ['BASE', { href: doc.baseURI }]), fakeBase);
        }
        for (let c = element.firstChild; c !== null; c = c.nextSibling) child(visit(c), c);
        if (name === 'HEAD') headDepth--;
      }
      if (element === doc.documentElement) for (const sheet of adoptedSheets(doc)) child(visitSheet(sheet), sheet);
      if (name === 'BODY' && definedCustom.size > 0) set(A.customElements, [...definedCustom].join(','));
      if (result.length === 2 && Object.keys(attrs).length === 0) result.pop();
      return close(element, values, childrenEqual, result);
    };

    const visitShadowRoot = (root: ShadowRoot): Visited => {
      const attrs = { [A.shadowRoot]: root.mode };
      const result: [string, Record<string, string>, ...SnapshotNode[]] = ['template', attrs];
      const values: unknown[] = [root.mode];
      let childrenEqual = true;
      shadowDepth++;
      for (let c = root.firstChild; c !== null; c = c.nextSibling) {
        const visited = visit(c);
        if (visited === undefined) continue;
        result.push(visited.n);
        values.push(c);
        childrenEqual &&= visited.equals;
      }
      shadowDepth--;
      for (const sheet of adoptedSheets(root)) {
        const visited = visitSheet(sheet);
        result.push(visited.n);
        values.push(sheet);
        childrenEqual &&= visited.equals;
      }
      return close(root, values, childrenEqual, result);
    };

    const visitSheet = (sheet: CSSStyleSheet): Visited => {
      let text = adopted.get(sheet);
      if (text === undefined) {
        text = rulesText(sheet, undefined) ?? '';
        adopted.set(sheet, text);
      }
      return close(sheet, [text], true, ['template', { [A.styleSheet]: text }]);
    };

    const root = doc.documentElement;
    const html = (root !== null ? visit(root)?.n : undefined) ?? ['HTML'];
    if (!referred) lastFull = number;
    const report: FrameSnapshotReport = {
      doc: id,
      number,
      ...(referred ? { base } : {}),
      ...(doc.doctype !== null && { doctype: doc.doctype.name }),
      url: doc.URL,
      viewport: { width: win.innerWidth, height: win.innerHeight },
      html,
      nodes: counter,
      collection_ms: 0,
      ...(truncated ? { truncated: true as const } : {}),
    };
    const ms = performance.now() - started;
    report.collection_ms = Math.round(ms * 1000) / 1000;
    stats.snapshots++;
    stats.lastMs = report.collection_ms;
    stats.lastNodes = counter;
    return JSON.stringify(report);
  }

  /** A linked style sheet's text, when this world may read it (same origin, or CORS); undefined otherwise. */
  function linkSheetText(link: HTMLLinkElement): string | undefined {
    const sheet = link.sheet;
    if (sheet === null) return undefined;
    let rules: number;
    try {
      rules = sheet.cssRules.length;
    } catch {
      return undefined;
    }
    const known = linkSheets.get(sheet);
    if (known !== undefined && known.rules === rules) return known.text;
    const text = rulesText(sheet, sheet.href ?? doc.baseURI);
    linkSheets.set(sheet, { rules, text });
    return text;
  }

  /**
   * A <style>'s text: its content, unless a script changed its rules through the CSSOM (an empty
   * element filled by insertRule, as CSS-in-JS libraries do, or a rule count that moved while the
   * content stayed): then the rules' text.
   */
  function styleText(style: HTMLStyleElement): string {
    const content = style.textContent;
    const sheet = style.sheet;
    if (sheet === null) return content;
    let rules: number;
    try {
      rules = sheet.cssRules.length;
    } catch {
      return content;
    }
    const known = styleSheets.get(sheet);
    if (known !== undefined && known.content === content && known.rules === rules) return known.text;
    const changed = (known !== undefined && known.content === content) || (content.trim() === '' && rules > 0);
    const text = changed ? (rulesText(sheet, undefined) ?? content) : content;
    styleSheets.set(sheet, { content, rules, text });
    return text;
  }

  return {
    snapshot,
    markFrame(element, frameId) {
      frames.set(element, frameId);
    },
    stats,
  };
}

/** Elements a snapshot leaves out: scripts, preloads, a CSP, iframes in <head> (never shown). */
function skipped(element: Element, name: string, headDepth: number): boolean {
  switch (name) {
    case 'SCRIPT':
    case 'NOSCRIPT':
      return true;
    case 'LINK': {
      const rel = element.getAttribute('rel')?.toLowerCase().trim() ?? '';
      return SKIPPED_LINK_RELS.has(rel);
    }
    case 'META':
      return (element.getAttribute('http-equiv') ?? '').toLowerCase() === 'content-security-policy';
    case 'IFRAME':
    case 'FRAME':
      return headDepth > 0;
    default:
      return element.localName === 'script';
  }
}

/** Attributes left out: event handlers, the ones the snapshot sets itself. */
function skippedAttribute(element: string, attr: string): boolean {
  if (attr.length > 2 && (attr.charCodeAt(0) | 32) === 111 && (attr.charCodeAt(1) | 32) === 110) return true; // on*
  if ((element === 'IFRAME' || element === 'FRAME') && (attr === 'src' || attr === 'srcdoc')) return true;
  if (element === 'LINK' && attr === 'integrity') return true;
  return attr === 'nonce';
}

function shadowRootOf(element: Element): ShadowRoot | null {
  const open = element.shadowRoot;
  if (open !== null) return open;
  // Closed roots, where this world can reach them (Chromium's extension API; absent in a CDP world).
  const dom = (globalThis as { chrome?: { dom?: { openOrClosedShadowRoot?: (e: Element) => ShadowRoot | null } } }).chrome?.dom;
  return dom?.openOrClosedShadowRoot?.(element) ?? null;
}

function adoptedSheets(root: Document | ShadowRoot): readonly CSSStyleSheet[] {
  return (root as { adoptedStyleSheets?: readonly CSSStyleSheet[] }).adoptedStyleSheets ?? [];
}

/** The rules of a sheet as text; relative URLs resolved against `base` (a linked sheet's own URL). Undefined when unreadable. */
function rulesText(sheet: CSSStyleSheet, base: string | undefined): string | undefined {
  let rules: CSSRuleList;
  try {
    rules = sheet.cssRules;
  } catch {
    return undefined;
  }
  let text = '';
  for (let i = 0; i < rules.length; i++) text += `${rules[i]!.cssText}\n`;
  if (base === undefined) return text;
  return text.replace(URL_IN_CSS, (match, _quote: string, url: string) => {
    if (/^(?:data|blob|about):/i.test(url) || url.startsWith('#')) return match;
    try {
      return `url("${new URL(url, base).href}")`;
    } catch {
      return match;
    }
  });
}

function sameValues(a: unknown[], b: unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function randomId(): string {
  const bytes = new Uint8Array(6);
  crypto.getRandomValues(bytes);
  let out = '';
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
}
