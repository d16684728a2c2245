// A virtualised list: only the rows in view (plus a margin) exist in the DOM, recycled as the list
// scrolls, so 50,000 console lines cost what 40 do. Rows have one height, except expanded ones
// (a stack trace), which add theirs. Keyboard: a listbox with aria-activedescendant; arrows, Page
// Up/Down, Home/End move the selection, Enter activates it. While scrolled to the bottom the list
// follows new rows (docs/viewer.md "Keyboard").

import { h } from './dom.ts';

export interface ListOptions<T> {
  label: string;
  rowHeight: number;
  /** Sort key of the items (their seq): finds an item's index by binary search. */
  order: (item: T) => number;
  /** Fills a row element for `item` (called for every row in view at each render). */
  render: (item: T, row: HTMLElement) => void;
  /** Extra height of an expanded item. */
  extraHeight?: (item: T) => number;
  /** Enter on the selected item, or a click on one. */
  activate?: (item: T) => void;
  /** The selection moved. */
  select?: (item: T | undefined) => void;
}

const OVERSCAN = 8;
const DATA_RENDER_MS = 100;

export class VirtualList<T> {
  readonly element: HTMLDivElement;
  private readonly sizer: HTMLDivElement;
  private items: readonly T[] = [];
  /** [index, extra px] of expanded items, by index. */
  private extras: Array<[number, number]> = [];
  private expanded: readonly T[] = [];
  private selected: T | undefined;
  private readonly rendered = new Map<T, HTMLElement>();
  private readonly itemOf = new WeakMap<Element, T>();
  private readonly pool: HTMLElement[] = [];
  private follow = true;
  private active = true;
  private viewHeight = 0;
  private sizerHeight = -1;
  private lastRender = 0;
  private dataTimer: ReturnType<typeof setTimeout> | undefined;
  /** What each row element was last given, so unchanged values are not written again. */
  private readonly written = new WeakMap<HTMLElement, { id: string; offset: number; height: number; position: number; size: number; selected: boolean }>();
  /** Where the list last scrolled itself (following new rows). */
  private ownScrollTop = -1;
  private frame = 0;
  private readonly idPrefix: string;
  private static lists = 0;

  constructor(private readonly options: ListOptions<T>) {
    this.idPrefix = `list${++VirtualList.lists}`;
    this.sizer = h('div', { class: 'vlist-sizer' });
    this.element = h('div', { class: 'vlist', role: 'listbox', tabindex: 0, 'aria-label': options.label }, this.sizer);
    this.element.addEventListener('scroll', () => {
      const el = this.element;
      // Scroll events come a frame late: one caused by our own jump to the bottom must not be
      // judged against a list that has grown since, nor draw the rows again.
      if (Math.abs(el.scrollTop - this.ownScrollTop) <= 1) return; // our own jump: already drawn
      this.follow = el.scrollTop + el.clientHeight >= el.scrollHeight - 4;
      this.schedule();
    });
    this.element.addEventListener('keydown', (event) => this.onKey(event));
    this.element.addEventListener('click', (event) => {
      const row = (event.target as Element).closest('.vrow');
      const item = row ? this.itemOf.get(row) : undefined;
      if (item === undefined) return;
      // Clicks on controls inside a row (links, buttons) are theirs.
      if ((event.target as Element).closest('a, button') && (event.target as Element).closest('a, button') !== row) return;
      this.setSelected(item);
      this.options.activate?.(item);
    });
    // The viewport's height, kept here: reading clientHeight at every render would force a
    // layout per frame while rows stream in.
    new ResizeObserver((entries) => {
      this.viewHeight = entries[entries.length - 1]!.contentRect.height;
      this.schedule();
    }).observe(this.element);
  }

  /** A list out of view renders nothing until it is back (its items are still kept). */
  setActive(active: boolean): void {
    this.active = active;
    // display: none forgot the scroll position.
    this.ownScrollTop = -1;
    if (active) this.render();
  }

  get length(): number {
    return this.items.length;
  }

  get selection(): T | undefined {
    return this.selected;
  }

  /**
   * Replaces the items (sorted by `order`); `expanded` are those shown with their extra height.
   * New rows streaming in are drawn at most every DATA_RENDER_MS (a person cannot read faster, and
   * each redraw costs style, layout and paint); `now` draws at once (a filter or a toggle).
   */
  setItems(items: readonly T[], expanded: readonly T[] = this.expanded, now = false): void {
    this.items = items;
    this.expanded = expanded;
    this.computeExtras();
    if (this.selected !== undefined && this.indexOf(this.selected) === -1) this.setSelected(undefined);
    const wait = DATA_RENDER_MS - (performance.now() - this.lastRender);
    if (now || wait <= 0) this.render();
    else if (this.dataTimer === undefined) {
      this.dataTimer = setTimeout(() => {
        this.dataTimer = undefined;
        this.render();
      }, wait);
    }
  }

  /** Re-render the rows in view (an item changed, or the list became visible). */
  refresh(): void {
    this.computeExtras();
    this.render();
  }

  /** Select `item` and scroll it into view. */
  reveal(item: T): void {
    this.setSelected(item);
    this.scrollToIndex(this.indexOf(item));
  }

  private schedule(): void {
    if (this.frame !== 0) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  private computeExtras(): void {
    const extra = this.options.extraHeight;
    this.extras = [];
    if (!extra) return;
    for (const item of this.expanded) {
      const index = this.indexOf(item);
      if (index !== -1) this.extras.push([index, extra(item)]);
    }
    this.extras.sort((a, b) => a[0] - b[0]);
  }

  private offsetOf(index: number): number {
    let offset = index * this.options.rowHeight;
    for (const [i, extra] of this.extras) {
      if (i >= index) break;
      offset += extra;
    }
    return offset;
  }

  private indexAt(y: number): number {
    const height = this.options.rowHeight;
    let before = 0;
    for (const [i, extra] of this.extras) {
      const top = i * height + before;
      if (y < top) break;
      if (y < top + height + extra) return i;
      before += extra;
    }
    return Math.max(0, Math.floor((y - before) / height));
  }

  private extraAt(index: number): number {
    for (const [i, extra] of this.extras) if (i === index) return extra;
    return 0;
  }

  private get totalHeight(): number {
    let total = this.items.length * this.options.rowHeight;
    for (const [, extra] of this.extras) total += extra;
    return total;
  }

  private render(): void {
    if (!this.active) return;
    this.lastRender = performance.now();
    const el = this.element;
    const total = this.totalHeight;
    if (total !== this.sizerHeight) {
      this.sizer.style.height = `${total}px`;
      this.sizerHeight = total;
    }
    const viewHeight = this.viewHeight;
    let top: number;
    if (this.follow && this.items.length > 0) {
      top = Math.max(0, total - viewHeight);
      if (top !== this.ownScrollTop) {
        el.scrollTop = top;
        this.ownScrollTop = top;
      }
    } else top = el.scrollTop;
    const wanted = new Set<T>();
    if (viewHeight > 0 && this.items.length > 0) {
      const first = Math.max(0, this.indexAt(top) - OVERSCAN);
      const last = Math.min(this.items.length - 1, this.indexAt(top + viewHeight) + OVERSCAN);
      for (let i = first; i <= last; i++) wanted.add(this.items[i]!);
    }
    for (const [item, row] of this.rendered) {
      if (wanted.has(item)) continue;
      this.rendered.delete(item);
      row.hidden = true;
      this.pool.push(row);
    }
    const size = this.items.length;
    for (const item of wanted) {
      let row = this.rendered.get(item);
      if (!row) {
        row = this.pool.pop() ?? this.sizer.appendChild(h('div', { class: 'vrow', role: 'option' }));
        row.hidden = false;
        this.rendered.set(item, row);
        this.itemOf.set(row, item);
      }
      const index = this.indexOf(item);
      const next = {
        id: `${this.idPrefix}-${this.options.order(item)}`,
        offset: this.offsetOf(index),
        height: this.options.rowHeight + this.extraAt(index),
        position: index + 1,
        size,
        selected: item === this.selected,
      };
      const was = this.written.get(row);
      if (was?.id !== next.id) row.id = next.id;
      if (was?.offset !== next.offset) row.style.transform = `translateY(${next.offset}px)`;
      if (was?.height !== next.height) row.style.height = `${next.height}px`;
      if (was?.position !== next.position) row.setAttribute('aria-posinset', String(next.position));
      if (was?.size !== next.size) row.setAttribute('aria-setsize', String(next.size));
      if (was?.selected !== next.selected) row.setAttribute('aria-selected', String(next.selected));
      this.written.set(row, next);
      this.options.render(item, row);
    }
    const active = this.selected !== undefined && this.rendered.has(this.selected) ? `${this.idPrefix}-${this.options.order(this.selected)}` : '';
    if (el.getAttribute('aria-activedescendant') !== active) el.setAttribute('aria-activedescendant', active);
  }

  private indexOf(item: T): number {
    const key = this.options.order(item);
    let lo = 0;
    let hi = this.items.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const k = this.options.order(this.items[mid]!);
      if (k === key) return this.items[mid] === item ? mid : this.items.indexOf(item);
      if (k < key) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  private setSelected(item: T | undefined): void {
    if (item === this.selected) return;
    this.selected = item;
    this.options.select?.(item);
    this.render();
  }

  private scrollToIndex(index: number): void {
    if (index < 0) return;
    const el = this.element;
    const top = this.offsetOf(index);
    const bottom = top + this.options.rowHeight;
    if (top < el.scrollTop) el.scrollTop = top;
    else if (bottom > el.scrollTop + el.clientHeight) el.scrollTop = bottom - el.clientHeight;
    this.follow = el.scrollTop + el.clientHeight >= el.scrollHeight - 4;
    this.render();
  }

  private onKey(event: KeyboardEvent): void {
    if (this.items.length === 0) return;
    const current = this.selected === undefined ? -1 : this.indexOf(this.selected);
    const page = Math.max(1, Math.floor(this.element.clientHeight / this.options.rowHeight) - 1);
    let next: number;
    switch (event.key) {
      case 'ArrowDown':
        next = current + 1;
        break;
      case 'ArrowUp':
        next = current === -1 ? this.items.length - 1 : current - 1;
        break;
      case 'PageDown':
        next = current + page;
        break;
      case 'PageUp':
        next = current === -1 ? this.items.length - 1 - page : current - page;
        break;
      case 'Home':
        next = 0;
        break;
      case 'End':
        next = this.items.length - 1;
        break;
      case 'Enter':
      case ' ':
        if (this.selected !== undefined) this.options.activate?.(this.selected);
        event.preventDefault();
        return;
      default:
        return;
    }
    event.preventDefault();
    next = Math.max(0, Math.min(this.items.length - 1, next));
    this.setSelected(this.items[next]);
    this.scrollToIndex(next);
  }
}
