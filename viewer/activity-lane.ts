// The timeline's Activity lane (docs/viewer.md "What it shows"): dialogs and file choosers,
// downloads, WebSocket and EventSource traffic, and each document's Web Vitals. One row each for
// the first three; a closed dialog is a span over the time it blocked the page; a Web Vitals
// report is a tall bar. Its marks come from `activityMark` (the model calls it for these types).

import type { EventContext, PageWebVitalsData, SessionTroubleEventData } from '../injected/schema.ts';
import type { Mark, MarkKind } from './model.ts';

export type ActivityKind = 'dialog' | 'file_chooser' | 'download' | 'socket' | 'web_vitals';

export const ACTIVITY_KINDS: ReadonlySet<MarkKind> = new Set<ActivityKind>(['dialog', 'file_chooser', 'download', 'socket', 'web_vitals']);

export interface ActivityMark {
  kind: ActivityKind;
  label: string;
  severity: Mark['severity'];
  /** A closed dialog: how long it was open (ms), ending at the mark. */
  value?: number;
}

type Data<K extends keyof SessionTroubleEventData> = SessionTroubleEventData[K];

/** The mark of an event of the Activity lane; undefined for other types. */
export function activityMark(type: string, data: EventContext): ActivityMark | undefined {
  switch (type) {
    case 'page_dialog_opened': {
      const d = data as Data<'page_dialog_opened'>;
      return { kind: 'dialog', label: `${d.dialog_type} opened “${clip(d.message)}”`, severity: 'warn' };
    }
    case 'page_dialog_closed': {
      const d = data as Data<'page_dialog_closed'>;
      const how = d.accepted ? 'accepted' : 'dismissed';
      const input = d.user_input === undefined ? '' : ` with “${clip(d.user_input)}”`;
      const open = d.open_ms === undefined ? '' : ` after ${ms(d.open_ms)}`;
      return { kind: 'dialog', label: `${d.dialog_type ?? 'dialog'} ${how}${input}${open} (${d.closed_by})`, severity: 'info', value: d.open_ms };
    }
    case 'page_file_chooser_opened':
      return { kind: 'file_chooser', label: `file chooser opened (${(data as Data<'page_file_chooser_opened'>).mode})`, severity: 'info' };
    case 'network_download_started': {
      const d = data as Data<'network_download_started'>;
      return { kind: 'download', label: `download started: ${d.suggested_filename}`, severity: 'info' };
    }
    case 'network_download_progress': {
      const d = data as Data<'network_download_progress'>;
      return { kind: 'download', label: `download ${bytes(d.received_bytes)}${d.total_bytes ? ` of ${bytes(d.total_bytes)}` : ''}`, severity: 'info' };
    }
    case 'network_download_finished': {
      const d = data as Data<'network_download_finished'>;
      const name = d.suggested_filename ?? d.guid;
      return { kind: 'download', label: `download ${d.state}: ${name} (${bytes(d.received_bytes)})`, severity: d.state === 'completed' ? 'info' : 'warn' };
    }
    case 'network_websocket_opened': {
      const d = data as Data<'network_websocket_opened'>;
      return { kind: 'socket', label: `WebSocket opened ${d.url ?? ''} (${d.status})`, severity: 'info' };
    }
    case 'network_websocket_frame': {
      const d = data as Data<'network_websocket_frame'>;
      const text = d.payload !== undefined && d.payload_encoding === undefined ? ` “${clip(d.payload)}”` : '';
      return { kind: 'socket', label: `WebSocket ${d.direction} ${bytes(d.size)}${text}`, severity: 'info' };
    }
    case 'network_websocket_closed': {
      const d = data as Data<'network_websocket_closed'>;
      const dropped = d.dropped_frames ? `, ${d.dropped_frames} frames dropped` : '';
      return { kind: 'socket', label: `WebSocket closed${d.code === undefined ? '' : ` (${d.code})`}${dropped}`, severity: d.dropped_frames ? 'warn' : 'info' };
    }
    case 'network_eventsource_opened': {
      const d = data as Data<'network_eventsource_opened'>;
      return { kind: 'socket', label: `EventSource opened ${d.url ?? ''} (${d.status})`, severity: 'info' };
    }
    case 'network_eventsource_message': {
      const d = data as Data<'network_eventsource_message'>;
      const text = d.data === undefined ? '' : ` “${clip(d.data)}”`;
      return { kind: 'socket', label: `EventSource ${d.event_name || 'message'} ${bytes(d.size)}${text}`, severity: 'info' };
    }
    case 'page_web_vitals':
      return { kind: 'web_vitals', label: webVitalsLabel(data as PageWebVitalsData), severity: 'info' };
    default:
      return undefined;
  }
}

/** "Web Vitals (hidden): TTFB 12 ms, FCP 80 ms, LCP 90 ms, CLS 0.0123, INP 40 ms (click)". */
export function webVitalsLabel(d: PageWebVitalsData): string {
  const parts: string[] = [];
  if (d.ttfb !== undefined) parts.push(`TTFB ${ms(d.ttfb)}`);
  if (d.fcp !== undefined) parts.push(`FCP ${ms(d.fcp)}`);
  if (d.lcp) parts.push(`LCP ${ms(d.lcp.value)}`);
  if (d.cls) parts.push(`CLS ${d.cls.value.toFixed(4)}`);
  if (d.inp) parts.push(`INP ${ms(d.inp.value)} (${d.inp.event_type})`);
  return `Web Vitals (${d.reason}): ${parts.length === 0 ? 'none measured' : parts.join(', ')}`;
}

/** Counts for the timeline's accessible summary: "2 dialogs, 1 download, ...". */
export function activitySummary(marks: readonly Mark[]): string {
  const counts = new Map<MarkKind, number>();
  for (const mark of marks) if (ACTIVITY_KINDS.has(mark.kind)) counts.set(mark.kind, (counts.get(mark.kind) ?? 0) + 1);
  const names: Record<ActivityKind, string> = {
    dialog: 'dialog events',
    file_chooser: 'file choosers',
    download: 'download events',
    socket: 'socket events',
    web_vitals: 'Web Vitals reports',
  };
  return [...counts].map(([kind, n]) => `${n} ${names[kind as ActivityKind]}`).join(', ');
}

export interface ActivityColors {
  warning: string;
  info: string;
  network: string;
  page: string;
  error: string;
}

export function drawActivityLane(
  ctx: CanvasRenderingContext2D,
  marks: readonly Mark[],
  x: (ts: number) => number,
  lane: { top: number; height: number; start: number; end: number },
  colors: ActivityColors,
  inTarget: (id: string | undefined) => boolean,
): void {
  const { top, height } = lane;
  for (const mark of marks) {
    if (!ACTIVITY_KINDS.has(mark.kind) || !inTarget(mark.targetId)) continue;
    const spanStart = mark.kind === 'dialog' && mark.value !== undefined ? mark.ts - mark.value * 1000 : mark.ts;
    if (mark.ts < lane.start || spanStart > lane.end) continue;
    const x1 = x(mark.ts);
    const color = mark.severity === 'error' ? colors.error : mark.severity === 'warn' ? colors.warning : undefined;
    switch (mark.kind as ActivityKind) {
      case 'dialog':
      case 'file_chooser': {
        const x0 = x(spanStart);
        ctx.fillStyle = color ?? colors.info;
        ctx.fillRect(x0 - 1, top + 3, Math.max(3, x1 - x0 + 1), 5);
        break;
      }
      case 'download':
        ctx.fillStyle = color ?? colors.network;
        ctx.fillRect(x1 - 1, top + 9, 3, 5);
        break;
      case 'socket':
        ctx.fillStyle = color ?? colors.network;
        ctx.fillRect(x1, top + 15, 1, 5);
        break;
      case 'web_vitals':
        ctx.fillStyle = colors.page;
        ctx.fillRect(x1 - 1, top + 2, 3, height - 4);
        break;
    }
  }
}

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

function ms(value: number): string {
  return value < 1000 ? `${Math.round(value)} ms` : `${(value / 1000).toFixed(1)} s`;
}

function bytes(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
