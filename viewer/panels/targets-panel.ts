// The targets panel: the pages, iframes and workers seen, with their URL, when they were first and
// last heard of, and their navigations. "Only this" narrows every panel and the timeline to one.

import { h, replaceChildren, setText } from '../dom.ts';
import { clock, shortId } from '../format.ts';
import type { Changes, SessionModel, TargetRow } from '../model.ts';
import type { Panel } from './panel.ts';

const GROUPS: Array<[string, (type: string) => boolean]> = [
  ['Pages', (t) => t === 'page'],
  ['Iframes', (t) => t === 'iframe'],
  ['Workers', (t) => t === 'worker' || t === 'service_worker' || t === 'shared_worker'],
  ['Other', (t) => !['page', 'iframe', 'worker', 'service_worker', 'shared_worker'].includes(t)],
];

export class TargetsPanel implements Panel {
  readonly id = 'targets';
  readonly title = 'Targets';
  readonly element: HTMLElement;
  private readonly body: HTMLElement;
  private dirty = true;
  private visible = false;

  constructor(
    private readonly model: SessionModel,
    private readonly selected: () => string | undefined,
    private readonly select: (targetId: string | undefined) => void,
  ) {
    this.body = h('div', { class: 'targets-body' });
    this.element = h('div', { class: 'panel targets-panel' }, this.body);
  }

  count(): number {
    return this.model.targets.size;
  }

  showCounts(): void {
    // The table says it all.
  }

  update(changes: Changes, rebuild: boolean): void {
    if (changes.targets || rebuild) this.dirty = true;
    // Only while shown: a table of every target is rebuilt whole, which is cheap for tens of rows.
    if (this.dirty && this.visible) this.render();
  }

  shown(): void {
    this.visible = true;
    this.render();
  }

  hidden(): void {
    this.visible = false;
  }

  private render(): void {
    this.dirty = false;
    const targets = [...this.model.targets.values()];
    const current = this.selected();
    const sections = GROUPS.map(([title, test]) => {
      const rows = targets.filter((t) => test(t.type));
      if (rows.length === 0) return null;
      return h(
        'section',
        { 'aria-label': title },
        h('h3', {}, `${title} (${rows.length})`),
        h(
          'table',
          {},
          h(
            'thead',
            {},
            h('tr', {}, ...['Type', 'Target', 'URL', 'First seen', 'Last seen', 'Navigations', 'Frames', ''].map((c) => h('th', { scope: 'col' }, c))),
          ),
          h('tbody', {}, ...rows.map((t) => this.row(t, current))),
        ),
      );
    });
    replaceChildren(
      this.body,
      current !== undefined ? this.clearButton() : null,
      ...sections,
      targets.length === 0 ? h('p', { class: 'hint' }, 'No target seen yet.') : null,
    );
  }

  private row(target: TargetRow, current: string | undefined): HTMLElement {
    const only = h('button', { type: 'button', 'aria-pressed': String(current === target.id) }, current === target.id ? 'Showing only this' : 'Only this');
    only.addEventListener('click', () => this.select(current === target.id ? undefined : target.id));
    const url = h('td', { class: 'url' });
    setText(url, target.title ? `${target.title} — ${target.url}` : target.url);
    url.title = target.url;
    const frames = [...target.frames.values()];
    return h(
      'tr',
      { class: current === target.id ? 'selected' : undefined },
      h('td', {}, target.type),
      h('td', { title: target.id }, shortId(target.id)),
      url,
      h('td', {}, clock(target.firstTs)),
      h('td', {}, clock(target.lastTs)),
      h('td', {}, String(target.navigations)),
      h('td', { title: frames.join('\n') }, String(frames.length)),
      h('td', {}, only),
    );
  }

  private clearButton(): HTMLElement {
    const button = h('button', { type: 'button' }, 'Show all targets');
    button.addEventListener('click', () => this.select(undefined));
    return h('p', {}, button);
  }
}
