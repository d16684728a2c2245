// The session timeline: one lane per tab (navigations, DOMContentLoaded, load), then console
// messages by level, network requests, interactions, page metrics (layout shifts, LCP), the
// settled events, screenshots; notices (browser disconnected/reconnected, events lost, stream
// resumed) cross every lane. Drawn on a canvas: what is drawn depends on the visible pixels, not
// on how many events are held. Wheel zooms around the pointer, drag or Shift+wheel pans, a click
// pins the cursor (the filmstrip shows the screenshot nearest to it); keys: ←/→ pan, +/− zoom,
// 0 fit, L follow live (docs/viewer.md "Timeline"). The range maths is timeline-range.ts (pure).

import { h } from './dom.ts';
import { clock, duration, shortId, shortUrl } from './format.ts';
import { ACTIVITY_KINDS, activitySummary, drawActivityLane } from './activity-lane.ts';
import { drawHealthLane, HEALTH_KINDS } from './health-lane.ts';
import { drawActionLane, effectsOf } from './action-lane.ts';
import type { Envelope } from '../injected/schema.ts';
import { NOTICE_KINDS, type ConsoleLevel, type Mark, type MarkKind, type SessionModel, type ViewCategory } from './model.ts';
import { axisStep, coversHeld, heldRange, panRange, tsAt, visibleRange, xOf, zoomRange, type Range } from './timeline-range.ts';

export interface TimelineFilter {
  categories: ReadonlySet<ViewCategory>;
  targetId: string | undefined;
}

export interface TimelineHandlers {
  /** The cursor moved (hover or pin); undefined: back to live. */
  cursor(ts: number | undefined): void;
  /** The visible range changed (the network waterfall follows it). */
  rangeChanged(): void;
  /** An action was selected in the Actions lane (undefined: none) with the events it caused. */
  effects?(actionId: string | undefined, effects: readonly Envelope[]): void;
}

const GUTTER = 96;
const AXIS = 20;
const LANE = 22;
const MAX_TAB_LANES = 6;

interface Lane {
  label: string;
  kind: 'tab' | 'console' | 'network' | 'interaction' | 'page' | 'settled' | 'screenshot' | 'health' | 'activity' | 'actions';
  targetId?: string;
}

type Palette = Record<
  | 'bg'
  | 'grid'
  | 'text'
  | 'muted'
  | 'error'
  | 'warning'
  | 'info'
  | 'log'
  | 'debug'
  | 'network'
  | 'interaction'
  | 'page'
  | 'settled'
  | 'notice'
  | 'accent'
  | 'screenshot',
  string
>;

const LEVEL_RANK: Record<ConsoleLevel, number> = { debug: 0, log: 1, info: 2, warning: 3, error: 4 };

export class Timeline {
  readonly element: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly base = document.createElement('canvas');
  private readonly tooltip: HTMLDivElement;
  private readonly liveButton: HTMLButtonElement;
  private palette!: Palette;
  private lanes: Lane[] = [];
  /** Visible range in unix µs; undefined: everything held. */
  private view: Range | undefined;
  private following = true;
  private hoverTs: number | undefined;
  private hoverX: number | undefined;
  private pinnedTs: number | undefined;
  private highlightTs: number | undefined;
  private selectedAction: string | undefined;
  private effects: Envelope[] = [];
  /** The held events (epoch and count) the effects were looked up in. */
  private effectsOfHeld = '';
  private baseDirty = true;
  private overlayDirty = true;
  private drag: { x: number; start: number; end: number; moved: boolean } | undefined;
  private width = 0;
  private height = 0;
  private cssWidth = 0;

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
    this.readPalette();
    matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
      this.readPalette();
      this.invalidate();
    });
    // The canvas's width, kept here: measuring it at every draw would force a layout.
    new ResizeObserver((entries) => {
      this.cssWidth = entries[entries.length - 1]!.contentRect.width;
      this.invalidate();
    }).observe(this.canvas);
    this.listen();
  }

  /** The visible range (unix µs). */
  get range(): Range {
    return visibleRange(this.heldRange(), this.view, this.following);
  }

  /** The data changed: redraw at the next frame. */
  invalidate(): void {
    this.baseDirty = true;
    this.overlayDirty = true;
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
      this.setFollowing(false);
      this.handlers.rangeChanged();
    }
    this.invalidate();
    this.handlers.cursor(ts);
  }

  /** Draws what changed; called once per animation frame by the app. */
  draw(): void {
    if (!this.baseDirty && !this.overlayDirty) return;
    // Effects keep arriving after their action: the selection follows the held events.
    if (this.selectedAction !== undefined && this.effectsOfHeld !== `${this.model.epoch}:${this.model.envelopes.length}`)
      this.selectAction(this.selectedAction);
    const rect = { width: this.cssWidth };
    if (rect.width === 0) return;
    this.lanes = this.computeLanes();
    this.canvas.dataset.lanes = this.lanes.map((lane) => lane.label).join(',');
    const height = AXIS + this.lanes.length * LANE + 4;
    const ratio = devicePixelRatio || 1;
    if (this.width !== rect.width || this.height !== height) {
      this.width = rect.width;
      this.height = height;
      this.canvas.style.height = `${height}px`;
      for (const c of [this.canvas, this.base]) {
        c.width = Math.round(rect.width * ratio);
        c.height = Math.round(height * ratio);
      }
      this.baseDirty = true;
    }
    if (this.baseDirty) {
      const ctx = this.base.getContext('2d')!;
      ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
      this.drawBase(ctx);
      this.baseDirty = false;
      this.canvas.setAttribute('aria-label', this.summary());
    }
    const ctx = this.canvas.getContext('2d')!;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    ctx.drawImage(this.base, 0, 0);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    this.drawOverlay(ctx);
    this.overlayDirty = false;
  }

  private heldRange(): Range {
    return heldRange(this.model.minTs, this.model.maxTs, Date.now() * 1000);
  }

  private computeLanes(): Lane[] {
    const { categories, targetId } = this.filter();
    const lanes: Lane[] = [];
    if (categories.has('page')) {
      const tabs = this.model.tabs.filter((id) => targetId === undefined || id === targetId);
      for (const id of tabs.slice(0, MAX_TAB_LANES)) lanes.push({ label: `Tab ${shortId(id)}`, kind: 'tab', targetId: id });
      if (tabs.length === 0) lanes.push({ label: 'Navigations', kind: 'tab' });
    }
    if (categories.has('console')) lanes.push({ label: 'Console', kind: 'console' });
    if (categories.has('network')) lanes.push({ label: 'Network', kind: 'network' });
    if (categories.has('interaction')) lanes.push({ label: 'Interactions', kind: 'interaction' });
    if (categories.has('page')) lanes.push({ label: 'Shifts · LCP', kind: 'page' }, { label: 'Settled', kind: 'settled' });
    if (categories.has('screenshot')) lanes.push({ label: 'Screenshots', kind: 'screenshot' });
    if (categories.has('page') || categories.has('system') || categories.has('connection')) lanes.push({ label: 'Health', kind: 'health' });
    if (categories.has('page') || categories.has('network')) lanes.push({ label: 'Activity', kind: 'activity' });
    if (this.model.actions.length > 0) lanes.push({ label: 'Actions', kind: 'actions' });
    return lanes;
  }

  private x(ts: number, range = this.range): number {
    return xOf(ts, range, GUTTER, this.width);
  }

  private tsAt(x: number): number {
    return tsAt(x, this.range, GUTTER, this.width);
  }

  private drawBase(ctx: CanvasRenderingContext2D): void {
    const p = this.palette;
    const range = this.range;
    const { targetId } = this.filter();
    const inTarget = (id: string | undefined) => targetId === undefined || id === undefined || id === targetId;
    ctx.fillStyle = p.bg;
    ctx.fillRect(0, 0, this.width, this.height);
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    this.drawAxis(ctx, range);
    const plotWidth = this.width - GUTTER;
    const columns = Math.max(1, Math.ceil(plotWidth));
    const column = (ts: number) => Math.floor(((ts - range.start) / (range.end - range.start)) * plotWidth);

    this.lanes.forEach((lane, i) => {
      const top = AXIS + i * LANE;
      const mid = top + LANE / 2;
      ctx.fillStyle = p.grid;
      ctx.fillRect(0, top + LANE - 1, this.width, 1);
      ctx.fillStyle = p.muted;
      ctx.textAlign = 'left';
      ctx.fillText(lane.label, 6, mid, GUTTER - 10);
      ctx.save();
      ctx.beginPath();
      ctx.rect(GUTTER, top, plotWidth, LANE);
      ctx.clip();
      switch (lane.kind) {
        case 'tab':
          for (const mark of this.model.marks) {
            if (lane.targetId !== undefined && mark.targetId !== lane.targetId) continue;
            if (mark.kind === 'navigation') {
              const x = this.x(mark.ts, range);
              ctx.fillStyle = p.accent;
              ctx.beginPath();
              ctx.moveTo(x, top + 3);
              ctx.lineTo(x + 6, mid);
              ctx.lineTo(x, top + LANE - 3);
              ctx.fill();
              ctx.fillStyle = p.text;
              ctx.fillText(shortUrl(mark.label), x + 8, mid, 220);
            } else if (mark.kind === 'load' || mark.kind === 'dom_content_loaded') {
              ctx.fillStyle = mark.kind === 'load' ? p.page : p.info;
              ctx.fillRect(this.x(mark.ts, range), top + 4, 2, LANE - 8);
            }
          }
          break;
        case 'console': {
          const counts = new Uint32Array(columns);
          const worst = new Int8Array(columns).fill(-1);
          for (const row of this.model.console) {
            if (row.ts < range.start || row.ts > range.end || !inTarget(row.targetId)) continue;
            const c = column(row.ts);
            if (c < 0 || c >= columns) continue;
            counts[c]!++;
            worst[c] = Math.max(worst[c]!, LEVEL_RANK[row.level]);
          }
          const levels: ConsoleLevel[] = ['debug', 'log', 'info', 'warning', 'error'];
          for (let c = 0; c < columns; c++) {
            if (counts[c] === 0) continue;
            const barHeight = Math.min(LANE - 4, 4 + Math.log2(counts[c]!) * 3);
            ctx.fillStyle = p[levels[worst[c]!]!];
            ctx.fillRect(GUTTER + c, top + LANE - 2 - barHeight, 1.5, barHeight);
          }
          break;
        }
        case 'network': {
          let slot = 0;
          for (const entry of this.model.network) {
            const end = entry.endTs ?? this.model.maxTs;
            if (end < range.start || entry.ts > range.end || !inTarget(entry.targetId)) continue;
            const x0 = this.x(entry.ts, range);
            const x1 = Math.max(x0 + 2, this.x(end, range));
            ctx.fillStyle =
              entry.failed !== undefined
                ? p.error
                : entry.status !== undefined && entry.status >= 400
                  ? p.warning
                  : entry.endTs === undefined
                    ? p.muted
                    : p.network;
            ctx.fillRect(x0, top + 3 + (slot % 4) * 4, x1 - x0, 3);
            slot++;
          }
          break;
        }
        case 'interaction':
          for (const row of this.model.interactions) {
            if (row.ts < range.start || row.ts > range.end || !inTarget(row.targetId)) continue;
            const x = this.x(row.ts, range);
            ctx.fillStyle = p.interaction;
            if (row.kind === 'click') {
              ctx.beginPath();
              ctx.arc(x, mid, 4, 0, Math.PI * 2);
              ctx.fill();
            } else if (row.kind === 'key') ctx.fillRect(x - 1, top + 5, 2, LANE - 10);
            else ctx.fillRect(x - 3, mid - 1, 6, 2);
          }
          break;
        case 'page':
          for (const mark of this.model.marks) {
            if (mark.ts < range.start || mark.ts > range.end || !inTarget(mark.targetId)) continue;
            const x = this.x(mark.ts, range);
            if (mark.kind === 'layout_shift') {
              const barHeight = Math.max(2, Math.min(LANE - 4, (mark.value ?? 0) * 60));
              ctx.fillStyle = p.warning;
              ctx.fillRect(x - 1, top + LANE - 2 - barHeight, 3, barHeight);
            } else if (mark.kind === 'lcp') {
              ctx.fillStyle = p.page;
              ctx.beginPath();
              ctx.moveTo(x, top + 3);
              ctx.lineTo(x + 5, mid);
              ctx.lineTo(x, top + LANE - 3);
              ctx.lineTo(x - 5, mid);
              ctx.fill();
            }
          }
          break;
        case 'settled': {
          const rows: Partial<Record<MarkKind, number>> = { network_idle: 0, page_layout_settled: 1, page_navigation_settled: 2 };
          for (const mark of this.model.marks) {
            const row = rows[mark.kind];
            if (row === undefined || mark.ts < range.start || mark.ts > range.end || !inTarget(mark.targetId)) continue;
            ctx.fillStyle = row === 0 ? p.network : row === 1 ? p.warning : p.settled;
            ctx.fillRect(this.x(mark.ts, range) - 1, top + 3 + row * 6, 3, 5);
          }
          break;
        }
        case 'health':
          drawHealthLane(ctx, this.model.marks, (ts) => this.x(ts, range), { top, height: LANE, ...range }, p, inTarget);
          break;
        case 'activity':
          drawActivityLane(ctx, this.model.marks, (ts) => this.x(ts, range), { top, height: LANE, ...range }, p, inTarget);
          break;
        case 'actions':
          drawActionLane(
            ctx,
            this.model.actions,
            this.effects,
            this.selectedAction,
            (ts) => this.x(ts, range),
            { top, height: LANE, ...range },
            {
              action: p.interaction,
              selected: p.accent,
            },
          );
          break;
        case 'screenshot':
          ctx.fillStyle = p.screenshot;
          for (const shot of this.model.screenshots) {
            if (shot.ts < range.start || shot.ts > range.end) continue;
            ctx.fillRect(this.x(shot.ts, range) - 3, top + 5, 6, LANE - 10);
          }
          break;
      }
      ctx.restore();
    });

    // Notices cross every lane: what they say concerns all of them.
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER, 0, plotWidth, this.height);
    ctx.clip();
    for (const mark of this.model.marks) {
      if (!isNotice(mark) || mark.ts < range.start || mark.ts > range.end) continue;
      const x = this.x(mark.ts, range);
      ctx.fillStyle = mark.severity === 'error' ? p.error : mark.severity === 'warn' ? p.notice : p.muted;
      ctx.globalAlpha = 0.25;
      ctx.fillRect(x - 2, AXIS, 5, this.height - AXIS);
      ctx.globalAlpha = 1;
      ctx.fillRect(x, AXIS, 1, this.height - AXIS);
      ctx.beginPath();
      ctx.moveTo(x, AXIS);
      ctx.lineTo(x + 8, AXIS + 4);
      ctx.lineTo(x, AXIS + 8);
      ctx.fill();
    }
    ctx.restore();
  }

  private drawAxis(ctx: CanvasRenderingContext2D, range: { start: number; end: number }): void {
    const p = this.palette;
    const step = axisStep(range.end - range.start, this.width - GUTTER);
    ctx.fillStyle = p.muted;
    ctx.textAlign = 'left';
    for (let t = Math.ceil(range.start / step) * step; t <= range.end; t += step) {
      const x = this.x(t, range);
      ctx.fillStyle = p.grid;
      ctx.fillRect(x, AXIS - 4, 1, this.height - AXIS + 4);
      ctx.fillStyle = p.muted;
      ctx.fillText(step < 1e6 ? clock(t) : clock(t).slice(0, 8), x + 3, AXIS / 2, 100);
    }
    ctx.fillStyle = p.grid;
    ctx.fillRect(0, AXIS - 1, this.width, 1);
  }

  private drawOverlay(ctx: CanvasRenderingContext2D): void {
    const p = this.palette;
    const range = this.range;
    if (this.highlightTs !== undefined && this.highlightTs >= range.start && this.highlightTs <= range.end) {
      const x = this.x(this.highlightTs, range);
      ctx.fillStyle = p.accent;
      ctx.globalAlpha = 0.3;
      ctx.fillRect(x - 4, AXIS, 9, this.height - AXIS);
      ctx.globalAlpha = 1;
      ctx.fillRect(x, AXIS, 1.5, this.height - AXIS);
    }
    const cursor = this.hoverTs ?? this.pinnedTs;
    if (cursor !== undefined && cursor >= range.start && cursor <= range.end) {
      const x = this.x(cursor, range);
      ctx.fillStyle = p.text;
      ctx.fillRect(x, 0, 1, this.height);
      ctx.textAlign = 'left';
      ctx.font = '11px system-ui, sans-serif';
      const label = clock(cursor);
      const w = ctx.measureText(label).width + 8;
      const left = Math.min(x + 2, this.width - w);
      ctx.fillStyle = p.bg;
      ctx.fillRect(left, 2, w, AXIS - 4);
      ctx.fillStyle = p.text;
      ctx.fillText(label, left + 4, AXIS / 2, w);
    }
  }

  /** The mark or row nearest to the pointer, for the tooltip. */
  private describeAt(x: number, y: number): string | undefined {
    const lane = this.lanes[Math.floor((y - AXIS) / LANE)];
    if (!lane || x < GUTTER) return undefined;
    const range = this.range;
    const near = (ts: number) => Math.abs(this.x(ts, range) - x) <= 5;
    for (const mark of this.model.marks) if (isNotice(mark) && near(mark.ts)) return `${clock(mark.ts)} ${mark.label}`;
    switch (lane.kind) {
      case 'tab':
      case 'page':
      case 'settled':
      case 'health': {
        const mark = this.model.marks.find(
          (m) => near(m.ts) && (lane.targetId === undefined || m.targetId === lane.targetId) && laneOfMark(m.kind) === lane.kind,
        );
        return mark && `${clock(mark.ts)} ${mark.label}`;
      }
      case 'activity': {
        // Sockets can be dense: name up to six marks under the pointer.
        const marks = this.model.marks.filter((m) => near(m.ts) && ACTIVITY_KINDS.has(m.kind));
        if (marks.length === 0) return undefined;
        const more = marks.length > 6 ? ` (+${marks.length - 6} more)` : '';
        return `${clock(marks[0]!.ts)} ${marks
          .slice(0, 6)
          .map((m) => m.label)
          .join(' · ')}${more}`;
      }
      case 'console': {
        const rows = this.model.console.filter((r) => near(r.ts));
        if (rows.length === 0) return undefined;
        return `${clock(rows[0]!.ts)} ${rows.length} message${rows.length === 1 ? '' : 's'}: ${rows[rows.length - 1]!.text.slice(0, 120)}`;
      }
      case 'network': {
        const entry = this.model.network.find((e) => e.ts <= this.tsAt(x + 3) && (e.endTs ?? this.model.maxTs) >= this.tsAt(x - 3));
        if (!entry) return undefined;
        const took = entry.endTs === undefined ? 'pending' : duration((entry.endTs - entry.ts) / 1000);
        return `${entry.method} ${shortUrl(entry.url)} ${entry.failed ?? entry.status ?? ''} (${took})`;
      }
      case 'interaction': {
        const row = this.model.interactions.find((r) => near(r.ts));
        return row && `${clock(row.ts)} ${row.kind} ${row.selector} ${row.detail}`;
      }
      case 'actions': {
        const action = this.model.actions.find((a) => near(a.ts));
        return action && `${clock(action.ts)} ${action.label}`;
      }
      case 'screenshot': {
        const shot = this.model.screenshots.find((s) => near(s.ts));
        return shot && `${clock(shot.ts)} screenshot`;
      }
    }
  }

  private summary(): string {
    const { start, end } = this.range;
    const m = this.model;
    const activity = activitySummary(m.marks);
    return `Timeline from ${clock(start)} to ${clock(end)}: ${m.console.length} console messages, ${m.network.length} requests, ${m.interactions.length} interactions, ${m.screenshots.length} screenshots, ${m.marks.filter(isNotice).length} notices${activity ? `, ${activity}` : ''}`;
  }

  private setFollowing(following: boolean): void {
    if (following && this.view !== undefined) {
      // Keep the span, move to the newest events.
      const span = this.view.end - this.view.start;
      const { end } = this.heldRange();
      this.view = { start: end - span, end };
    }
    this.following = following;
    this.liveButton.setAttribute('aria-pressed', String(following));
    this.invalidate();
    this.handlers.rangeChanged();
  }

  private zoom(factor: number, aroundTs?: number): void {
    const { start, end } = this.range;
    this.view = zoomRange({ start, end }, factor, aroundTs);
    // Zooming around a point in the past stops following; zooming at the live edge keeps it.
    if (aroundTs !== undefined && this.following && end - aroundTs > (end - start) * 0.1) this.setFollowing(false);
    const held = this.heldRange();
    if (coversHeld(this.view, held)) this.view = undefined;
    this.invalidate();
    this.handlers.rangeChanged();
  }

  private pan(deltaUs: number): void {
    this.view = panRange(this.range, deltaUs);
    if (this.following) this.setFollowing(false);
    this.invalidate();
    this.handlers.rangeChanged();
  }

  private fit(): void {
    this.view = undefined;
    this.setFollowing(true);
  }

  private listen(): void {
    const canvas = this.canvas;
    canvas.addEventListener(
      'wheel',
      (event) => {
        event.preventDefault();
        const { start, end } = this.range;
        const rect = canvas.getBoundingClientRect();
        if (event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY)) {
          const delta = event.shiftKey ? event.deltaY : event.deltaX;
          this.pan((delta / (rect.width - GUTTER)) * (end - start));
        } else this.zoom(Math.pow(1.0015, event.deltaY), this.tsAt(event.clientX - rect.left));
      },
      { passive: false },
    );
    canvas.addEventListener('pointerdown', (event) => {
      const { start, end } = this.range;
      this.drag = { x: event.clientX, start, end, moved: false };
      canvas.setPointerCapture(event.pointerId);
    });
    canvas.addEventListener('pointermove', (event) => {
      const rect = canvas.getBoundingClientRect();
      const x = event.clientX - rect.left;
      if (this.drag) {
        const dx = event.clientX - this.drag.x;
        if (Math.abs(dx) > 3) this.drag.moved = true;
        if (this.drag.moved) {
          const perPx = (this.drag.end - this.drag.start) / (rect.width - GUTTER);
          this.view = { start: this.drag.start - dx * perPx, end: this.drag.end - dx * perPx };
          if (this.following) this.setFollowing(false);
          this.invalidate();
          this.handlers.rangeChanged();
        }
      }
      this.hoverX = x;
      this.hoverTs = x >= GUTTER ? this.tsAt(x) : undefined;
      this.overlayDirty = true;
      this.handlers.cursor(this.hoverTs ?? this.pinnedTs);
      const text = this.describeAt(x, event.clientY - rect.top);
      this.tooltip.hidden = text === undefined;
      if (text !== undefined) {
        this.tooltip.textContent = text;
        this.tooltip.style.left = `${Math.min(x + 12, rect.width - 320)}px`;
        this.tooltip.style.top = `${event.clientY - rect.top + 14}px`;
      }
    });
    canvas.addEventListener('pointerup', (event) => {
      const drag = this.drag;
      this.drag = undefined;
      canvas.releasePointerCapture(event.pointerId);
      if (drag && !drag.moved && this.hoverX !== undefined && this.hoverX >= GUTTER) {
        const lane = this.lanes[Math.floor((event.clientY - canvas.getBoundingClientRect().top - AXIS) / LANE)];
        if (lane?.kind === 'actions') {
          const range = this.range;
          const hit = this.model.actions.find((a) => Math.abs(this.x(a.ts, range) - this.hoverX!) <= 5);
          this.selectAction(hit?.actionId);
        }
        this.pinnedTs = this.tsAt(this.hoverX);
        this.overlayDirty = true;
        this.handlers.cursor(this.pinnedTs);
      }
    });
    canvas.addEventListener('pointerleave', () => {
      this.hoverTs = undefined;
      this.hoverX = undefined;
      this.tooltip.hidden = true;
      this.overlayDirty = true;
      this.handlers.cursor(this.pinnedTs);
    });
    canvas.addEventListener('keydown', (event) => {
      const { start, end } = this.range;
      switch (event.key) {
        case 'ArrowLeft':
          this.pan(-(end - start) * 0.1);
          break;
        case 'ArrowRight':
          this.pan((end - start) * 0.1);
          break;
        case '+':
        case '=':
          this.zoom(0.5, this.pinnedTs);
          break;
        case '-':
        case '_':
          this.zoom(2, this.pinnedTs);
          break;
        case '0':
        case 'Home':
          this.fit();
          break;
        case 'l':
        case 'L':
        case 'End':
          this.setFollowing(true);
          break;
        case '[':
        case ']':
          this.stepAction(event.key === ']' ? 1 : -1);
          break;
        case 'Escape':
          this.selectAction(undefined);
          this.pinnedTs = undefined;
          this.highlightTs = undefined;
          this.overlayDirty = true;
          this.handlers.cursor(undefined);
          break;
        default:
          return;
      }
      event.preventDefault();
    });
  }

  private readPalette(): void {
    const style = getComputedStyle(document.documentElement);
    const get = (name: string, fallback: string) => style.getPropertyValue(name).trim() || fallback;
    this.palette = {
      bg: get('--surface', '#fff'),
      grid: get('--border', '#ddd'),
      text: get('--text', '#111'),
      muted: get('--muted', '#666'),
      error: get('--error', '#c62828'),
      warning: get('--warning', '#b26a00'),
      info: get('--info', '#1565c0'),
      log: get('--log', '#607d8b'),
      debug: get('--debug', '#9e9e9e'),
      network: get('--network', '#2e7d32'),
      interaction: get('--interaction', '#6a1b9a'),
      page: get('--page', '#00838f'),
      settled: get('--settled', '#33691e'),
      notice: get('--notice', '#e65100'),
      accent: get('--accent', '#2563eb'),
      screenshot: get('--screenshot', '#5d4037'),
    };
  }
}

function isNotice(mark: Mark): boolean {
  return NOTICE_KINDS.has(mark.kind);
}

function laneOfMark(kind: MarkKind): Lane['kind'] | undefined {
  if (HEALTH_KINDS.has(kind)) return 'health';
  if (ACTIVITY_KINDS.has(kind)) return 'activity';
  switch (kind) {
    case 'navigation':
    case 'load':
    case 'dom_content_loaded':
      return 'tab';
    case 'layout_shift':
    case 'lcp':
      return 'page';
    case 'network_idle':
    case 'page_layout_settled':
    case 'page_navigation_settled':
      return 'settled';
    default:
      return undefined;
  }
}
