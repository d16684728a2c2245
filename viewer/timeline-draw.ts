// The timeline's drawing (docs/viewer.md "Timeline"): the lanes, what each draws on the canvas,
// the notices across them, the axis, the cursor and highlight, and what is under a point (for the
// tooltip and clicks). It draws the state timeline.ts hands it (a TimelineScene) and holds none
// of that state: the visible range, the cursor and the selection are timeline.ts's, the input
// that changes them timeline-input.ts's. What is drawn depends on the visible pixels, not on how
// many events are held. The base (lanes, axis) is redrawn only when the data or range changed;
// the overlay (cursor, highlight) at every draw.

import { clock, duration, shortId, shortUrl } from './format.ts';
import { ACTIVITY_KINDS, activitySummary, drawActivityLane } from './activity-lane.ts';
import { drawHealthLane, HEALTH_KINDS } from './health-lane.ts';
import { drawActionLane } from './action-lane.ts';
import { drawStepLane, stepAt, stepSpans } from './step-lane.ts';
import type { Envelope } from '../injected/schema.ts';
import { NOTICE_KINDS, type ConsoleLevel, type Mark, type MarkKind, type SessionModel, type ViewCategory } from './model.ts';
import { axisStep, tsAt, xOf, type Range } from './timeline-range.ts';

export interface TimelineFilter {
  categories: ReadonlySet<ViewCategory>;
  targetId: string | undefined;
}

/** What one draw shows. */
export interface TimelineScene {
  range: Range;
  filter: TimelineFilter;
  /** The selected action (its action_id) and the held events it caused. */
  selectedAction: string | undefined;
  effects: readonly Envelope[];
  /** The moment marked by highlight(), and the cursor (hovered, else pinned). */
  highlightTs: number | undefined;
  cursorTs: number | undefined;
}

/** Where the plot starts: the lane labels' gutter (CSS px). */
export const GUTTER = 96;
const AXIS = 20;
const LANE = 22;
const MAX_TAB_LANES = 6;

export type LaneKind = 'tab' | 'console' | 'network' | 'interaction' | 'page' | 'settled' | 'screenshot' | 'health' | 'activity' | 'steps' | 'actions';

interface Lane {
  label: string;
  kind: LaneKind;
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

export class TimelinePainter {
  private readonly base = document.createElement('canvas');
  private palette!: Palette;
  private lanes: Lane[] = [];
  /** The range the lanes on screen were last drawn for (undefined before the first draw). */
  drawnRange: Range | undefined;
  private baseDirty = true;
  private overlayDirty = true;
  private width = 0;
  private height = 0;
  private cssWidth = 0;

  constructor(
    private readonly canvas: HTMLCanvasElement,
    private readonly model: SessionModel,
  ) {
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
  }

  /** The data or the range changed: redraw everything at the next draw. */
  invalidate(): void {
    this.baseDirty = true;
    this.overlayDirty = true;
  }

  /** Only the cursor or the highlight moved. */
  invalidateOverlay(): void {
    this.overlayDirty = true;
  }

  /** Whether the next draw has anything to do. */
  get dirty(): boolean {
    return this.baseDirty || this.overlayDirty;
  }

  /** Draws what changed (nothing before the canvas has a width). */
  draw(scene: TimelineScene): void {
    const rect = { width: this.cssWidth };
    if (rect.width === 0) return;
    this.lanes = this.computeLanes(scene.filter);
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
      this.drawBase(ctx, scene);
      this.baseDirty = false;
      this.drawnRange = scene.range;
      this.canvas.setAttribute('aria-label', this.summary(scene.range));
    }
    const ctx = this.canvas.getContext('2d')!;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    ctx.drawImage(this.base, 0, 0);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    this.drawOverlay(ctx, scene);
    this.overlayDirty = false;
  }

  /** The x of `ts` on the canvas as last drawn. */
  x(ts: number, range: Range): number {
    return xOf(ts, range, GUTTER, this.width);
  }

  /** The time at `x` on the canvas as last drawn. */
  tsAt(x: number, range: Range): number {
    return tsAt(x, range, GUTTER, this.width);
  }

  /** The kind of the lane at `y` (CSS px from the canvas's top); undefined above or below the lanes. */
  laneAt(y: number): LaneKind | undefined {
    return this.lanes[Math.floor((y - AXIS) / LANE)]?.kind;
  }

  /** The action whose mark is within 5 px of `x`. */
  actionNear(x: number, range: Range): string | undefined {
    return this.model.actions.find((a) => Math.abs(this.x(a.ts, range) - x) <= 5)?.actionId;
  }

  private computeLanes(filter: TimelineFilter): Lane[] {
    const { categories, targetId } = filter;
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
    if (this.model.steps.length > 0) lanes.push({ label: 'Steps', kind: 'steps' });
    if (this.model.actions.length > 0) lanes.push({ label: 'Actions', kind: 'actions' });
    return lanes;
  }

  private drawBase(ctx: CanvasRenderingContext2D, scene: TimelineScene): void {
    const p = this.palette;
    const { range } = scene;
    const { targetId } = scene.filter;
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
        case 'steps':
          drawStepLane(
            ctx,
            stepSpans(this.model.steps),
            (ts) => this.x(ts, range),
            // A step still going runs to the live edge: the newest event, or the view's end past it.
            { top, height: LANE, ...range, now: Math.max(this.model.maxTs, range.end) },
            { step: p.accent, text: p.text },
          );
          break;
        case 'actions':
          drawActionLane(
            ctx,
            this.model.actions,
            scene.effects,
            scene.selectedAction,
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

  private drawOverlay(ctx: CanvasRenderingContext2D, scene: TimelineScene): void {
    const p = this.palette;
    const { range, highlightTs } = scene;
    if (highlightTs !== undefined && highlightTs >= range.start && highlightTs <= range.end) {
      const x = this.x(highlightTs, range);
      ctx.fillStyle = p.accent;
      ctx.globalAlpha = 0.3;
      ctx.fillRect(x - 4, AXIS, 9, this.height - AXIS);
      ctx.globalAlpha = 1;
      ctx.fillRect(x, AXIS, 1.5, this.height - AXIS);
    }
    const cursor = scene.cursorTs;
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
  describeAt(x: number, y: number, range: Range): string | undefined {
    const lane = this.lanes[Math.floor((y - AXIS) / LANE)];
    if (!lane || x < GUTTER) return undefined;
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
        const entry = this.model.network.find((e) => e.ts <= this.tsAt(x + 3, range) && (e.endTs ?? this.model.maxTs) >= this.tsAt(x - 3, range));
        if (!entry) return undefined;
        const took = entry.endTs === undefined ? 'pending' : duration((entry.endTs - entry.ts) / 1000);
        return `${entry.method} ${shortUrl(entry.url)} ${entry.failed ?? entry.status ?? ''} (${took})`;
      }
      case 'interaction': {
        const row = this.model.interactions.find((r) => near(r.ts));
        return row && `${clock(row.ts)} ${row.kind} ${row.selector} ${row.detail}`;
      }
      case 'steps': {
        const step = stepAt(stepSpans(this.model.steps), this.tsAt(x, range), Math.max(this.model.maxTs, range.end));
        return step && `${clock(step.ts)} step ${step.name} (${step.via}, ${step.caller})`;
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

  private summary(range: Range): string {
    const { start, end } = range;
    const m = this.model;
    const activity = activitySummary(m.marks);
    return `Timeline from ${clock(start)} to ${clock(end)}: ${m.console.length} console messages, ${m.network.length} requests, ${m.interactions.length} interactions, ${m.screenshots.length} screenshots, ${m.marks.filter(isNotice).length} notices${activity ? `, ${activity}` : ''}`;
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

function laneOfMark(kind: MarkKind): LaneKind | undefined {
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
