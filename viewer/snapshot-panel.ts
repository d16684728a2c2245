// The page at the selected action (docs/viewer.md "Page snapshots"): its before- and
// after-snapshot (page_snapshot, docs/events.md "Snapshots"), read from the history when an
// action is selected, rebuilt (injected/snapshot-tree.ts) and shown beside the timeline, with the
// point the action hit marked on it.
//
// The page is the watched page's own markup, so it is shown inert: the snapshot is built with DOM
// calls (no markup is parsed) into an iframe sandboxed without scripts, which inherits the
// viewer's CSP (nothing is fetched but from the viewer's own origin, no inline style or script
// applies). Nothing that would load goes in: no script, no `src`, `srcset`, `href`, `poster` or
// `data`. Style sheets go in as constructed style sheets and style attributes through the CSSOM,
// which the CSP does not govern; form state, shadow roots and scroll positions as the page had
// them. Out-of-process and in-process frames alike are nested iframes built the same way.

import { SNAPSHOT_ATTRIBUTES as A, type Envelope, type FrameSnapshotData, type PageSnapshotData, type SnapshotAction } from '../injected/schema.ts';
import { SnapshotTrees, type TreeElement, type TreeEntry } from '../injected/snapshot-tree.ts';
import { h, setText } from './dom.ts';
import { clock } from './format.ts';

/** The action to show, as the timeline's Actions lane has it. */
export interface SnapshotSubject {
  actionId: string;
  targetId: string | undefined;
  /** Unix µs of its start. */
  ts: number;
}

type Phase = SnapshotAction['phase'];

/** History pages read, newest first, to find an action's snapshots and what they refer to. */
const PAGE_EVENTS = 20;
const MAX_PAGES = 20;
/** How long after an action starts its after-snapshot may come (the history read's end). */
const AFTER_WINDOW_US = 60_000_000;
/** How soon the same action's snapshots are read again while one is missing. */
const RELOAD_MS = 1000;

/** Attributes left out: anything that would load, or run. */
const DROPPED_ATTRIBUTES = new Set([
  'src',
  'srcset',
  'href',
  'xlink:href',
  'poster',
  'data',
  'action',
  'formaction',
  'background',
  'ping',
  'style',
  'srcdoc',
  'sandbox',
]);
/** A `url(…)` in a style sheet that would be fetched (not a data: URL). */
const FETCHED_URL = /url\(\s*(?!['"]?data:)[^)]*\)/gi;
const SVG_NS = 'http://www.w3.org/2000/svg';
const HTML_NS = 'http://www.w3.org/1999/xhtml';

interface Shown {
  /** Unix µs the snapshot was taken. */
  ts: number;
  data: PageSnapshotData;
  roots: Map<string, TreeEntry>;
  action: SnapshotAction;
}

export class SnapshotPanel {
  readonly element: HTMLElement;
  private readonly caption: HTMLElement;
  private readonly stage: HTMLElement;
  private readonly marker: HTMLElement;
  private readonly buttons: Record<Phase, HTMLButtonElement>;
  private phase: Phase = 'after';
  private subject: SnapshotSubject | undefined;
  private shown: Partial<Record<Phase, Shown>> = {};
  /** Increments per selection: a load that finishes after another selection is dropped. */
  private generation = 0;
  /** The selected action's load under way, or when its last one ended (performance.now()). */
  private loading = false;
  private loadedAt = 0;
  private frame: HTMLIFrameElement | undefined;

  constructor(
    /** `/browsers/{id}/` */
    private readonly session: URL,
    /** Whether the history route exists (capabilities.ts). */
    private readonly hasHistory: () => Promise<boolean>,
  ) {
    this.buttons = {
      before: h('button', { type: 'button', 'aria-pressed': 'false' }, 'Before'),
      after: h('button', { type: 'button', 'aria-pressed': 'true' }, 'After'),
    };
    for (const phase of ['before', 'after'] as const) this.buttons[phase].addEventListener('click', () => this.choose(phase));
    this.caption = h('p', { class: 'caption', 'aria-live': 'polite' }, 'Select an action on the timeline to see the page before and after it.');
    this.marker = h('div', { class: 'snapshot-hit', hidden: true, 'aria-hidden': 'true' });
    this.stage = h('div', { class: 'snapshot-stage' }, this.marker);
    this.element = h(
      'section',
      { class: 'snapshot-panel', 'aria-label': 'Page at the selected action' },
      h('h2', {}, 'Page'),
      h('div', { class: 'snapshot-phases', role: 'group', 'aria-label': 'When' }, this.buttons.before, this.buttons.after),
      this.caption,
      this.stage,
    );
  }

  /** An action was selected (undefined: none). */
  show(subject: SnapshotSubject | undefined): void {
    // The timeline selects the action again as its effects arrive: read again only while a
    // snapshot is missing (the after-snapshot comes once the action ended), at most once a second.
    if (subject !== undefined && subject.actionId === this.subject?.actionId) {
      const missing = this.shown.before === undefined || this.shown.after === undefined;
      if (this.loading || !missing || performance.now() - this.loadedAt < RELOAD_MS) return;
    }
    const generation = ++this.generation;
    this.loading = false;
    this.subject = subject;
    this.shown = {};
    this.clear();
    if (subject === undefined) {
      setText(this.caption, 'Select an action on the timeline to see the page before and after it.');
      return;
    }
    if (subject.targetId === undefined) {
      setText(this.caption, 'This action acted on no tab.');
      return;
    }
    const targetId = subject.targetId;
    setText(this.caption, 'Loading the page snapshots…');
    this.loading = true;
    const done = () => {
      if (generation !== this.generation) return false;
      this.loading = false;
      this.loadedAt = performance.now();
      return true;
    };
    // Whether there is a history is known once the capability probe has answered (an action
    // selected before that waits for it rather than being told there is none).
    void this.hasHistory()
      .then((history) => (history ? this.load(subject, targetId) : undefined))
      .then(
        (shown) => {
          if (!done()) return;
          if (shown === undefined) {
            setText(this.caption, 'Snapshots are read from the history, which this server does not offer.');
            return;
          }
          this.shown = shown;
          this.render();
        },
        (err: unknown) => {
          if (done()) setText(this.caption, `Could not read the snapshots: ${err instanceof Error ? err.message : String(err)}`);
        },
      );
  }

  private choose(phase: Phase): void {
    this.phase = phase;
    for (const p of ['before', 'after'] as const) this.buttons[p].setAttribute('aria-pressed', String(p === phase));
    this.render();
  }

  private clear(): void {
    this.frame?.remove();
    this.frame = undefined;
    this.marker.hidden = true;
  }

  /** The action's snapshots and, back to a full one per frame, the ones they refer to. */
  private async load(subject: SnapshotSubject, targetId: string): Promise<Partial<Record<Phase, Shown>>> {
    const until = new Date((subject.ts + AFTER_WINDOW_US) / 1000).toISOString();
    const collected: Collected[] = [];
    const wanted: Partial<Record<Phase, number>> = {};
    let offset: number | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const url = new URL('telemetry/events', this.session);
      url.search = new URLSearchParams({ type: 'page_snapshot', target_id: targetId, order: 'desc', limit: String(PAGE_EVENTS), until }).toString();
      if (offset !== undefined) url.searchParams.set('offset', String(offset));
      const response = await fetch(url, { credentials: 'same-origin', cache: 'no-store' });
      if (!response.ok) throw new Error(`the history answered ${response.status}`);
      const envelopes = (await response.json()) as Envelope[];
      for (const envelope of envelopes) {
        const data = envelope.event.data as PageSnapshotData | undefined;
        if (data === undefined || !Array.isArray(data.frames)) continue;
        collected.push({ seq: envelope.seq, ts: envelope.event.ts, data });
        for (const action of data.actions ?? []) if (action.action_id === subject.actionId) wanted[action.phase] ??= envelope.seq;
      }
      if (wanted.before !== undefined && complete(collected, wanted.before)) break;
      const next = Number(response.headers.get('x-next-offset'));
      if (response.headers.get('x-has-more') !== 'true' || !Number.isSafeInteger(next)) break;
      offset = next;
    }
    collected.sort((a, b) => a.seq - b.seq);
    const trees = new SnapshotTrees();
    const shown: Partial<Record<Phase, Shown>> = {};
    for (const { seq, ts, data } of collected) {
      const roots = new Map<string, TreeEntry>();
      for (const frame of data.frames) {
        const root = trees.add(frame);
        if (root !== undefined) roots.set(frame.frame_id, root);
      }
      for (const phase of ['before', 'after'] as const) {
        if (wanted[phase] !== seq) continue;
        const action = (data.actions ?? []).find((a) => a.action_id === subject.actionId && a.phase === phase)!;
        shown[phase] = { ts, data, roots, action };
      }
    }
    return shown;
  }

  private render(): void {
    this.clear();
    const subject = this.subject;
    const shown = this.shown[this.phase];
    if (subject === undefined) return;
    const main = shown?.data.frames[0];
    const root = main === undefined ? undefined : shown?.roots.get(main.frame_id);
    if (shown === undefined || main === undefined || root === undefined) {
      const other = this.phase === 'before' ? 'after' : 'before';
      setText(this.caption, `No snapshot ${this.phase} this action${this.shown[other] ? `; there is one ${other} it` : ''}.`);
      return;
    }
    const { width, height } = main.viewport;
    const frame = h('iframe', { sandbox: 'allow-same-origin', title: `The page ${this.phase} the action`, tabindex: -1 });
    this.frame = frame;
    this.stage.prepend(frame);
    const scale = Math.min(1, (this.stage.clientWidth || width) / width);
    frame.style.width = `${width}px`;
    frame.style.height = `${height}px`;
    frame.style.transform = `scale(${scale})`;
    this.stage.style.height = `${Math.ceil(height * scale)}px`;
    buildDocument(frame, main, root, shown);
    setText(this.caption, `${this.phase === 'before' ? 'Before' : 'After'} the action · ${clock(shown.ts)} · ${main.url}`);
    const { x, y } = shown.action;
    if (x !== undefined && y !== undefined) {
      this.marker.hidden = false;
      this.marker.style.left = `${x * scale}px`;
      this.marker.style.top = `${y * scale}px`;
    }
  }
}

interface Collected {
  seq: number;
  ts: number;
  data: PageSnapshotData;
}

/** Whether every frame of the snapshot at `seq` reaches back to a full snapshot among those collected. */
function complete(collected: readonly Collected[], seq: number): boolean {
  const target = collected.find((c) => c.seq === seq);
  if (target === undefined) return false;
  const frameOf = (frameId: string, doc: string, number: number) =>
    collected.flatMap((c) => c.data.frames).find((f) => f.frame_id === frameId && f.doc === doc && f.number === number);
  return target.data.frames.every((frame) => {
    let at: FrameSnapshotData | undefined = frame;
    while (at?.base !== undefined) at = frameOf(frame.frame_id, frame.doc, at.base);
    return at !== undefined;
  });
}

/** Builds a frame's snapshot into an iframe's (about:blank) document, then its child frames into theirs. */
function buildDocument(iframe: HTMLIFrameElement, frame: FrameSnapshotData, root: TreeEntry, shown: Shown): void {
  const doc = iframe.contentDocument;
  if (doc === null) return;
  // Standards mode, as the page had it: a doctype is the one markup written.
  if (frame.doctype !== undefined) {
    doc.open();
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the one way to give an about:blank frame standards mode before building into it synchronously
    doc.write('<!DOCTYPE html>');
    doc.close();
  }
  const builder = new DomBuilder(doc, shown);
  const built = builder.node(root, HTML_NS);
  // The nodes belong to the frame's realm: `instanceof` this window's classes would not hold.
  if (built?.nodeType !== Node.ELEMENT_NODE) return;
  if (doc.documentElement !== null) doc.replaceChild(built, doc.documentElement);
  else doc.append(built);
  builder.finish(doc);
}

/** A rebuilt tree as inert DOM nodes of one document. */
class DomBuilder {
  /** Style sheets of the document and of each shadow root. */
  private readonly sheets = new Map<Document | ShadowRoot, string[]>();
  private readonly scrolls: Array<{ element: Element; top: number; left: number }> = [];
  private readonly children: Array<{ element: HTMLIFrameElement; frameId: string }> = [];
  private scope: Document | ShadowRoot;

  constructor(
    private readonly doc: Document,
    private readonly shown: Shown,
  ) {
    this.scope = doc;
  }

  node(entry: TreeEntry, namespace: string): Node | undefined {
    const node = entry.node;
    if (typeof node === 'string') return this.doc.createTextNode(node);
    return this.element(node, namespace);
  }

  private element(node: TreeElement, parentNamespace: string): Node | undefined {
    const name = node.name;
    const lower = name.toLowerCase();
    const attrs = node.attrs;
    if (lower === 'script' || lower === 'base' || lower === 'meta') return undefined;
    if (lower === 'style') {
      this.sheet(node.children.map((c) => (typeof c.node === 'string' ? c.node : '')).join(''));
      return undefined;
    }
    if (lower === 'link') {
      const text = attrs[A.sheet];
      if (text !== undefined) this.sheet(text);
      return undefined;
    }
    const adopted = attrs[A.styleSheet];
    if (lower === 'template' && adopted !== undefined) {
      this.sheet(adopted);
      return undefined;
    }
    const namespace = lower === 'svg' || parentNamespace === SVG_NS ? SVG_NS : HTML_NS;
    const childNamespace = lower === 'foreignobject' ? HTML_NS : namespace;
    const element = namespace === SVG_NS ? this.doc.createElementNS(SVG_NS, name) : this.doc.createElement(lower === 'x-noscript' ? 'div' : name);
    for (const [attr, value] of Object.entries(attrs)) this.attribute(element, attr, value);
    if (attrs.style !== undefined) element.style.cssText = attrs.style;
    if ((lower === 'iframe' || lower === 'frame') && attrs.src?.startsWith('/snapshot/') === true) {
      const frameElement = this.doc.createElement('iframe');
      frameElement.setAttribute('sandbox', 'allow-same-origin');
      for (const [attr, value] of Object.entries(attrs)) this.attribute(frameElement, attr, value);
      this.children.push({ element: frameElement, frameId: attrs.src.slice('/snapshot/'.length) });
      return frameElement;
    }
    for (const child of node.children) {
      if (typeof child.node !== 'string' && child.node.name === 'template' && child.node.attrs[A.shadowRoot] !== undefined) {
        this.shadow(element, child.node);
        continue;
      }
      const built = this.node(child, childNamespace);
      if (built !== undefined) element.append(built);
    }
    return element;
  }

  private attribute(element: Element, attr: string, value: string): void {
    const lower = attr.toLowerCase();
    if (lower.startsWith('on') || DROPPED_ATTRIBUTES.has(lower)) return;
    if (attr.startsWith('__')) {
      if (attr === A.value && (element.localName === 'input' || element.localName === 'textarea')) {
        if (element.localName === 'textarea') element.textContent = value;
        else element.setAttribute('value', value);
      } else if (attr === A.checked && value === 'true') element.setAttribute('checked', '');
      else if (attr === A.selected && value === 'true') element.setAttribute('selected', '');
      else if (attr === A.scrollTop || attr === A.scrollLeft) this.scroll(element, attr === A.scrollTop ? 'top' : 'left', Number(value));
      return;
    }
    try {
      element.setAttribute(attr, value);
    } catch {
      // A name the DOM refuses (the page's markup allowed it): left out.
    }
  }

  private scroll(element: Element, axis: 'top' | 'left', value: number): void {
    let entry = this.scrolls.find((s) => s.element === element);
    if (entry === undefined) this.scrolls.push((entry = { element, top: 0, left: 0 }));
    entry[axis] = value;
  }

  private shadow(host: Element, template: TreeElement): void {
    let root: ShadowRoot;
    try {
      root = host.attachShadow({ mode: 'open' });
    } catch {
      return;
    }
    const outer = this.scope;
    this.scope = root;
    for (const child of template.children) {
      const built = this.node(child, HTML_NS);
      if (built !== undefined) root.append(built);
    }
    this.scope = outer;
  }

  private sheet(source: string): void {
    // What a sheet would fetch (images, fonts) stays out: the CSP would refuse it anyway, noisily.
    const text = source.replace(FETCHED_URL, 'none');
    const list = this.sheets.get(this.scope);
    if (list === undefined) this.sheets.set(this.scope, [text]);
    else list.push(text);
  }

  /** Style sheets, scroll positions and child frames, once the tree is in its document. */
  finish(doc: Document): void {
    const view = doc.defaultView;
    if (view !== null) {
      for (const [scope, texts] of this.sheets) {
        const sheets = texts.map((text) => {
          const sheet = new view.CSSStyleSheet();
          try {
            sheet.replaceSync(text);
          } catch {
            // Unparsable text: an empty sheet.
          }
          return sheet;
        });
        scope.adoptedStyleSheets = sheets;
      }
    }
    for (const { element, top, left } of this.scrolls) {
      element.scrollTop = top;
      element.scrollLeft = left;
    }
    for (const { element, frameId } of this.children) {
      const frame = this.shown.data.frames.find((f) => f.frame_id === frameId);
      const root = frame === undefined ? undefined : this.shown.roots.get(frameId);
      if (frame !== undefined && root !== undefined) buildDocument(element, frame, root, this.shown);
    }
  }
}
