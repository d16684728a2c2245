// The timeline's input (docs/viewer.md "Timeline"): pointer, wheel and keys on the canvas turned
// into what they ask of the timeline. Wheel zooms around the pointer, a horizontal wheel or
// Shift+wheel pans, a drag pans, a click (a press without a move of more than 3 px) pins the
// cursor or selects an action; keys: ←/→ pan, +/− zoom around the pinned cursor, 0 fit, L follow
// live, [/] step through actions, Escape clears. It holds only the gesture in progress (a drag,
// the pointer's x); the range and the cursor are the target's (timeline.ts).

import type { Range } from './timeline-range.ts';

/** What input asks of the timeline. x and y are CSS px from the canvas's top left corner. */
export interface TimelineInputTarget {
  /** The visible range (unix µs). */
  range(): Range;
  /** The pinned cursor (unix µs), the centre of keyboard zooms. */
  pinnedTs(): number | undefined;
  /** Where the plot starts (CSS px): left of it are the lane labels. */
  readonly plotLeft: number;
  /** The time at `x`. */
  tsAt(x: number): number;
  zoom(factor: number, aroundTs?: number): void;
  pan(deltaUs: number): void;
  /** A drag shows `view`. */
  dragTo(view: Range): void;
  /** Show the whole session. */
  fit(): void;
  /** Follow new events. */
  follow(): void;
  stepAction(step: 1 | -1): void;
  /** The pointer is at (x, y) on a canvas `width` wide. */
  hover(x: number, y: number, width: number): void;
  /** The pointer left the canvas. */
  leave(): void;
  /** A click on the plot. */
  click(x: number, y: number): void;
  /** Escape: no selection, no pinned cursor, no highlight. */
  clear(): void;
}

/** Listens to `canvas`'s input for as long as the page lives. */
export function listenToTimelineInput(canvas: HTMLCanvasElement, target: TimelineInputTarget): void {
  let drag: { x: number; start: number; end: number; moved: boolean } | undefined;
  let hoverX: number | undefined;

  canvas.addEventListener(
    'wheel',
    (event) => {
      event.preventDefault();
      const { start, end } = target.range();
      const rect = canvas.getBoundingClientRect();
      if (event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY)) {
        const delta = event.shiftKey ? event.deltaY : event.deltaX;
        target.pan((delta / (rect.width - target.plotLeft)) * (end - start));
      } else target.zoom(Math.pow(1.0015, event.deltaY), target.tsAt(event.clientX - rect.left));
    },
    { passive: false },
  );
  canvas.addEventListener('pointerdown', (event) => {
    const { start, end } = target.range();
    drag = { x: event.clientX, start, end, moved: false };
    canvas.setPointerCapture(event.pointerId);
  });
  canvas.addEventListener('pointermove', (event) => {
    const rect = canvas.getBoundingClientRect();
    const x = event.clientX - rect.left;
    if (drag) {
      const dx = event.clientX - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (drag.moved) {
        const perPx = (drag.end - drag.start) / (rect.width - target.plotLeft);
        target.dragTo({ start: drag.start - dx * perPx, end: drag.end - dx * perPx });
      }
    }
    hoverX = x;
    target.hover(x, event.clientY - rect.top, rect.width);
  });
  canvas.addEventListener('pointerup', (event) => {
    const pressed = drag;
    drag = undefined;
    canvas.releasePointerCapture(event.pointerId);
    if (pressed && !pressed.moved && hoverX !== undefined && hoverX >= target.plotLeft) {
      target.click(hoverX, event.clientY - canvas.getBoundingClientRect().top);
    }
  });
  canvas.addEventListener('pointerleave', () => {
    hoverX = undefined;
    target.leave();
  });
  canvas.addEventListener('keydown', (event) => {
    const { start, end } = target.range();
    switch (event.key) {
      case 'ArrowLeft':
        target.pan(-(end - start) * 0.1);
        break;
      case 'ArrowRight':
        target.pan((end - start) * 0.1);
        break;
      case '+':
      case '=':
        target.zoom(0.5, target.pinnedTs());
        break;
      case '-':
      case '_':
        target.zoom(2, target.pinnedTs());
        break;
      case '0':
      case 'Home':
        target.fit();
        break;
      case 'l':
      case 'L':
      case 'End':
        target.follow();
        break;
      case '[':
      case ']':
        target.stepAction(event.key === ']' ? 1 : -1);
        break;
      case 'Escape':
        target.clear();
        break;
      default:
        return;
    }
    event.preventDefault();
  });
}
