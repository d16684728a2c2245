// The timeline's Health lane (docs/viewer.md "What it shows"): crashes, OOM kills, hangs, long
// tasks and who watched the live view. Instants are drawn as marks; a hang (page_responsive) and a
// long task as a span ending at their event.

import type { Mark, MarkKind } from './model.ts';

export const HEALTH_KINDS: ReadonlySet<MarkKind> = new Set([
  'service_crashed',
  'oom_kill',
  'tab_crashed',
  'tab_recovered',
  'unresponsive',
  'responsive',
  'long_task',
  'live_view',
]);

export interface HealthColors {
  error: string;
  warning: string;
  info: string;
  settled: string;
}

export function drawHealthLane(
  ctx: CanvasRenderingContext2D,
  marks: readonly Mark[],
  x: (ts: number) => number,
  lane: { top: number; height: number; start: number; end: number },
  colors: HealthColors,
  inTarget: (id: string | undefined) => boolean,
): void {
  const { top, height } = lane;
  for (const mark of marks) {
    if (!HEALTH_KINDS.has(mark.kind) || !inTarget(mark.targetId)) continue;
    const spanStart = mark.kind === 'responsive' || mark.kind === 'long_task' ? mark.ts - (mark.value ?? 0) * 1000 : mark.ts;
    if (mark.ts < lane.start || spanStart > lane.end) continue;
    const x1 = x(mark.ts);
    switch (mark.kind) {
      case 'responsive':
      case 'long_task': {
        const x0 = x(spanStart);
        ctx.fillStyle = mark.kind === 'responsive' ? colors.error : colors.warning;
        ctx.fillRect(x0, top + (mark.kind === 'responsive' ? 3 : 12), Math.max(2, x1 - x0), 6);
        break;
      }
      case 'live_view':
        ctx.fillStyle = colors.info;
        ctx.beginPath();
        ctx.arc(x1, top + height / 2, 3, 0, Math.PI * 2);
        ctx.fill();
        break;
      case 'tab_recovered':
        ctx.fillStyle = colors.settled;
        ctx.fillRect(x1 - 1, top + 3, 3, height - 6);
        break;
      default:
        // Crashes, OOM kills, the start of a hang: a red cross.
        ctx.strokeStyle = colors.error;
        ctx.lineWidth = 2;
        ctx.beginPath();
        ctx.moveTo(x1 - 4, top + 6);
        ctx.lineTo(x1 + 4, top + height - 6);
        ctx.moveTo(x1 + 4, top + 6);
        ctx.lineTo(x1 - 4, top + height - 6);
        ctx.stroke();
    }
  }
}
