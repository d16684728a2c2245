// What the app asks of a panel of the tab strip (console, network, interactions, targets).

import type { Changes } from '../model.ts';

export interface Panel {
  readonly id: string;
  readonly title: string;
  readonly element: HTMLElement;
  /** Rows shown, for the tab's label. */
  count(): number;
  /** Write the counts the panel shows (called a few times a second, not per event). */
  showCounts(): void;
  /** New events arrived (`changes`), or the view filter changed (`rebuild`). */
  update(changes: Changes, rebuild: boolean): void;
  /** The panel became visible: lay out its list again. */
  shown(): void;
  /** The panel left the view: render nothing until it is shown again. */
  hidden(): void;
}
