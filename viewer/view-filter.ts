// The view-wide filter (categories and one target) and the rows of a panel that pass it, kept up
// to date incrementally: new rows are tested as they arrive, everything again only when a filter
// changes or the model dropped or inserted rows.

import type { Row, SessionModel, ViewCategory } from './model.ts';

export interface ViewFilter {
  categories: ReadonlySet<ViewCategory>;
  /** Only this target's rows (rows without a target, such as monitor events, always pass). */
  targetId: string | undefined;
}

export function inTarget(filter: ViewFilter, targetId: string | undefined): boolean {
  return filter.targetId === undefined || targetId === undefined || targetId === filter.targetId;
}

export class FilteredRows<T extends Row> {
  items: T[] = [];
  private scanned = 0;
  private epoch = -1;

  constructor(
    private readonly model: SessionModel,
    private readonly source: () => readonly T[],
    private readonly matches: (row: T) => boolean,
  ) {}

  /** Brings `items` up to date; true when they changed. `rebuild` after a filter change. */
  sync(rebuild = false): boolean {
    const rows = this.source();
    if (rebuild || this.model.epoch !== this.epoch || this.scanned > rows.length) {
      this.items = rows.filter(this.matches);
      this.scanned = rows.length;
      this.epoch = this.model.epoch;
      return true;
    }
    if (this.scanned === rows.length) return false;
    const before = this.items.length;
    for (let i = this.scanned; i < rows.length; i++) {
      const row = rows[i]!;
      if (this.matches(row)) this.items.push(row);
    }
    this.scanned = rows.length;
    return this.items.length !== before;
  }
}
