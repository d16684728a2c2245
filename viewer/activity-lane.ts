// The timeline's Activity lane (docs/viewer.md "What it shows"): dialogs and file choosers,
// downloads, WebSocket and EventSource traffic, and each document's Web Vitals. One row each for
// the first three; a closed dialog is a span over the time it blocked the page; a Web Vitals
// report is a tall bar. Its marks come from `activityMark` (the model calls it for these types).

import { assertNever } from '../src/assert-never.ts';
import type { PageWebVitalsData, SessionTroubleEventData, TelemetryEvent } from '../injected/schema.ts';
import type { ActivityKind, Mark, MarkKind } from './marks.ts';

export const ACTIVITY_KINDS: ReadonlySet<MarkKind> = new Set<ActivityKind>(['dialog', 'file_chooser', 'download', 'socket', 'web_vitals']);

export interface ActivityMark {
  kind: ActivityKind;
  label: string;
  severity: Mark['severity'];
  /** A closed dialog: how long it was open (ms), ending at the mark. */
  value?: number;
}

/** The event types of the lane. */
export type ActivityEventType = keyof SessionTroubleEventData;

/** The mark of an event of the Activity lane (undefined when it has no data). */
export function activityMark(event: TelemetryEvent<ActivityEventType>): ActivityMark | undefined {
  const { type, data } = event;
  if (data === undefined) return undefined;
  switch (type) {
    case 'page_dialog_opened':
      return { kind: 'dialog', label: `${data.dialog_type} opened “${clip(data.message)}”`, severity: 'warn' };
    case 'page_dialog_closed': {
      const how = data.accepted ? 'accepted' : 'dismissed';
      const input = data.user_input === undefined ? '' : ` with “${clip(data.user_input)}”`;
      const open = data.open_ms === undefined ? '' : ` after ${ms(data.open_ms)}`;
      return { kind: 'dialog', label: `${data.dialog_type ?? 'dialog'} ${how}${input}${open} (${data.closed_by})`, severity: 'info', value: data.open_ms };
    }
    case 'page_file_chooser_opened':
      return { kind: 'file_chooser', label: `file chooser opened (${data.mode})`, severity: 'info' };
    case 'network_download_started':
      return { kind: 'download', label: `download started: ${data.suggested_filename}`, severity: 'info' };
    case 'network_download_progress':
      return {
        kind: 'download',
        label: `download ${bytes(data.received_bytes)}${data.total_bytes ? ` of ${bytes(data.total_bytes)}` : ''}`,
        severity: 'info',
      };
    case 'network_download_finished': {
      const name = data.suggested_filename ?? data.guid;
      return {
        kind: 'download',
        label: `download ${data.state}: ${name} (${bytes(data.received_bytes)})`,
        severity: data.state === 'completed' ? 'info' : 'warn',
      };
    }
    case 'network_websocket_opened':
      return { kind: 'socket', label: `WebSocket opened ${data.url ?? ''} (${data.status})`, severity: 'info' };
    case 'network_websocket_frame': {
      const text = data.payload !== undefined && data.payload_encoding === undefined ? ` “${clip(data.payload)}”` : '';
      return { kind: 'socket', label: `WebSocket ${data.direction} ${bytes(data.size)}${text}`, severity: 'info' };
    }
    case 'network_websocket_closed': {
      const dropped = data.dropped_frames ? `, ${data.dropped_frames} frames dropped` : '';
      return {
        kind: 'socket',
        label: `WebSocket closed${data.code === undefined ? '' : ` (${data.code})`}${dropped}`,
        severity: data.dropped_frames ? 'warn' : 'info',
      };
    }
    case 'network_eventsource_opened':
      return { kind: 'socket', label: `EventSource opened ${data.url ?? ''} (${data.status})`, severity: 'info' };
    case 'network_eventsource_message': {
      const text = data.data === undefined ? '' : ` “${clip(data.data)}”`;
      return { kind: 'socket', label: `EventSource ${data.event_name || 'message'} ${bytes(data.size)}${text}`, severity: 'info' };
    }
    case 'page_web_vitals':
      return { kind: 'web_vitals', label: webVitalsLabel(data), severity: 'info' };
    default:
      return assertNever(type);
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
