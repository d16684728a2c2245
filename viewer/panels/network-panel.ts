// The network panel: one row per request (redirects folded in) with status, method, URL, type,
// size, duration and a waterfall bar placed on the timeline's visible range; Enter or a click
// opens its headers and bodies below the list.

import { h, replaceChildren, setText } from '../dom.ts';
import { bytes, clock, duration, shortUrl } from '../format.ts';
import type { Changes, NetworkEntry, SessionModel } from '../model.ts';
import { FilteredRows, inTarget, type ViewFilter } from '../view-filter.ts';
import { VirtualList } from '../virtual-list.ts';
import type { Panel } from './panel.ts';

const ROW_HEIGHT = 24;

const TYPE_GROUPS: Record<string, (type: string) => boolean> = {
  All: () => true,
  Document: (t) => t === 'Document',
  'Fetch/XHR': (t) => t === 'Fetch' || t === 'XHR' || t === 'EventSource',
  Script: (t) => t === 'Script',
  Stylesheet: (t) => t === 'Stylesheet',
  Image: (t) => t === 'Image',
  Other: (t) => !['Document', 'Fetch', 'XHR', 'EventSource', 'Script', 'Stylesheet', 'Image'].includes(t),
};

export class NetworkPanel implements Panel {
  readonly id = 'network';
  readonly title = 'Network';
  readonly element: HTMLElement;
  private readonly rows: FilteredRows<NetworkEntry>;
  private readonly list: VirtualList<NetworkEntry>;
  private readonly details: HTMLElement;
  private readonly counter: HTMLElement;
  private query = '';
  private failedOnly = false;
  private typeGroup = 'All';
  private shown_: NetworkEntry | undefined;

  constructor(
    private readonly model: SessionModel,
    private readonly filter: () => ViewFilter,
    /** The timeline's visible range (unix µs), for the waterfall. */
    private readonly range: () => { start: number; end: number },
    /** A request was selected (a click, or the keys): its moment is shown (the timeline, the replay). */
    private readonly choose?: (entry: NetworkEntry) => void,
  ) {
    this.rows = new FilteredRows(
      model,
      () => model.network,
      (entry) => this.matches(entry),
    );
    this.list = new VirtualList<NetworkEntry>({
      label: 'Network requests',
      rowHeight: ROW_HEIGHT,
      order: (entry) => entry.seq,
      render: (entry, element) => {
        this.renderRow(entry, element);
        // An effect of the action selected in the timeline's Actions lane (docs/viewer.md "Actions").
        element.classList.toggle('effect', this.model.effectSeqs.has(entry.seq));
      },
      activate: (entry) => this.open(entry),
      select: (entry) => {
        if (entry !== undefined) this.choose?.(entry);
      },
    });
    const search = h('input', { type: 'search', placeholder: 'Filter URL', 'aria-label': 'Filter request URLs', class: 'search' });
    let timer: ReturnType<typeof setTimeout> | undefined;
    search.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        this.query = search.value.trim().toLowerCase();
        this.refilter();
      }, 120);
    });
    const failed = h('button', { type: 'button', 'aria-pressed': 'false' }, 'Failed only');
    failed.addEventListener('click', () => {
      this.failedOnly = !this.failedOnly;
      failed.setAttribute('aria-pressed', String(this.failedOnly));
      this.refilter();
    });
    const type = h('select', { 'aria-label': 'Resource type' }, ...Object.keys(TYPE_GROUPS).map((name) => h('option', { value: name }, name)));
    type.addEventListener('change', () => {
      this.typeGroup = type.value;
      this.refilter();
    });
    this.counter = h('span', { class: 'count', 'aria-live': 'polite' });
    this.details = h('section', { class: 'network-details', 'aria-label': 'Request details', hidden: true, tabindex: -1 });
    this.element = h(
      'div',
      { class: 'panel network-panel' },
      h('div', { class: 'panel-bar', role: 'toolbar', 'aria-label': 'Network filters' }, search, type, failed, this.counter),
      h(
        'div',
        { class: 'net-head', 'aria-hidden': 'true' },
        ...['Status', 'Method', 'URL', 'Type', 'Size', 'Time', 'Waterfall'].map((name) => h('span', { class: `cell ${name.toLowerCase()}` }, name)),
      ),
      this.list.element,
      this.details,
    );
  }

  count(): number {
    return this.rows.items.length;
  }

  showCounts(): void {
    setText(this.counter, `${this.rows.items.length} of ${this.model.network.length}`);
  }

  update(changes: Changes, rebuild: boolean): void {
    if (!changes.network && !rebuild) return;
    // An entry's outcome arrives after its row: "failed only" must look again.
    this.rows.sync(rebuild || (changes.network && this.failedOnly));
    this.list.setItems(this.rows.items, [], rebuild);
    if (this.shown_ !== undefined && changes.network && signature(this.shown_) !== this.details.dataset.signature) this.fillDetails(this.shown_);
  }

  /** The timeline moved: the waterfall bars follow. */
  rangeChanged(): void {
    this.list.refresh();
  }

  /** The selected action changed: its effects' rows are marked. */
  effectsChanged(): void {
    this.list.refresh();
  }

  shown(): void {
    this.list.setActive(true);
  }

  hidden(): void {
    this.list.setActive(false);
  }

  private refilter(): void {
    this.update({ network: true } as Changes, true);
  }

  private matches(entry: NetworkEntry): boolean {
    const filter = this.filter();
    if (!filter.categories.has('network') || !inTarget(filter, entry.targetId)) return false;
    if (this.failedOnly && entry.failed === undefined && (entry.status === undefined || entry.status < 400)) return false;
    if (!TYPE_GROUPS[this.typeGroup]!(entry.resourceType)) return false;
    return this.query === '' || entry.url.toLowerCase().includes(this.query);
  }

  private renderRow(entry: NetworkEntry, element: HTMLElement): void {
    if (element.childElementCount === 0) {
      element.append(
        ...['status', 'method', 'url', 'type', 'size', 'time'].map((name) => h('span', { class: `cell ${name}` })),
        h('span', { class: 'cell waterfall' }, h('span', { class: 'bar' })),
      );
    }
    const [status, method, url, type, size, time, waterfall] = element.children as unknown as HTMLElement[];
    const failed = entry.failed !== undefined || (entry.status !== undefined && entry.status >= 400);
    element.className = `vrow net-row${failed ? ' failed' : ''}${entry.endTs === undefined ? ' pending' : ''}`;
    setText(status!, entry.failed !== undefined ? (entry.canceled ? 'canceled' : 'failed') : entry.status === undefined ? '…' : String(entry.status));
    setText(method!, entry.method);
    setText(url!, shortUrl(entry.url));
    url!.title = entry.url;
    setText(type!, entry.resourceType);
    setText(size!, entry.size === undefined ? '' : bytes(entry.size));
    setText(time!, entry.endTs === undefined ? '' : duration((entry.endTs - entry.ts) / 1000));
    const { start, end } = this.range();
    const span = end - start;
    const from = Math.max(0, Math.min(1, (entry.ts - start) / span));
    const to = Math.max(from, Math.min(1, ((entry.endTs ?? this.model.maxTs) - start) / span));
    const bar = waterfall!.firstElementChild as HTMLElement;
    bar.style.left = `${(from * 100).toFixed(2)}%`;
    bar.style.width = `max(2px, ${((to - from) * 100).toFixed(2)}%)`;
  }

  private open(entry: NetworkEntry): void {
    this.shown_ = entry;
    this.fillDetails(entry);
    this.details.hidden = false;
  }

  private fillDetails(entry: NetworkEntry): void {
    this.details.dataset.signature = signature(entry);
    const close = h('button', { type: 'button', class: 'close', 'aria-label': 'Close request details' }, '×');
    close.addEventListener('click', () => {
      this.details.hidden = true;
      this.shown_ = undefined;
      this.list.element.focus();
    });
    const general: Array<[string, string]> = [
      ['URL', entry.url],
      ['Method', entry.method],
      [
        'Status',
        entry.failed !== undefined
          ? `${entry.failed}${entry.canceled ? ' (canceled)' : ''}`
          : entry.status === undefined
            ? 'pending'
            : `${entry.status} ${entry.statusText}`,
      ],
      ['Type', entry.resourceType],
      ['MIME type', entry.mimeType],
      ['Started', clock(entry.ts)],
      ['Duration', entry.endTs === undefined ? 'pending' : duration((entry.endTs - entry.ts) / 1000)],
      ['Size', entry.size === undefined ? '' : bytes(entry.size)],
      ['Request id', entry.requestId],
      ['Target', entry.targetId ?? ''],
    ];
    for (const from of entry.redirects) general.push(['Redirected from', from]);
    replaceChildren(
      this.details,
      h('div', { class: 'details-bar' }, h('h3', {}, shortUrl(entry.url)), close),
      section('General', table(general), true),
      section('Request headers', table(Object.entries(entry.requestHeaders)), true),
      entry.responseHeaders && section('Response headers', table(Object.entries(entry.responseHeaders)), true),
      entry.postData !== undefined && section('Request body', h('pre', { class: 'body' }, entry.postData), false),
      section(
        'Response body',
        entry.body === undefined
          ? h('p', { class: 'hint' }, entry.truncated ? 'Not kept: larger than the agent fetches.' : 'No body (not textual, not fetched, or not finished).')
          : h('pre', { class: 'body' }, entry.body, entry.truncated ? '\n… (truncated by the agent)' : ''),
        false,
      ),
    );
  }
}

/** What of an entry can still change: its details are filled again when this does. */
function signature(entry: NetworkEntry): string {
  return `${entry.seq}|${entry.status}|${entry.endTs}|${entry.failed}|${entry.redirects.length}`;
}

function section(title: string, content: Node, open: boolean): HTMLElement {
  return h('details', { open }, h('summary', {}, title), content);
}

function table(rows: Array<[string, string]>): HTMLElement {
  return h('dl', { class: 'kv' }, ...rows.flatMap(([name, value]) => [h('dt', {}, name), h('dd', {}, value)]));
}
