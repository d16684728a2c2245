// The session timeline (docs/viewer.md "Timeline"): one lane per tab (navigations,
// DOMContentLoaded, load), then console messages by level, network requests, interactions, page
// metrics (layout shifts, LCP), the settled events, screenshots; notices (browser
// disconnected/reconnected, events lost, stream resumed) cross every lane. This module holds the
// state (the visible range, following live, the cursor, the selected action) and the bar's
// buttons; the drawing is timeline-draw.ts, the pointer, wheel and keys timeline-input.ts, the
// range maths timeline-range.ts (pure).

import { h } from './dom.ts';
import { effectsOf } from './action-lane.ts';
import type { Envelope } from '../injected/schema.ts';
import type { SessionModel } from './model.ts';
import { GUTTER, TimelinePainter, type TimelineFilter } from './timeline-draw.ts';
import { listenToTimelineInput } from './timeline-input.ts';
import { coversHeld, heldRange, panRange, visibleRange, zoomRange, type Range } from './timeline-range.ts';

export type { TimelineFilter } from './timeline-draw.ts';

export interface TimelineHandlers {
  /** The cursor moved (hover or pin); undefined: back to live. */
  cursor(ts: number | undefined): void;
  /** The visible range changed (the network waterfall follows it). */
  rangeChanged(): void;
  /** An action was selected in the Actions lane (undefined: none) with the events it caused. */
  effects?(actionId: string | undefined, effects: readonly Envelope[]): void;
  /** A moment was chosen (a click pins the cursor, an event or action is highlighted): the replay seeks there. */
  seek?(ts: number): void;
}

export class Timeline {
  readonly element: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly painter: TimelinePainter;
  private readonly tooltip: HTMLDivElement;
  private readonly liveButton: HTMLButtonElement;
  /** Visible range in unix µs; undefined: everything held. */
  private view: Range | undefined;
  private following = true;
  private hoverTs: number | undefined;
  private pinnedTs: number | undefined;
  private highlightTs: number | undefined;
  private selectedAction: string | undefined;
  private effects: Envelope[] = [];
  /** The held events (epoch and count) the effects were looked up in. */
  private effectsOfHeld = '';

  constructor(
    private readonly model: SessionModel,
    private readonly filter: () => TimelineFilter,
    private readonly handlers: TimelineHandlers,
  ) {
    this.canvas = h('canvas', {
      class: 'timeline-canvas',
      tabindex: 0,
      role: 'img',
      'aria-label': 'Timeline',
      'aria-describedby': 'timeline-help',
    });
    this.tooltip = h('div', { class: 'timeline-tooltip', role: 'tooltip', hidden: true });
    const button = (label: string, title: string, action: () => void) => {
      const b = h('button', { type: 'button', title }, label);
      b.addEventListener('click', action);
      return b;
    };
    this.liveButton = button('Live', 'Follow new events (L)', () => this.setFollowing(!this.following));
    this.liveButton.setAttribute('aria-pressed', 'true');
    this.element = h(
      'section',
      { class: 'timeline', 'aria-label': 'Timeline' },
      h(
        'div',
        { class: 'timeline-bar' },
        h('h2', {}, 'Timeline'),
        button('−', 'Zoom out (−)', () => this.zoom(2)),
        button('+', 'Zoom in (+)', () => this.zoom(0.5)),
        button('Fit', 'Show the whole session (0)', () => this.fit()),
        this.liveButton,
        h(
          'span',
          { id: 'timeline-help', class: 'hint' },
          'Wheel zooms, drag pans, click pins the cursor (or selects an action); keys ←/→ +/− 0 L, [/] actions',
        ),
      ),
      h('div', { class: 'timeline-stage' }, this.canvas, this.tooltip),
    );
    this.painter = new TimelinePainter(this.canvas, model);
    listenToTimelineInput(this.canvas, {
      range: () => this.shownRange,
      pinnedTs: () => this.pinnedTs,
      plotLeft: GUTTER,
      tsAt: (x) => this.tsAt(x),
      zoom: (factor, aroundTs) => this.zoom(factor, aroundTs),
      pan: (deltaUs) => this.pan(deltaUs),
      dragTo: (view) => this.dragTo(view),
      fit: () => this.fit(),
      follow: () => this.setFollowing(true),
      stepAction: (step) => this.stepAction(step),
      hover: (x, y, width) => this.hover(x, y, width),
      leave: () => this.leave(),
      click: (x, y) => this.click(x, y),
      clear: () => this.clear(),
    });
  }

  /** The visible range (unix µs). */
  get range(): Range {
    return visibleRange(this.heldRange(), this.view, this.following);
  }

  /** The data changed: redraw at the next frame. */
  invalidate(): void {
    this.painter.invalidate();
  }

  /**
   * Select an action (its action_id; undefined: none): its effects, the held events whose
   * data.caused_by is its id, are drawn in the Actions lane and handed to `handlers.effects`.
   */
  selectAction(actionId: string | undefined): void {
    this.selectedAction = actionId;
    this.effectsOfHeld = `${this.model.epoch}:${this.model.envelopes.length}`;
    this.effects = actionId === undefined ? [] : effectsOf(this.model.envelopes, actionId);
    if (actionId === undefined) delete this.canvas.dataset.selectedAction;
    else this.canvas.dataset.selectedAction = actionId;
    this.canvas.dataset.effects = this.effects.map((e) => e.event.type).join(',');
    this.handlers.effects?.(actionId, this.effects);
    this.invalidate();
  }

  /** Selects the next (1) or previous (-1) action; from none, the first or the newest. */
  private stepAction(step: 1 | -1): void {
    const actions = this.model.actions;
    if (actions.length === 0) return;
    const at = actions.findIndex((a) => a.actionId === this.selectedAction);
    const next = at === -1 ? (step === 1 ? 0 : actions.length - 1) : Math.min(actions.length - 1, Math.max(0, at + step));
    const action = actions[next]!;
    this.selectAction(action.actionId);
    this.highlight(action.ts);
  }

  /** Mark the moment `ts` (an interaction chosen in its list) and bring it into view. */
  highlight(ts: number): void {
    this.highlightTs = ts;
    this.canvas.dataset.highlight = String(ts);
    this.pinnedTs = ts;
    const { start, end } = this.range;
    if (ts < start || ts > end) {
      const half = (end - start) / 2;
      this.view = { start: ts - half, end: ts + half };
      this.painter.drawnRange = undefined;
      this.setFollowing(false);
      this.handlers.rangeChanged();
    }
    this.invalidate();
    this.handlers.cursor(ts);
    this.handlers.seek?.(ts);
  }

  /**
   * The replay's position (playing, or seeked; docs/viewer.md "The player"): the cursor is pinned
   * there and kept in view. Never seeks back.
   */
  moveCursor(ts: number): void {
    this.pinnedTs = ts;
    this.canvas.dataset.cursor = String(ts);
    const { start, end } = this.range;
    if (ts < start || ts > end) {
      const half = (end - start) / 2;
      this.view = { start: ts - half, end: ts + half };
      this.painter.drawnRange = undefined;
      if (this.following) this.setFollowing(false);
      this.handlers.rangeChanged();
      this.invalidate();
    }
    this.painter.invalidateOverlay();
    this.handlers.cursor(this.hoverTs ?? ts);
  }

  /** Draws what changed; called once per animation frame by the app. */
  draw(): void {
    if (!this.painter.dirty) return;
    // Effects keep arriving after their action: the selection follows the held events.
    if (this.selectedAction !== undefined && this.effectsOfHeld !== `${this.model.epoch}:${this.model.envelopes.length}`)
      this.selectAction(this.selectedAction);
    this.painter.draw({
      range: this.range,
      filter: this.filter(),
      selectedAction: this.selectedAction,
      effects: this.effects,
      highlightTs: this.highlightTs,
      cursorTs: this.hoverTs ?? this.pinnedTs,
    });
  }

  private heldRange(): Range {
    return heldRange(this.model.minTs, this.model.maxTs, Date.now() * 1000);
  }

  /**
   * The range on screen: input (wheel, drag, pointer) acts on what the user sees. While following,
   * `range` moves with each event held, but the lanes are redrawn at most every 100 ms
   * (docs/viewer.md "Timeline").
   */
  private get shownRange(): Range {
    // A view set since the last draw (two wheel events in one frame) is not on screen yet, but it
    // is what the user asked for: drawnRange is cleared with each change of the view.
    return this.painter.drawnRange ?? this.range;
  }

  private tsAt(x: number): number {
    return this.painter.tsAt(x, this.shownRange);
  }

  private setFollowing(following: boolean): void {
    if (following && this.view !== undefined) {
      // Keep the span, move to the newest events.
      const span = this.view.end - this.view.start;
      const { end } = this.heldRange();
      this.view = { start: end - span, end };
    }
    this.following = following;
    this.painter.drawnRange = undefined;
    this.liveButton.setAttribute('aria-pressed', String(following));
    this.invalidate();
    this.handlers.rangeChanged();
  }

  private zoom(factor: number, aroundTs?: number): void {
    const { start, end } = this.shownRange;
    this.view = zoomRange({ start, end }, factor, aroundTs);
    this.painter.drawnRange = undefined;
    // Zooming around a point in the past stops following; zooming at the live edge keeps it.
    if (aroundTs !== undefined && this.following && end - aroundTs > (end - start) * 0.1) this.setFollowing(false);
    const held = this.heldRange();
    if (coversHeld(this.view, held)) this.view = undefined;
    this.invalidate();
    this.handlers.rangeChanged();
  }

  private pan(deltaUs: number): void {
    this.view = panRange(this.shownRange, deltaUs);
    this.painter.drawnRange = undefined;
    if (this.following) this.setFollowing(false);
    this.invalidate();
    this.handlers.rangeChanged();
  }

  private fit(): void {
    this.view = undefined;
    this.painter.drawnRange = undefined;
    this.setFollowing(true);
  }

  private dragTo(view: Range): void {
    this.view = view;
    this.painter.drawnRange = undefined;
    if (this.following) this.setFollowing(false);
    this.invalidate();
    this.handlers.rangeChanged();
  }

  private hover(x: number, y: number, width: number): void {
    this.hoverTs = x >= GUTTER ? this.tsAt(x) : undefined;
    this.painter.invalidateOverlay();
    this.handlers.cursor(this.hoverTs ?? this.pinnedTs);
    const text = this.painter.describeAt(x, y, this.shownRange);
    this.tooltip.hidden = text === undefined;
    if (text !== undefined) {
      this.tooltip.textContent = text;
      this.tooltip.style.left = `${Math.min(x + 12, width - 320)}px`;
      this.tooltip.style.top = `${y + 14}px`;
    }
  }

  private leave(): void {
    this.hoverTs = undefined;
    this.tooltip.hidden = true;
    this.painter.invalidateOverlay();
    this.handlers.cursor(this.pinnedTs);
  }

  /** A click on the plot: pins the cursor there; on the Actions lane, selects the action there (or none). */
  private click(x: number, y: number): void {
    if (this.painter.laneAt(y) === 'actions') this.selectAction(this.painter.actionNear(x, this.shownRange));
    this.pinnedTs = this.tsAt(x);
    this.painter.invalidateOverlay();
    this.handlers.cursor(this.pinnedTs);
    this.handlers.seek?.(this.pinnedTs);
  }

  private clear(): void {
    this.selectAction(undefined);
    this.pinnedTs = undefined;
    this.highlightTs = undefined;
    this.painter.invalidateOverlay();
    this.handlers.cursor(undefined);
  }
}
