// The monitor_screenshot filmstrip: the screenshot nearest to the timeline's cursor (the latest
// while there is none) and a strip of the ones held; choosing one moves the cursor to it.

import { h, setText } from './dom.ts';
import { clock } from './format.ts';
import type { ScreenshotRow, SessionModel } from './model.ts';

const STRIP_LENGTH = 16;

export class Filmstrip {
  readonly element: HTMLElement;
  private readonly image: HTMLImageElement;
  private readonly caption: HTMLElement;
  private readonly strip: HTMLElement;
  private cursor: number | undefined;
  private shown: ScreenshotRow | undefined;
  private stripKey = '';

  constructor(
    private readonly model: SessionModel,
    private readonly choose: (shot: ScreenshotRow) => void,
  ) {
    this.image = h('img', { class: 'shot', alt: 'No screenshot yet' });
    this.caption = h('p', { class: 'caption', 'aria-live': 'polite' }, 'No screenshot yet');
    this.strip = h('div', { class: 'strip', role: 'list', 'aria-label': 'Screenshots held' });
    this.element = h(
      'aside',
      { class: 'filmstrip', 'aria-label': 'Screenshots' },
      h('h2', {}, 'Screenshots'),
      h('figure', {}, this.image, this.caption),
      this.strip,
    );
  }

  /** The timeline's cursor moved (undefined: follow the latest). */
  setCursor(ts: number | undefined): void {
    this.cursor = ts;
    this.showNearest();
  }

  update(): void {
    this.showNearest();
    this.renderStrip();
  }

  private showNearest(): void {
    const shot = nearest(this.model.screenshots, this.cursor);
    if (shot === this.shown) return;
    this.shown = shot;
    if (shot === undefined) return;
    this.image.src = shot.image!;
    this.image.alt = `Screenshot at ${clock(shot.ts)}`;
    setText(this.caption, `${clock(shot.ts)} · ${this.cursor === undefined ? 'latest' : 'nearest to the cursor'}`);
  }

  private renderStrip(): void {
    // The newest few only: each thumbnail decodes a full-size PNG.
    const shots = this.model.screenshots.filter((s) => s.image !== undefined).slice(-STRIP_LENGTH);
    const key = `${shots.length}:${shots[0]?.seq}:${shots[shots.length - 1]?.seq}`;
    if (key === this.stripKey) return;
    this.stripKey = key;
    this.strip.replaceChildren(
      ...shots.map((shot) => {
        const button = h(
          'button',
          { type: 'button', class: 'thumb', 'aria-label': `Screenshot at ${clock(shot.ts)}` },
          h('img', { src: shot.image!, alt: '', loading: 'lazy', decoding: 'async' }),
        );
        button.addEventListener('click', () => this.choose(shot));
        return h('div', { role: 'listitem' }, button);
      }),
    );
    this.strip.scrollLeft = this.strip.scrollWidth;
  }
}

/** The screenshot with an image nearest to `ts` (the latest when `ts` is undefined). */
export function nearest(shots: readonly ScreenshotRow[], ts: number | undefined): ScreenshotRow | undefined {
  let best: ScreenshotRow | undefined;
  for (let i = shots.length - 1; i >= 0; i--) {
    const shot = shots[i]!;
    if (shot.image === undefined) continue;
    if (ts === undefined) return shot;
    if (best === undefined || Math.abs(shot.ts - ts) < Math.abs(best.ts - ts)) best = shot;
  }
  return best;
}
