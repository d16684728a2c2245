// What the viewer holds of the session: every envelope received (deduplicated by seq), and the
// per-panel rows derived from them as they arrive: console messages, network requests (one entry
// per request, merged from its request/response/failure events), interactions, screenshots,
// targets, and timeline marks. Bounded: beyond MAX_HELD_EVENTS the oldest are dropped
// (docs/viewer.md "Limits").

import { actionOf, type ActionRow } from './action-lane.ts';
import { stepOf, type StepRow } from './step-lane.ts';
import { skipUnknown } from '../src/assert-never.ts';
import { contextOf } from '../src/event-data.ts';
import type {
  ConsoleErrorData,
  ConsoleLogData,
  Envelope,
  HeaderMap,
  NetworkLoadingFailedData,
  NetworkRequestData,
  NetworkResponseData,
  PageNavigationData,
  PageTabOpenedData,
  StackTrace,
  TelemetryEvent,
} from '../injected/schema.ts';
import { activityMark } from './activity-lane.ts';
import type { Mark, MarkKind, Row } from './marks.ts';

export type { Mark, MarkKind, Row } from './marks.ts';

/** Categories as the viewer filters them (the event's wire category). */
export const VIEW_CATEGORIES = ['console', 'network', 'page', 'interaction', 'screenshot', 'monitor', 'system', 'connection'] as const;
export type ViewCategory = (typeof VIEW_CATEGORIES)[number];

export const CONSOLE_LEVELS = ['error', 'warning', 'info', 'log', 'debug'] as const;
export type ConsoleLevel = (typeof CONSOLE_LEVELS)[number];

export const MAX_HELD_EVENTS = 50_000;
/** Screenshots whose image is kept (each up to 750 KiB of base64); older ones keep their mark. */
export const MAX_HELD_SCREENSHOTS = 60;

export interface ConsoleRow extends Row {
  level: ConsoleLevel;
  text: string;
  /** `url:line:column` of the message's origin, when known. */
  origin: string;
  stack: StackTrace | undefined;
  /** An uncaught exception (console_error). */
  exception: boolean;
}

export interface NetworkEntry extends Row {
  requestId: string;
  method: string;
  url: string;
  status: number | undefined;
  statusText: string;
  resourceType: string;
  mimeType: string;
  /** Response size in bytes when known (Content-Length, else the body kept). */
  size: number | undefined;
  /** When it finished or failed (unix µs). */
  endTs: number | undefined;
  failed: string | undefined;
  canceled: boolean;
  requestHeaders: HeaderMap;
  responseHeaders: HeaderMap | undefined;
  postData: string | undefined;
  body: string | undefined;
  truncated: boolean;
  /** URLs this request was redirected from, in order. */
  redirects: string[];
}

export type InteractionKind = 'click' | 'key' | 'scroll';

export interface InteractionRow extends Row {
  kind: InteractionKind;
  selector: string;
  detail: string;
}

export interface ScreenshotRow extends Row {
  /** `data:` URL of the PNG; undefined once dropped for memory. */
  image: string | undefined;
}

export interface TargetRow {
  id: string;
  type: string;
  url: string;
  title: string;
  openerId: string | undefined;
  firstTs: number;
  lastTs: number;
  navigations: number;
  /** Same-process child frames seen navigating: frame id → URL. */
  frames: Map<string, string>;
}

/** Marks that tell of lost or interrupted telemetry, listed above the panels. */
export const NOTICE_KINDS: ReadonlySet<MarkKind> = new Set([
  'disconnected',
  'reconnected',
  'reconnect_failed',
  'init_failed',
  'gap',
  'stream_resumed',
  'agent_restarted',
  'page_behind',
  'service_crashed',
]);

/** Which stores an ingest touched. */
export interface Changes {
  console: boolean;
  network: boolean;
  interactions: boolean;
  screenshots: boolean;
  targets: boolean;
  marks: boolean;
}

export function noChanges(): Changes {
  return { console: false, network: false, interactions: false, screenshots: false, targets: false, marks: false };
}

export class SessionModel {
  /** Every envelope held, in seq order. */
  readonly envelopes: Envelope[] = [];
  readonly console: ConsoleRow[] = [];
  readonly network: NetworkEntry[] = [];
  readonly interactions: InteractionRow[] = [];
  readonly screenshots: ScreenshotRow[] = [];
  readonly marks: Mark[] = [];
  /** Control events (the timeline's Actions lane, viewer/action-lane.ts). */
  readonly actions: ActionRow[] = [];
  /** The automation's steps (the timeline's Steps lane, viewer/step-lane.ts). */
  readonly steps: StepRow[] = [];
  /** Seqs of the effects of the action selected in the timeline: the lists highlight their rows. */
  readonly effectSeqs = new Set<number>();
  readonly targets = new Map<string, TargetRow>();
  /** Page targets in the order they were first seen (the timeline's tab lanes). */
  readonly tabs: string[] = [];
  /** Bumped when rows were removed or inserted out of order: views rebuild instead of appending. */
  epoch = 0;
  /** The oldest seq still held after a trim; 0 before any. */
  trimmedBefore = 0;
  minTs = Infinity;
  maxTs = -Infinity;
  readonly changes: Changes = noChanges();

  private readonly seqs = new Set<number>();
  /** Requests not finished yet, by request id (unique in a browser while the request lives). */
  private readonly openRequests = new Map<string, NetworkEntry>();
  private imagesHeld = 0;

  constructor(private readonly maxHeld = MAX_HELD_EVENTS) {}

  /** Forget everything (another agent process: its seqs mean other events). */
  reset(): void {
    for (const rows of [
      this.envelopes,
      this.console,
      this.network,
      this.interactions,
      this.screenshots,
      this.marks,
      this.actions,
      this.steps,
      this.tabs,
    ] as unknown[][])
      rows.length = 0;
    this.targets.clear();
    this.seqs.clear();
    this.openRequests.clear();
    this.imagesHeld = 0;
    this.trimmedBefore = 0;
    this.minTs = Infinity;
    this.maxTs = -Infinity;
    this.epoch++;
    Object.assign(this.changes, { console: true, network: true, interactions: true, screenshots: true, targets: true, marks: true });
  }

  has(seq: number): boolean {
    return this.seqs.has(seq);
  }

  /** Adds an envelope; false when its seq is already held. */
  ingest(envelope: Envelope): boolean {
    if (this.seqs.has(envelope.seq)) return false;
    this.seqs.add(envelope.seq);
    const inOrder = this.envelopes.length === 0 || envelope.seq > this.envelopes[this.envelopes.length - 1]!.seq;
    if (inOrder) this.envelopes.push(envelope);
    else {
      this.envelopes.splice(indexAfter(this.envelopes, envelope.seq), 0, envelope);
      this.epoch++;
    }
    const { event } = envelope;
    if (event.ts < this.minTs) this.minTs = event.ts;
    if (event.ts > this.maxTs) this.maxTs = event.ts;
    this.derive(envelope.seq, event);
    if (this.envelopes.length > this.maxHeld) this.trim();
    return true;
  }

  /** A mark of the viewer's own (a gap, a resumed stream). */
  addMark(mark: Omit<Mark, 'targetId'> & { targetId?: string }): void {
    this.pushRow(this.marks, { targetId: undefined, ...mark });
    this.changes.marks = true;
  }

  takeChanges(): Changes {
    const taken = { ...this.changes };
    Object.assign(this.changes, noChanges());
    return taken;
  }

  /** The category an event counts in (its wire category, or the schema's). */
  static categoryOf(event: TelemetryEvent): ViewCategory {
    if (event.category !== undefined && (VIEW_CATEGORIES as readonly string[]).includes(event.category)) return event.category as ViewCategory;
    if (event.type === 'monitor_screenshot') return 'screenshot';
    const prefix = event.type.slice(0, event.type.indexOf('_'));
    return (VIEW_CATEGORIES as readonly string[]).includes(prefix) ? (prefix as ViewCategory) : 'monitor';
  }

  private derive(seq: number, event: TelemetryEvent): void {
    const context = contextOf(event);
    const base: Row = { seq, ts: event.ts, targetId: context?.target_id };
    if (context?.target_id !== undefined) this.touchTarget(context.target_id, context.target_type, event.ts, context.url);
    if (event.data === undefined) return;
    switch (event.type) {
      // Console.
      case 'console_log':
        this.pushConsole(base, false, event.data);
        break;
      case 'console_error':
        this.pushConsole(base, true, event.data);
        break;
      // Network.
      case 'network_request':
        this.onRequest(base, event.data);
        break;
      case 'network_response':
        this.onResponse(base, event.data, event.truncated === true);
        break;
      case 'network_loading_failed':
        this.onFailed(base, event.data);
        break;
      case 'network_idle':
        this.mark(base, 'network_idle', 'network idle', 'info');
        break;
      // Page.
      case 'page_navigation':
        this.onNavigation(base, event.data);
        break;
      case 'page_dom_content_loaded':
        this.mark(base, 'dom_content_loaded', 'DOMContentLoaded', 'info');
        break;
      case 'page_load':
        this.mark(base, 'load', 'load', 'info');
        break;
      case 'page_tab_opened':
        this.onTabOpened(event.ts, event.data);
        break;
      case 'page_layout_shift': {
        const value = event.data.layout_shift_details?.value ?? 0;
        this.mark(base, 'layout_shift', `layout shift ${value.toFixed(4)}`, 'info', value);
        break;
      }
      case 'page_lcp': {
        const lcp = event.data.lcp_details;
        const what = lcp?.url ? lcp.url : lcp?.element_id ? `#${lcp.element_id}` : 'text';
        this.mark(base, 'lcp', `LCP ${Math.round(lcp?.render_time || lcp?.load_time || 0)} ms (${what})`, 'info', lcp?.size);
        break;
      }
      case 'page_layout_settled':
        this.mark(base, 'page_layout_settled', 'layout settled', 'info');
        break;
      case 'page_navigation_settled':
        this.mark(base, 'page_navigation_settled', 'navigation settled', 'info');
        break;
      // Interaction.
      case 'interaction_click':
        this.pushInteraction(
          base,
          'click',
          event.data.selector,
          `${event.data.tag}${event.data.text ? ` “${event.data.text}”` : ''} at ${event.data.x},${event.data.y}`,
        );
        break;
      case 'interaction_key':
        this.pushInteraction(base, 'key', event.data.selector, event.data.key);
        break;
      case 'interaction_scroll_settled':
        this.pushInteraction(base, 'scroll', event.data.target_selector, `${event.data.from_x},${event.data.from_y} → ${event.data.to_x},${event.data.to_y}`);
        break;
      // The agent's own connection and screenshots.
      case 'monitor_screenshot':
        this.pushScreenshot(base, event.data.png);
        break;
      case 'monitor_disconnected':
        this.mark(base, 'disconnected', `browser disconnected (${event.data.reason ?? 'unknown'})`, 'error');
        break;
      case 'monitor_reconnected':
        this.mark(base, 'reconnected', `browser reconnected after ${formatMs(event.data.reconnect_duration_ms)}`, 'warn');
        break;
      case 'monitor_reconnect_failed':
        this.mark(base, 'reconnect_failed', `reconnect failing (${event.data.attempts ?? '?'} attempts)`, 'error');
        break;
      case 'monitor_init_failed':
        this.mark(base, 'init_failed', `setup failed: ${event.data.step ?? ''} ${event.data.error ?? ''}`.trim(), 'error');
        break;
      // Failure signals and live view: the Health lane (viewer/health-lane.ts).
      case 'service_crashed': {
        const how = [event.data.phase, event.data.pid === undefined ? undefined : `pid ${event.data.pid}`, event.data.signal ?? event.data.exit_code]
          .filter((p) => p !== undefined)
          .join(', ');
        this.mark(base, 'service_crashed', `${event.data.service_name} crashed (${how})`, 'error');
        break;
      }
      case 'system_oom_kill':
        this.mark(
          base,
          'oom_kill',
          `OOM kill: ${event.data.process_name} (pid ${event.data.pid}, ${Math.round(event.data.rss_kb / 1024)} MiB${event.data.constraint ? `, ${event.data.constraint}` : ''})`,
          'error',
        );
        break;
      case 'page_crashed':
        this.mark(base, 'tab_crashed', `tab crashed (${event.data.status})`, 'error');
        break;
      case 'page_recovered':
        this.mark(base, 'tab_recovered', `tab recovered after ${formatMs(event.data.down_ms)}`, 'warn');
        break;
      case 'page_unresponsive':
        this.mark(base, 'unresponsive', `tab not answering for ${formatMs(event.data.threshold_ms)}`, 'error');
        break;
      case 'page_responsive':
        this.mark(base, 'responsive', `tab answered again after ${formatMs(event.data.unresponsive_ms)}`, 'warn', event.data.unresponsive_ms);
        break;
      case 'page_long_task': {
        const script = event.data.scripts?.[0];
        const where = script ? ` in ${script.source_function_name || script.invoker || script.source_url}` : '';
        this.mark(base, 'long_task', `long task ${formatMs(event.data.duration)}${where}`, 'warn', event.data.duration);
        break;
      }
      case 'live_view_connect':
        this.mark(base, 'live_view', `viewer ${event.data.session_id} opened the live view`, 'info');
        break;
      case 'live_view_disconnect':
        this.mark(base, 'live_view', `viewer ${event.data.session_id} left after ${formatMs(event.data.duration_ms)}`, 'info');
        break;
      // Control events: the Actions lane (viewer/action-lane.ts).
      case 'cdp_command':
      case 'api_call':
      case 'computer_action': {
        const action = actionOf(seq, event);
        if (action) {
          this.pushRow(this.actions, action);
          this.changes.marks = true;
        }
        break;
      }
      case 'step': {
        const step = stepOf(seq, event);
        if (step) {
          this.pushRow(this.steps, step);
          this.changes.marks = true;
        }
        break;
      }
      // Dialogs, downloads, sockets, Web Vitals: the Activity lane (viewer/activity-lane.ts).
      case 'page_dialog_opened':
      case 'page_dialog_closed':
      case 'page_file_chooser_opened':
      case 'network_download_started':
      case 'network_download_progress':
      case 'network_download_finished':
      case 'network_websocket_opened':
      case 'network_websocket_frame':
      case 'network_websocket_closed':
      case 'network_eventsource_opened':
      case 'network_eventsource_message':
      case 'page_web_vitals': {
        const activity = activityMark(event);
        if (activity) this.mark(base, activity.kind, activity.label, activity.severity, activity.value);
        break;
      }
      // Held (and downloadable), not shown.
      case 'cdp_connect':
      case 'cdp_disconnect':
      case 'replay_started':
      case 'replay_stopped':
        break;
      default:
        // A type of a newer agent: held (and downloadable), not shown.
        skipUnknown(event);
        break;
    }
  }

  private pushConsole(base: Row, exception: boolean, data: ConsoleLogData | ConsoleErrorData): void {
    const frame = data.stack_trace?.callFrames[0];
    let origin = '';
    if ('source_url' in data && data.source_url) origin = `${data.source_url}:${(data.line ?? 0) + 1}:${(data.column ?? 0) + 1}`;
    else if (frame) origin = `${frame.url}:${frame.lineNumber + 1}:${frame.columnNumber + 1}`;
    this.pushRow(this.console, {
      ...base,
      level: exception ? 'error' : consoleLevel(data.level),
      text: data.text ?? '',
      origin,
      stack: data.stack_trace,
      exception,
    });
    this.changes.console = true;
  }

  private onRequest(base: Row, data: NetworkRequestData): void {
    const key = data.request_id;
    const open = this.openRequests.get(key);
    if (open && data.is_redirect) {
      // A redirect hop: the same request goes on to a new URL.
      open.redirects.push(data.redirect_url ?? open.url);
      open.url = data.url ?? open.url;
      open.method = data.method;
      open.requestHeaders = data.headers ?? {};
      this.changes.network = true;
      return;
    }
    const entry: NetworkEntry = {
      ...base,
      requestId: data.request_id,
      method: data.method,
      url: data.url ?? '',
      status: undefined,
      statusText: '',
      resourceType: data.resource_type ?? '',
      mimeType: '',
      size: undefined,
      endTs: undefined,
      failed: undefined,
      canceled: false,
      requestHeaders: data.headers ?? {},
      responseHeaders: undefined,
      postData: data.post_data,
      body: undefined,
      truncated: false,
      redirects: data.is_redirect && data.redirect_url ? [data.redirect_url] : [],
    };
    this.openRequests.set(key, entry);
    this.pushRow(this.network, entry);
    this.changes.network = true;
  }

  /** The open entry of a request, or a new one for a request whose start the viewer never saw. */
  private entryFor(base: Row, requestId: string, url: string | undefined): NetworkEntry {
    const key = requestId;
    const open = this.openRequests.get(key);
    if (open) {
      this.openRequests.delete(key);
      return open;
    }
    const entry: NetworkEntry = {
      ...base,
      requestId,
      method: '',
      url: url ?? '',
      status: undefined,
      statusText: '',
      resourceType: '',
      mimeType: '',
      size: undefined,
      endTs: undefined,
      failed: undefined,
      canceled: false,
      requestHeaders: {},
      responseHeaders: undefined,
      postData: undefined,
      body: undefined,
      truncated: false,
      redirects: [],
    };
    this.pushRow(this.network, entry);
    return entry;
  }

  private onResponse(base: Row, data: NetworkResponseData, truncated: boolean): void {
    const entry = this.entryFor(base, data.request_id, data.url);
    entry.status = data.status;
    entry.statusText = data.status_text ?? '';
    entry.mimeType = data.mime_type ?? '';
    if (data.resource_type) entry.resourceType = data.resource_type;
    if (data.method) entry.method = data.method;
    entry.responseHeaders = data.headers ?? {};
    entry.body = data.body;
    entry.truncated = truncated;
    entry.endTs = base.ts;
    entry.size = contentLength(entry.responseHeaders) ?? (data.body === undefined ? undefined : utf8Length(data.body));
    this.changes.network = true;
  }

  private onFailed(base: Row, data: NetworkLoadingFailedData): void {
    const entry = this.entryFor(base, data.request_id, data.url);
    entry.failed = data.error_text || 'failed';
    entry.canceled = data.canceled;
    if (data.resource_type) entry.resourceType = data.resource_type;
    entry.endTs = base.ts;
    this.changes.network = true;
  }

  private onNavigation(base: Row, data: PageNavigationData): void {
    const targetId = data.target_id;
    if (targetId === undefined) return;
    const target = this.targets.get(targetId);
    if (data.parent_frame_id !== undefined) {
      target?.frames.set(data.frame_id, data.url);
      this.changes.targets = true;
      return;
    }
    if (target) {
      target.url = data.url;
      target.navigations++;
    }
    this.changes.targets = true;
    if (data.target_type === 'page' || target?.type === 'page') this.mark(base, 'navigation', data.url, 'info');
  }

  private onTabOpened(ts: number, data: PageTabOpenedData): void {
    const target = this.touchTarget(data.target_id, data.target_type, ts, data.url);
    target.title = data.title || target.title;
    target.openerId = data.opener_id;
  }

  private touchTarget(id: string, type: string | undefined, ts: number, url: string | undefined): TargetRow {
    let target = this.targets.get(id);
    if (!target) {
      target = { id, type: type ?? 'other', url: url ?? '', title: '', openerId: undefined, firstTs: ts, lastTs: ts, navigations: 0, frames: new Map() };
      this.targets.set(id, target);
      if (target.type === 'page') this.tabs.push(id);
      this.changes.targets = true;
    } else {
      if (ts > target.lastTs) target.lastTs = ts;
      if (ts < target.firstTs) target.firstTs = ts;
      if (type !== undefined && target.type === 'other' && type !== 'other') {
        target.type = type;
        if (type === 'page') this.tabs.push(id);
      }
      if (!target.url && url) target.url = url;
    }
    return target;
  }

  private pushInteraction(base: Row, kind: InteractionKind, selector: string, detail: string): void {
    this.pushRow(this.interactions, { ...base, kind, selector: selector ?? '', detail });
    this.changes.interactions = true;
  }

  private pushScreenshot(base: Row, png: string | undefined): void {
    this.pushRow(this.screenshots, { ...base, image: png ? `data:image/png;base64,${png}` : undefined });
    if (png) this.imagesHeld++;
    // Drop the oldest images first; their marks stay on the timeline.
    for (let i = 0; this.imagesHeld > MAX_HELD_SCREENSHOTS && i < this.screenshots.length; i++) {
      const shot = this.screenshots[i]!;
      if (shot.image === undefined) continue;
      shot.image = undefined;
      this.imagesHeld--;
    }
    this.changes.screenshots = true;
  }

  private mark(base: Row, kind: MarkKind, label: string, severity: Mark['severity'], value?: number): void {
    this.pushRow(this.marks, { ...base, kind, label, severity, ...(value === undefined ? {} : { value }) });
    this.changes.marks = true;
  }

  /** Appends a row, or inserts it at its seq (a replay filling in what a filter left out). */
  private pushRow<T extends Row>(rows: T[], row: T): void {
    if (rows.length === 0 || row.seq >= rows[rows.length - 1]!.seq) rows.push(row);
    else {
      rows.splice(indexAfter(rows, row.seq), 0, row);
      this.epoch++;
    }
  }

  /** Drops the oldest fifth of what is held. */
  private trim(): void {
    const drop = Math.ceil(this.maxHeld / 5);
    const cutoff = this.envelopes[drop]!.seq;
    for (const envelope of this.envelopes.splice(0, drop)) this.seqs.delete(envelope.seq);
    const keep = (rows: Row[]) => {
      const first = indexAfter(rows, cutoff - 1);
      rows.splice(0, first);
    };
    keep(this.console);
    keep(this.network);
    keep(this.interactions);
    this.actions.splice(0, indexAfter(this.actions, cutoff - 1));
    this.steps.splice(0, indexAfter(this.steps, cutoff - 1));
    const droppedShots = this.screenshots.splice(0, indexAfter(this.screenshots, cutoff - 1));
    this.imagesHeld -= droppedShots.filter((s) => s.image !== undefined).length;
    // Notices stay: they are few and say what happened to the telemetry.
    const marks = this.marks.filter((m) => m.seq >= cutoff || NOTICE_KINDS.has(m.kind));
    this.marks.splice(0, this.marks.length, ...marks);
    for (const [key, entry] of this.openRequests) if (entry.seq < cutoff) this.openRequests.delete(key);
    this.minTs = this.envelopes[0]?.event.ts ?? Infinity;
    for (const m of this.marks) if (m.ts < this.minTs) this.minTs = m.ts;
    this.trimmedBefore = cutoff;
    this.epoch++;
    Object.assign(this.changes, { console: true, network: true, interactions: true, screenshots: true, marks: true });
  }
}

/** First index whose seq is greater than `seq` (rows sorted by seq). */
export function indexAfter(rows: ReadonlyArray<{ seq: number }>, seq: number): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (rows[mid]!.seq <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function consoleLevel(level: string | undefined): ConsoleLevel {
  switch (level) {
    case 'error':
    case 'assert':
      return 'error';
    case 'warning':
    case 'warn':
      return 'warning';
    case 'info':
      return 'info';
    case 'debug':
    case 'verbose':
      return 'debug';
    default:
      return 'log';
  }
}

function contentLength(headers: HeaderMap): number | undefined {
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() !== 'content-length') continue;
    const n = Number(value);
    return Number.isFinite(n) && n >= 0 ? n : undefined;
  }
  return undefined;
}

function utf8Length(text: string): number {
  return new TextEncoder().encode(text).length;
}

function formatMs(ms: number | undefined): string {
  if (ms === undefined) return '?';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}
