// The DOM snapshotter (docs/page-script.md "Snapshots"): one per document, in the page script's
// isolated world. The agent asks it for a snapshot before and after each recorded action; it
// serializes the frame's document in the node shape of Playwright's trace format (`SnapshotNode`)
// and refers to every subtree that is the same as in the frame's previous snapshot instead of
// repeating it, so a page that barely changes costs little per snapshot.
//
// A subtree no mutation touched since the previous snapshot is not walked at all: a
// MutationObserver (from the first snapshot on, on the document and every shadow root walked)
// marks changed nodes and their ancestors, and what no mutation reports (form state, scroll
// positions, style sheets, image sources, dialog/popover/custom-element states, the document's
// URL) is re-checked on each snapshot; docs/page-script.md "Snapshots" lists it and says why.
// Only the changed paths are walked, which is what the bench lines measure (docs/performance.md).
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
  /** The category went off: the observer stops and its marks are dropped; the next snapshot is full. */
  pause(): void;
  readonly stats: SnapshotStats;
}

/**
 * Where a node (or a key standing for one: a <style>'s text, the <head>'s <base>, an adopted
 * sheet's slot) was last emitted, and its subtree's size.
 */
interface Placed {
  /** The snapshot that last emitted it (walked or referred to), and its post-order position there. */
  number: number;
  index: number;
  /** Nodes of its subtree as materialized (references expanded), itself included. */
  size: number;
  /** The snapshot that last walked it and its position there: its children's `number` and `index` are of that walk. */
  walkedNumber: number;
  walkedIndex: number;
  /** The defined custom elements' names in its subtree, in document order; undefined when none. */
  custom: string[] | undefined;
}

/** Where a walked node's children were in the base snapshot: `index + delta` for those placed by its last walk. */
interface Context {
  walked: number;
  delta: number;
}

/** What an adopted-sheet list last held, per document or shadow root. */
interface AdoptedState {
  sheets: readonly CSSStyleSheet[];
  texts: string[];
  keys: object[];
}

const URL_IN_CSS = /url\(\s*(['"]?)([^'")\s]+)\1\s*\)/g;
const UNSAFE_URL = /^\s*(?:javascript|vbscript):/i;
const SKIPPED_LINK_RELS = new Set(['preload', 'prefetch', 'modulepreload', 'dns-prefetch', 'preconnect']);
const OBSERVED: MutationObserverInit = { childList: true, attributes: true, characterData: true, subtree: true };
/**
 * Nodes marked (changed or inserted) between two snapshots beyond which the marks are dropped and
 * the next snapshot is full: bounds what a page churning while no snapshot is asked for (or with
 * the category switched off) costs in memory and observer work.
 */
const MAX_MARKED = 50_000;
/** A context no record matches: the subtree is walked and written out in full. */
const UNPLACED: Context = { walked: -2, delta: 0 };

export function createSnapshotter(win: Window): Snapshotter {
  const doc = win.document;
  const placed = new WeakMap<object, Placed>();
  const frames = new WeakMap<Element, string>();
  /** Per link style sheet: its text, kept while its rule count stays (docs/page-script.md "Snapshots"). */
  const linkSheets = new WeakMap<CSSStyleSheet, { rules: number; text: string | undefined }>();
  const styleSheets = new WeakMap<CSSStyleSheet, { content: string; rules: number; text: string }>();
  /** The key standing for a <style>'s text, and the text last emitted. */
  const styleTexts = new WeakMap<Element, { key: object; text: string }>();
  // Makes the page's <link> and relative URLs resolve as they did in the page wherever it is shown.
  const fakeBase = doc.createElement('base');
  let fakeBaseHref = '';
  const id = randomId();
  const stats: SnapshotStats = { snapshots: 0, lastMs: 0, lastNodes: 0 };
  let last = 0;
  let lastFull = 0;
  /** Elements whose scroll position may be non-zero: scrolled since, or seen scrolled by a snapshot. */
  const scrolled = new Set<Element>();

  // Unchanged subtrees (docs/page-script.md "Snapshots"): a MutationObserver marks every node whose
  // subtree changed since the last snapshot, with its ancestors (`dirty`); nodes inserted since
  // (`added`) are walked in full, since a subtree changed while detached reports nothing. What no
  // mutation reports is re-checked on each snapshot: `watched` keeps, per element with such state
  // (form fields, images, links, <style>, dialogs, popovers, custom elements), what the last walk
  // read of it; `roots` are the document and the shadow roots walked, for their adopted sheets.
  const dirty = new Set<Node>();
  const added = new Set<Node>();
  const watched = new Map<Element, string>();
  const roots = new Map<Document | ShadowRoot, AdoptedState>();
  const heads = new Set<Element>();
  let observer: MutationObserver | undefined;
  /** Set when more than MAX_MARKED nodes were marked: the marks are dropped, the observer stopped, the next snapshot is full. */
  let overflowed = false;

  const overflow = (): void => {
    overflowed = true;
    dirty.clear();
    added.clear();
    observer?.disconnect();
  };
  const markDirty = (node: Node): void => {
    if (overflowed) return;
    let n: Node | null = node;
    while (n !== null && !dirty.has(n)) {
      dirty.add(n);
      n = n.parentNode ?? (n.nodeType === Node.DOCUMENT_FRAGMENT_NODE ? ((n as ShadowRoot).host ?? null) : null);
    }
    if (dirty.size > MAX_MARKED) overflow();
  };
  const record = (records: MutationRecord[]): void => {
    for (const r of records) {
      markDirty(r.target);
      if (r.type === 'childList') for (let i = 0; i < r.addedNodes.length; i++) added.add(r.addedNodes[i]!);
    }
    if (added.size > MAX_MARKED) overflow();
  };
  const onScroll = (event: Event): void => {
    const target = (event.target === doc ? doc.scrollingElement : event.target) as Node | null;
    if (target !== null && target.nodeType === Node.ELEMENT_NODE) {
      scrolled.add(target as Element);
      markDirty(target);
    }
  };
  win.addEventListener('scroll', onScroll, { capture: true, passive: true });

  /** An element's state that no mutation reports, as one string; undefined for elements with none. */
  const volatileState = (element: Element, name: string, mask: string): string | undefined => {
    let state: string | undefined;
    if (name === 'INPUT' || name === 'TEXTAREA') {
      const field = element as HTMLInputElement;
      const masked = mask !== '' && element.matches(mask);
      state = `${masked ? 'm' : ''}\u0000${field.value}\u0000${field.type === 'checkbox' || field.type === 'radio' ? field.checked : ''}`;
    } else if (name === 'OPTION') state = String((element as HTMLOptionElement).selected);
    else if (name === 'IMG') state = (element as HTMLImageElement).currentSrc;
    else if (name === 'LINK') state = linkSheetText(element as HTMLLinkElement) ?? '\u0000';
    else if (name === 'STYLE') state = styleText(element as HTMLStyleElement);
    else if (name === 'DIALOG') state = String(element.matches(':modal'));
    if (element.hasAttribute('popover')) state = `${state ?? ''}\u0000${element.matches(':popover-open')}`;
    // A custom element, once defined, stays so: only an undefined one is watched.
    if (element.localName.includes('-') && !element.matches(':defined')) state = `${state ?? ''}\u0000undefined`;
    return state;
  };

  /** Marks what changed without a mutation record since the last snapshot (docs/page-script.md "Snapshots"). */
  const recheck = (mask: string): void => {
    for (const [element, state] of watched) {
      if (!element.isConnected) watched.delete(element);
      else if (volatileState(element, element.nodeName, mask) !== state) markDirty(element);
    }
    for (const [root, state] of roots) {
      if (root !== doc && !root.isConnected) {
        roots.delete(root);
        continue;
      }
      const sheets = adoptedSheets(root);
      let same = sheets.length === state.sheets.length;
      for (let i = 0; i < sheets.length; i++) {
        const text = sheetText(sheets[i]!);
        if (!same || sheets[i] !== state.sheets[i] || text !== state.texts[i]) {
          same = false;
          break;
        }
      }
      if (!same) markDirty(root === doc ? (doc.documentElement ?? doc) : root);
    }
    for (const head of heads) {
      if (!head.isConnected) heads.delete(head);
      else if (doc.baseURI !== fakeBaseHref) markDirty(head);
    }
  };

  /** An adopted sheet's text, read once per snapshot. */
  let adopted = new Map<CSSStyleSheet, string>();
  const sheetText = (sheet: CSSStyleSheet): string => {
    let text = adopted.get(sheet);
    if (text === undefined) {
      text = rulesText(sheet, undefined) ?? '';
      adopted.set(sheet, text);
    }
    return text;
  };

  function snapshot(request: SnapshotRequest): string {
    const started = performance.now();
    const number = ++last;
    if (observer === undefined) {
      observer = new MutationObserver(record);
      observer.observe(doc, OBSERVED);
    } else if (!overflowed) record(observer.takeRecords());
    const mask = request.mask;
    adopted = new Map();
    // References go only to the snapshot just before this one (a later one always re-walks what
    // an unstored one saw), never past a keyframe's distance, nor across marks dropped (also when
    // the re-check itself marks too many).
    let full = overflowed || request.base === undefined || request.base !== number - 1 || number - lastFull >= SNAPSHOT_LIMITS.keyframeEvery;
    if (!full) {
      recheck(mask);
      full = overflowed;
    }
    if (overflowed) {
      overflowed = false;
      observer.observe(doc, OBSERVED);
      for (const root of roots.keys()) if (root !== doc) observer.observe(root, OBSERVED);
    }
    const base = full ? -1 : (request.base ?? -1);
    let counter = 0;
    let referred = false;
    let truncated = false;
    let headDepth = 0;
    let shadowDepth = 0;
    const custom: string[] = [];

    /** A reference to `key`'s subtree as `base` had it, or undefined when it must be walked. */
    const refer = (key: object, at: Context): SnapshotNode | undefined => {
      const p = placed.get(key);
      if (p === undefined || p.number !== at.walked || counter + p.size > SNAPSHOT_LIMITS.maxNodes) return undefined;
      const baseIndex = p.index + at.delta;
      counter += p.size;
      p.number = number;
      p.index = counter - 1;
      if (p.custom !== undefined) for (const name of p.custom) custom.push(name);
      referred = true;
      return [[1, baseIndex]];
    };

    /** Where `key`'s children were in `base`, when `key` itself was in it (found through its parent's context). */
    const inner = (key: object, at: Context): Context => {
      const p = placed.get(key);
      if (p === undefined || p.number !== at.walked) return UNPLACED;
      return { walked: p.walkedNumber, delta: p.index + at.delta - p.walkedIndex };
    };

    /** Records a walked node's place; `from` is the counter before its subtree. */
    const place = (key: object, from: number, customFrom: number): number => {
      const index = counter++;
      const names = custom.length > customFrom ? [...new Set(custom.slice(customFrom))] : undefined;
      const p = placed.get(key);
      if (p === undefined) placed.set(key, { number, index, size: counter - from, walkedNumber: number, walkedIndex: index, custom: names });
      else {
        p.number = p.walkedNumber = number;
        p.index = p.walkedIndex = index;
        p.size = counter - from;
        p.custom = names;
      }
      return index;
    };

    /** A leaf whose content is `text`: a reference when `same` and placed, else `node`. */
    const leaf = (key: object, same: boolean, at: Context, node: SnapshotNode): SnapshotNode => {
      if (same) {
        const ref = refer(key, at);
        if (ref !== undefined) return ref;
      }
      place(key, counter, custom.length);
      return node;
    };

    const visit = (node: Node, at: Context): SnapshotNode | undefined => {
      if (counter >= SNAPSHOT_LIMITS.maxNodes) {
        truncated = true;
        return undefined;
      }
      const fresh = added.has(node);
      if (!fresh && !dirty.has(node)) {
        const ref = refer(node, at);
        if (ref !== undefined) return ref;
      }
      const type = node.nodeType;
      if (type === Node.TEXT_NODE) {
        const text = (node as Text).data;
        place(node, counter, custom.length);
        return text;
      }
      const within = fresh ? UNPLACED : inner(node, at);
      if (type === Node.DOCUMENT_FRAGMENT_NODE) return visitShadowRoot(node as ShadowRoot, within);
      if (type !== Node.ELEMENT_NODE) return undefined;
      const element = node as Element;
      const name = element.nodeName;
      if (skipped(element, name, headDepth)) return undefined;
      const from = counter;
      const customFrom = custom.length;

      const attrs: Record<string, string> = {};
      const result: [string, Record<string, string>, ...SnapshotNode[]] = [name, attrs];
      const masked = (name === 'INPUT' || name === 'TEXTAREA') && mask !== '' && element.matches(mask);
      const attributes = element.attributes;
      for (let i = 0; i < attributes.length; i++) {
        const attr = attributes[i]!;
        const attrName = attr.name;
        if (skippedAttribute(name, attrName)) continue;
        let value = attr.value;
        if (masked && attrName === 'value') value = value === '' ? '' : SNAPSHOT_MASK;
        else if ((attrName === 'href' || attrName === 'src') && UNSAFE_URL.test(value)) value = '';
        attrs[attrName] = value;
      }
      if (name === 'INPUT' || name === 'TEXTAREA') {
        const field = element as HTMLInputElement | HTMLTextAreaElement;
        if (field.type !== 'file') attrs[A.value] = masked && field.value !== '' ? SNAPSHOT_MASK : field.value;
        if (field.type === 'checkbox' || field.type === 'radio') attrs[A.checked] = String((field as HTMLInputElement).checked);
      } else if (name === 'OPTION') {
        attrs[A.selected] = String((element as HTMLOptionElement).selected);
      } else if (name === 'IFRAME' || name === 'FRAME') {
        const frameId = frames.get(element);
        attrs.src = frameId === undefined ? '' : `/snapshot/${frameId}`;
      } else if (name === 'IMG') {
        const current = (element as HTMLImageElement).currentSrc;
        if (current !== '' && !UNSAFE_URL.test(current)) attrs[A.currentSrc] = current;
      } else if (name === 'LINK') {
        const text = linkSheetText(element as HTMLLinkElement);
        if (text !== undefined) attrs[A.sheet] = text;
      } else if (name === 'DIALOG' && element.matches(':modal')) {
        attrs[A.dialogOpen] = 'modal';
      }
      if (element.hasAttribute('popover') && element.matches(':popover-open')) attrs[A.popoverOpen] = 'true';
      if (element.localName.includes('-') && element.matches(':defined')) custom.push(element.localName);
      // Reading a scroll position costs a layout check per element (docs/performance.md "What
      // was tried"): the first snapshot reads every element's (the page may have scrolled before
      // the listener was there); the others, keyframes included, only those that scrolled since
      // (the scroll listener) or were scrolled, and those in shadow roots.
      if (number === 1 || shadowDepth > 0 || scrolled.has(element)) {
        const scrollTop = element.scrollTop;
        if (scrollTop) attrs[A.scrollTop] = String(scrollTop);
        const scrollLeft = element.scrollLeft;
        if (scrollLeft) attrs[A.scrollLeft] = String(scrollLeft);
        if (scrollTop || scrollLeft) scrolled.add(element);
        else scrolled.delete(element);
      }
      const state = volatileState(element, name, mask);
      if (state !== undefined) watched.set(element, state);
      else watched.delete(element);

      const shadow = shadowRootOf(element);
      if (shadow !== null) {
        const n = visit(shadow, within);
        if (n !== undefined) result.push(n);
      }
      if (name === 'STYLE') {
        // The style sheet as the page has it (a script may have changed it through the CSSOM).
        const text = styleText(element as HTMLStyleElement);
        let known = styleTexts.get(element);
        if (known === undefined) styleTexts.set(element, (known = { key: {}, text }));
        result.push(leaf(known.key, known.text === text, within, text));
        known.text = text;
      } else if (name !== 'TEXTAREA') {
        // A textarea's text is its default value: its current value is A.value (masked when it must be).
        if (name === 'HEAD') {
          headDepth++;
          heads.add(element);
          const href = doc.baseURI;
          fakeBase.setAttribute('href', href);
          result.push(leaf(fakeBase, href === fakeBaseHref, within, ['BASE', { href }]));
          fakeBaseHref = href;
        }
        for (let c = element.firstChild; c !== null; c = c.nextSibling) {
          const n = visit(c, within);
          if (n !== undefined) result.push(n);
        }
        if (name === 'HEAD') headDepth--;
      }
      if (element === doc.documentElement) visitSheets(doc, result, within);
      if (name === 'BODY' && custom.length > 0) attrs[A.customElements] = [...new Set(custom)].join(',');
      if (result.length === 2 && Object.keys(attrs).length === 0) result.pop();
      place(element, from, customFrom);
      return result;
    };

    const visitShadowRoot = (root: ShadowRoot, within: Context): SnapshotNode => {
      if (!roots.has(root)) {
        observer!.observe(root, OBSERVED);
        root.addEventListener('scroll', onScroll, { capture: true, passive: true });
        roots.set(root, { sheets: [], texts: [], keys: [] });
      }
      const from = counter;
      const customFrom = custom.length;
      const result: [string, Record<string, string>, ...SnapshotNode[]] = ['template', { [A.shadowRoot]: root.mode }];
      shadowDepth++;
      for (let c = root.firstChild; c !== null; c = c.nextSibling) {
        const n = visit(c, within);
        if (n !== undefined) result.push(n);
      }
      shadowDepth--;
      visitSheets(root, result, within);
      place(root, from, customFrom);
      return result;
    };

    /** Appends a document's or shadow root's adopted sheets, each a reference when its slot holds the same sheet and text. */
    const visitSheets = (root: Document | ShadowRoot, result: { push(node: SnapshotNode): number }, within: Context): void => {
      let state = roots.get(root);
      if (state === undefined) roots.set(root, (state = { sheets: [], texts: [], keys: [] }));
      const sheets = adoptedSheets(root);
      const texts: string[] = [];
      for (let i = 0; i < sheets.length; i++) {
        const sheet = sheets[i]!;
        const text = sheetText(sheet);
        texts.push(text);
        const key = (state.keys[i] ??= {});
        result.push(leaf(key, sheet === state.sheets[i] && text === state.texts[i], within, ['template', { [A.styleSheet]: text }]));
      }
      state.sheets = [...sheets];
      state.texts = texts;
    };

    const root = doc.documentElement;
    const html = (root !== null ? visit(root, base === -1 ? UNPLACED : { walked: base, delta: 0 }) : undefined) ?? ['HTML'];
    dirty.clear();
    added.clear();
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
      if (frames.get(element) === frameId) return;
      frames.set(element, frameId);
      markDirty(element);
    },
    pause: overflow,
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

function randomId(): string {
  const bytes = new Uint8Array(6);
  crypto.getRandomValues(bytes);
  let out = '';
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
}
