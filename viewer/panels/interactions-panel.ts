// The interactions panel: clicks, keys and settled scrolls with their selector. Choosing one
// (Enter or a click) marks its moment on the timeline.

import { h, setText } from '../dom.ts';
import { clock } from '../format.ts';
import type { Changes, InteractionKind, InteractionRow, SessionModel } from '../model.ts';
import { FilteredRows, inTarget, type ViewFilter } from '../view-filter.ts';
import { VirtualList } from '../virtual-list.ts';
import type { Panel } from './panel.ts';

const KINDS: InteractionKind[] = ['click', 'key', 'scroll'];

export class InteractionsPanel implements Panel {
  readonly id = 'interactions';
  readonly title = 'Interactions';
  readonly element: HTMLElement;
  private readonly kinds = new Set<InteractionKind>(KINDS);
  private readonly rows: FilteredRows<InteractionRow>;
  private readonly list: VirtualList<InteractionRow>;
  private readonly counter: HTMLElement;

  constructor(
    private readonly model: SessionModel,
    private readonly filter: () => ViewFilter,
    /** An interaction was chosen: show its moment. */
    private readonly choose: (row: InteractionRow) => void,
  ) {
    this.rows = new FilteredRows(
      model,
      () => model.interactions,
      (row) => this.matches(row),
    );
    this.list = new VirtualList<InteractionRow>({
      label: 'Interactions',
      rowHeight: 24,
      order: (row) => row.seq,
      render: (row, element) => this.renderRow(row, element),
      activate: (row) => this.choose(row),
    });
    const toggles = KINDS.map((kind) => {
      const button = h('button', { type: 'button', 'aria-pressed': 'true' }, kind === 'click' ? 'Clicks' : kind === 'key' ? 'Keys' : 'Scrolls');
      button.addEventListener('click', () => {
        if (this.kinds.has(kind)) this.kinds.delete(kind);
        else this.kinds.add(kind);
        button.setAttribute('aria-pressed', String(this.kinds.has(kind)));
        this.update({ interactions: true } as Changes, true);
      });
      return button;
    });
    this.counter = h('span', { class: 'count', 'aria-live': 'polite' });
    this.element = h(
      'div',
      { class: 'panel interactions-panel' },
      h(
        'div',
        { class: 'panel-bar', role: 'toolbar', 'aria-label': 'Interaction filters' },
        h('span', { class: 'group', role: 'group', 'aria-label': 'Kinds' }, ...toggles),
        this.counter,
        h('span', { class: 'hint' }, 'Enter or click: show on the timeline'),
      ),
      this.list.element,
    );
  }

  count(): number {
    return this.rows.items.length;
  }

  showCounts(): void {
    setText(this.counter, `${this.rows.items.length} of ${this.model.interactions.length}`);
  }

  update(changes: Changes, rebuild: boolean): void {
    if (!changes.interactions && !rebuild) return;
    this.rows.sync(rebuild);
    this.list.setItems(this.rows.items, [], rebuild);
  }

  shown(): void {
    this.list.setActive(true);
  }

  hidden(): void {
    this.list.setActive(false);
  }

  private matches(row: InteractionRow): boolean {
    const filter = this.filter();
    return filter.categories.has('interaction') && inTarget(filter, row.targetId) && this.kinds.has(row.kind);
  }

  private renderRow(row: InteractionRow, element: HTMLElement): void {
    if (element.childElementCount === 0) {
      element.append(
        h('span', { class: 'cell time' }),
        h('span', { class: 'cell kind' }),
        h('span', { class: 'cell selector' }),
        h('span', { class: 'cell detail' }),
      );
    }
    const [time, kind, selector, detail] = element.children as unknown as HTMLElement[];
    element.className = `vrow interaction-row kind-${row.kind}`;
    setText(time!, clock(row.ts));
    setText(kind!, row.kind);
    setText(selector!, row.selector);
    selector!.title = row.selector;
    setText(detail!, row.detail);
  }
}
