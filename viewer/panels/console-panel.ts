// The console panel: every console message and uncaught exception, filtered by level and by text;
// a row with a stack trace expands (Enter or a click) to show it.

import type { StackTrace } from '../../injected/schema.ts';
import { h, setText } from '../dom.ts';
import { clock } from '../format.ts';
import { CONSOLE_LEVELS, type Changes, type ConsoleLevel, type ConsoleRow, type SessionModel } from '../model.ts';
import { FilteredRows, inTarget, type ViewFilter } from '../view-filter.ts';
import { VirtualList } from '../virtual-list.ts';
import type { Panel } from './panel.ts';

const ROW_HEIGHT = 24;
const STACK_LINE = 18;

const LEVEL_LABELS: Record<ConsoleLevel, string> = { error: 'Errors', warning: 'Warnings', info: 'Info', log: 'Logs', debug: 'Debug' };

export class ConsolePanel implements Panel {
  readonly id = 'console';
  readonly title = 'Console';
  readonly element: HTMLElement;
  private readonly levels = new Set<ConsoleLevel>(CONSOLE_LEVELS);
  private query = '';
  private readonly rows: FilteredRows<ConsoleRow>;
  private readonly list: VirtualList<ConsoleRow>;
  private readonly expanded = new Set<ConsoleRow>();
  private readonly counter: HTMLElement;

  constructor(
    private readonly model: SessionModel,
    private readonly filter: () => ViewFilter,
    /** A message was selected (a click, or the keys): its moment is shown (the timeline, the replay). */
    private readonly choose?: (row: ConsoleRow) => void,
  ) {
    this.rows = new FilteredRows(
      model,
      () => model.console,
      (row) => this.matches(row),
    );
    this.list = new VirtualList<ConsoleRow>({
      label: 'Console messages',
      rowHeight: ROW_HEIGHT,
      order: (row) => row.seq,
      render: (row, element) => {
        this.renderRow(row, element);
        // An effect of the action selected in the timeline's Actions lane (docs/viewer.md "Actions").
        element.classList.toggle('effect', this.model.effectSeqs.has(row.seq));
      },
      extraHeight: (row) => stackLines(row.stack).length * STACK_LINE + 6,
      activate: (row) => this.toggle(row),
      select: (row) => {
        if (row !== undefined) this.choose?.(row);
      },
    });
    const levelButtons = CONSOLE_LEVELS.map((level) => {
      const button = h('button', { type: 'button', class: `level-toggle level-${level}`, 'aria-pressed': 'true' }, LEVEL_LABELS[level]);
      button.addEventListener('click', () => {
        if (this.levels.has(level)) this.levels.delete(level);
        else this.levels.add(level);
        button.setAttribute('aria-pressed', String(this.levels.has(level)));
        this.refilter();
      });
      return button;
    });
    const search = h('input', { type: 'search', placeholder: 'Filter text', 'aria-label': 'Filter console text', class: 'search' });
    let timer: ReturnType<typeof setTimeout> | undefined;
    search.addEventListener('input', () => {
      clearTimeout(timer);
      // One pass over the messages per pause in typing, not per key.
      timer = setTimeout(() => {
        this.query = search.value.trim().toLowerCase();
        this.refilter();
      }, 120);
    });
    this.counter = h('span', { class: 'count', 'aria-live': 'polite' });
    this.element = h(
      'div',
      { class: 'panel console-panel' },
      h(
        'div',
        { class: 'panel-bar', role: 'toolbar', 'aria-label': 'Console filters' },
        h('span', { class: 'group', role: 'group', 'aria-label': 'Levels' }, ...levelButtons),
        search,
        this.counter,
      ),
      this.list.element,
    );
  }

  count(): number {
    return this.rows.items.length;
  }

  showCounts(): void {
    setText(this.counter, `${this.rows.items.length} of ${this.model.console.length}`);
  }

  update(changes: Changes, rebuild: boolean): void {
    if (!changes.console && !rebuild) return;
    this.rows.sync(rebuild);
    this.list.setItems(this.rows.items, [...this.expanded], rebuild);
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
    this.update({ console: true } as Changes, true);
  }

  private matches(row: ConsoleRow): boolean {
    const filter = this.filter();
    if (!filter.categories.has('console') || !inTarget(filter, row.targetId) || !this.levels.has(row.level)) return false;
    return this.query === '' || row.text.toLowerCase().includes(this.query) || row.origin.toLowerCase().includes(this.query);
  }

  private toggle(row: ConsoleRow): void {
    if (row.stack === undefined) return;
    if (this.expanded.has(row)) this.expanded.delete(row);
    else this.expanded.add(row);
    this.list.setItems(this.rows.items, [...this.expanded], true);
  }

  private renderRow(row: ConsoleRow, element: HTMLElement): void {
    if (element.childElementCount === 0) {
      element.append(
        h(
          'div',
          { class: 'line' },
          h('span', { class: 'cell time' }),
          h('span', { class: 'cell level' }),
          h('span', { class: 'twisty', 'aria-hidden': 'true' }),
          h('span', { class: 'cell text' }),
          h('span', { class: 'cell origin' }),
        ),
        h('div', { class: 'stack', hidden: true }),
      );
    }
    const [line, stack] = element.children as unknown as HTMLElement[];
    const [time, level, twisty, text, origin] = line!.children as unknown as HTMLElement[];
    element.className = `vrow console-row level-${row.level}${row.stack ? ' has-stack' : ''}`;
    setText(time!, clock(row.ts));
    setText(level!, row.exception ? 'exception' : row.level);
    setText(twisty!, row.stack ? (this.expanded.has(row) ? '▾' : '▸') : '');
    setText(text!, row.text);
    setText(origin!, row.origin.replace(/^.*\//, ''));
    origin!.title = row.origin;
    if (row.stack) element.setAttribute('aria-expanded', String(this.expanded.has(row)));
    else element.removeAttribute('aria-expanded');
    const open = this.expanded.has(row);
    stack!.hidden = !open;
    if (open) {
      const lines = stackLines(row.stack);
      if (stack!.dataset.seq !== String(row.seq)) {
        stack!.replaceChildren(...lines.map((line) => h('div', { class: 'frame' }, line)));
        stack!.dataset.seq = String(row.seq);
      }
    }
  }
}

/** `at fn (url:line:col)` per frame, async parents introduced by their description. */
export function stackLines(stack: StackTrace | undefined): string[] {
  const lines: string[] = [];
  for (let part = stack; part !== undefined; part = part.parent) {
    if (part !== stack) lines.push(`-- ${part.description ?? 'async'} --`);
    for (const frame of part.callFrames) {
      lines.push(`at ${frame.functionName || '(anonymous)'} (${frame.url || '<anonymous>'}:${frame.lineNumber + 1}:${frame.columnNumber + 1})`);
    }
  }
  return lines;
}
