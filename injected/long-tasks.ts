// Long tasks (docs/page-script.md "Long tasks"): PerformanceObserver `longtask` entries at least the
// configured long, with their container attribution, and the scripts Chromium attributes to the
// long animation frame (`long-animation-frame`) that holds the task, which name the function and
// the script URL. The browser calls back only when there are new entries: nothing runs while the
// page is idle.

import type { Report } from './report.ts';
import { PAGE_SCRIPT_LIMITS, type LongTaskAttribution, type LongTaskScript } from './schema.ts';
import { cut } from './visible-text.ts';

// Not in TypeScript's DOM library.
interface TaskAttributionEntry extends PerformanceEntry {
  containerType: string;
  containerSrc: string;
  containerId: string;
  containerName: string;
}

interface LongTaskEntry extends PerformanceEntry {
  attribution: readonly TaskAttributionEntry[];
}

interface ScriptEntry extends PerformanceEntry {
  invokerType: string;
  invoker: string;
  sourceURL: string;
  sourceFunctionName: string;
  sourceCharPosition: number;
}

interface AnimationFrameEntry extends PerformanceEntry {
  scripts: readonly ScriptEntry[];
}

/** Long animation frames kept to attribute the long tasks reported after them. */
const KEPT_FRAMES = 8;
const MAX_SCRIPTS = 5;
const MAX_ATTRIBUTIONS = 5;

/** `since`: report only entries that start at or after this time (ms since the time origin). */
export function installLongTasks(report: Report, thresholdMs: number, since?: number): () => void {
  const Observer = typeof PerformanceObserver === 'function' ? PerformanceObserver : undefined;
  const supported = Observer?.supportedEntryTypes ?? [];
  if (!Observer || !supported.includes('longtask')) return () => undefined;
  const frames: AnimationFrameEntry[] = [];
  const observers: PerformanceObserver[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waiting: LongTaskEntry[] = [];

  if (supported.includes('long-animation-frame')) {
    const frameObserver = new Observer((list) => {
      for (const entry of list.getEntries() as AnimationFrameEntry[]) {
        if (entry.duration < thresholdMs) continue;
        frames.push(entry);
        if (frames.length > KEPT_FRAMES) frames.shift();
      }
    });
    frameObserver.observe({ type: 'long-animation-frame', buffered: true });
    observers.push(frameObserver);
  }

  // Chromium delivers the frame entry after the task entry it holds: the task waits one turn.
  const flush = () => {
    timer = undefined;
    for (const task of waiting.splice(0)) report(toReport(task, frames));
  };
  const taskObserver = new Observer((list) => {
    for (const entry of list.getEntries() as LongTaskEntry[]) {
      if (entry.duration < thresholdMs || (since !== undefined && entry.startTime < since)) continue;
      waiting.push(entry);
    }
    if (waiting.length > 0 && timer === undefined) timer = setTimeout(flush, 0);
  });
  taskObserver.observe({ type: 'longtask', buffered: true });
  observers.push(taskObserver);

  return () => {
    for (const observer of observers) observer.disconnect();
    if (timer !== undefined) clearTimeout(timer);
    frames.length = 0;
    waiting.length = 0;
  };
}

function toReport(task: LongTaskEntry, frames: readonly AnimationFrameEntry[]): Parameters<Report>[0] {
  const attribution: LongTaskAttribution[] = [];
  for (const a of task.attribution.slice(0, MAX_ATTRIBUTIONS)) {
    const item: LongTaskAttribution = { name: cut(a.name, 64) };
    if (a.containerType) item.container_type = cut(a.containerType, 64);
    if (a.containerSrc) item.container_src = cut(a.containerSrc, PAGE_SCRIPT_LIMITS.urlChars);
    if (a.containerId) item.container_id = cut(a.containerId, PAGE_SCRIPT_LIMITS.elementIdChars);
    if (a.containerName) item.container_name = cut(a.containerName, PAGE_SCRIPT_LIMITS.elementIdChars);
    attribution.push(item);
  }
  const end = task.startTime + task.duration;
  // The frame that holds the task: it starts at or before the task and ends at or after it.
  const frame = frames.find((f) => f.startTime <= task.startTime + 1 && f.startTime + f.duration >= end - 1);
  const scripts: LongTaskScript[] | undefined = frame?.scripts
    .filter((s) => s.startTime + s.duration >= task.startTime && s.startTime <= end)
    .sort((a, b) => b.duration - a.duration)
    .slice(0, MAX_SCRIPTS)
    .map((s) => ({
      invoker_type: cut(s.invokerType, 64),
      invoker: cut(s.invoker, PAGE_SCRIPT_LIMITS.selectorChars),
      source_url: cut(s.sourceURL, PAGE_SCRIPT_LIMITS.urlChars),
      source_function_name: cut(s.sourceFunctionName, PAGE_SCRIPT_LIMITS.selectorChars),
      source_char_position: Math.max(0, s.sourceCharPosition),
      duration: s.duration,
    }));
  return {
    type: 'page_long_task',
    time: task.startTime,
    duration: task.duration,
    attribution,
    ...(scripts !== undefined && scripts.length > 0 && { scripts }),
  };
}
