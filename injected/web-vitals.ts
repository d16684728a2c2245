// Web Vitals of the top-level document (docs/page-script.md "Web Vitals"): TTFB, FCP, LCP, CLS and
// INP computed the way Google's web-vitals library (v5+) computes them. The script sends a
// snapshot SNAPSHOT_DELAY_MS after they change (one for a burst of changes) and one at once when
// the document is hidden; the agent emits page_web_vitals from the latest snapshot when the tab
// leaves the document (what a document does while it unloads never reaches CDP: measured, a
// `pagehide` listener's binding call and console output are lost). Buffered PerformanceObservers:
// the browser calls back only with new entries; INP observes only events of 40 ms or more (the
// library's threshold), so a fast click costs nothing here. Selectors are computed per snapshot for
// the LCP and CLS elements, and once per slow interaction for its target (as the library does: an
// entry's target can read null later).

import type { Report } from './report.ts';
import { PAGE_SCRIPT_LIMITS, type WebVitalsElement, type WebVitalsReport } from './schema.ts';
import { uniqueSelector } from './selector.ts';
import { cut } from './visible-text.ts';

// Not in TypeScript's DOM library.
interface LayoutShiftEntry extends PerformanceEntry {
  value: number;
  hadRecentInput: boolean;
  sources?: Array<{ node: Node | null }>;
}
interface LcpEntry extends PerformanceEntry {
  url: string;
  element: Element | null;
}
interface EventEntry extends PerformanceEntry {
  interactionId?: number;
  processingStart: number;
  processingEnd: number;
  target: Node | null;
}
interface Interaction {
  id: number;
  latency: number;
  /** Its longest entry first, then its other entries presented in the same frame. */
  entries: EventEntry[];
  /** Its element, described when an entry first names one: an entry's target can be null later. */
  target?: WebVitalsElement;
}

/** The library's INP rules: the 10 longest interactions kept, p98 by interaction count / 50. */
const MAX_INTERACTIONS = 10;
const INP_DURATION_THRESHOLD = 40;
/**
 * Entries whose ends (startTime + duration, durations rounded to 8 ms) are this close were
 * presented in one frame (the library's rule).
 */
const SAME_FRAME_MS = 8;
const sameFrame = (a: EventEntry, b: EventEntry): boolean => Math.abs(a.startTime + a.duration - (b.startTime + b.duration)) <= SAME_FRAME_MS;
/** A snapshot follows the last change of a burst by this long. */
export const SNAPSHOT_DELAY_MS = 100;

export interface WebVitalsReporting {
  dispose(): void;
}

export function installWebVitals(report: Report, win: Window): WebVitalsReporting {
  const doc = win.document;
  const perf = win.performance;
  const Observer = typeof PerformanceObserver === 'function' ? PerformanceObserver : undefined;
  const supported = Observer?.supportedEntryTypes ?? [];
  const observers: PerformanceObserver[] = [];
  const navigation = perf.getEntriesByType('navigation')[0] as (PerformanceNavigationTiming & { activationStart?: number }) | undefined;
  const activationStart = navigation?.activationStart ?? 0;
  let firstHiddenTime = doc.visibilityState === 'hidden' ? 0 : Infinity;
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** Snapshots stop once the hidden one is sent: the agent reports that one. */
  let hiddenSent = false;
  const changed = (): void => {
    if (timer === undefined && !hiddenSent) timer = setTimeout(() => send('snapshot'), SNAPSHOT_DELAY_MS);
  };

  let fcp: number | undefined;
  let lcp: { value: number; entry: LcpEntry } | undefined;
  let lcpFinal = false;
  let clsValue = 0;
  let clsEntries: LayoutShiftEntry[] = [];
  let sessionValue = 0;
  let sessionEntries: LayoutShiftEntry[] = [];
  const longest: Interaction[] = [];
  const byId = new Map<number, Interaction>();

  const observe = (type: string, callback: (entries: PerformanceEntry[]) => void, options: PerformanceObserverInit = {}): PerformanceObserver | undefined => {
    if (!Observer || !supported.includes(type)) return undefined;
    const observer = new Observer((list) => callback(list.getEntries()));
    observer.observe({ type, buffered: true, ...options });
    observers.push(observer);
    return observer;
  };

  const onPaint = (entries: PerformanceEntry[]): void => {
    for (const entry of entries) {
      if (entry.name === 'first-contentful-paint' && entry.startTime < firstHiddenTime) {
        fcp = Math.max(entry.startTime - activationStart, 0);
        changed();
      }
    }
  };
  const onLcp = (entries: PerformanceEntry[]): void => {
    if (lcpFinal) return;
    for (const entry of entries as LcpEntry[]) {
      if (entry.startTime < firstHiddenTime) {
        lcp = { value: Math.max(entry.startTime - activationStart, 0), entry };
        changed();
      }
    }
  };
  const onShift = (entries: PerformanceEntry[]): void => {
    for (const entry of entries as LayoutShiftEntry[]) {
      if (entry.hadRecentInput) continue;
      const first = sessionEntries[0];
      const last = sessionEntries.at(-1);
      if (sessionValue && first && last && entry.startTime - last.startTime < 1000 && entry.startTime - first.startTime < 5000) {
        sessionValue += entry.value;
        sessionEntries.push(entry);
      } else {
        sessionValue = entry.value;
        sessionEntries = [entry];
      }
      if (sessionValue > clsValue) {
        clsValue = sessionValue;
        clsEntries = sessionEntries;
        changed();
      }
    }
  };
  const onEvent = (entries: PerformanceEntry[]): void => {
    for (const entry of entries as EventEntry[]) {
      const id = entry.interactionId;
      if (!id) continue;
      const weakest = longest.at(-1);
      let interaction = byId.get(id);
      if (!interaction && longest.length >= MAX_INTERACTIONS && weakest && entry.duration <= weakest.latency) continue;
      if (interaction) {
        // A pointerdown presented in the frame of its click (the next frame came only after the
        // click's handler) is the longest entry, but the processing is the click's: the phases
        // come from every entry of that frame (docs/page-script.md "Web Vitals").
        if (entry.duration > interaction.latency) {
          interaction.entries = [entry, ...interaction.entries.filter((e) => sameFrame(e, entry))];
          interaction.latency = entry.duration;
        } else if (sameFrame(entry, interaction.entries[0]!)) {
          interaction.entries.push(entry);
        }
      } else {
        interaction = { id, latency: entry.duration, entries: [entry] };
        byId.set(id, interaction);
        longest.push(interaction);
      }
      if (!interaction.target) interaction.target = describe(entry.target);
      longest.sort((a, b) => b.latency - a.latency);
      for (const dropped of longest.splice(MAX_INTERACTIONS)) byId.delete(dropped.id);
      changed();
    }
  };

  observe('paint', onPaint);
  const lcpObserver = observe('largest-contentful-paint', onLcp);
  const shiftObserver = observe('layout-shift', onShift);
  const eventObserver = observe('event', onEvent, { durationThreshold: INP_DURATION_THRESHOLD } as PerformanceObserverInit);
  observe('first-input', onEvent);

  // LCP stops at the first trusted input (the library's rule).
  const finalizeLcp = (event: Event): void => {
    if (!event.isTrusted || lcpFinal) return;
    if (lcpObserver) onLcp(lcpObserver.takeRecords());
    lcpFinal = true;
  };
  const listen = { capture: true, passive: true };
  win.addEventListener('keydown', finalizeLcp, listen);
  win.addEventListener('click', finalizeLcp, listen);
  const onVisibility = (): void => {
    if (doc.visibilityState !== 'hidden' || hiddenSent) return;
    firstHiddenTime = Math.min(firstHiddenTime, perf.now());
    send('hidden');
  };
  doc.addEventListener('visibilitychange', onVisibility, listen);

  function send(reason: WebVitalsReport['reason']): void {
    clearTimeout(timer);
    timer = undefined;
    if (hiddenSent) return;
    if (reason === 'hidden') hiddenSent = true;
    // Entries the observers hold but have not delivered yet.
    if (lcpObserver && !lcpFinal) onLcp(lcpObserver.takeRecords());
    if (shiftObserver) onShift(shiftObserver.takeRecords());
    if (eventObserver) onEvent(eventObserver.takeRecords());
    const vitals: Omit<WebVitalsReport, 'type'> = { reason };
    const ttfb =
      navigation && navigation.responseStart > 0 && navigation.responseStart < perf.now() ? Math.max(navigation.responseStart - activationStart, 0) : undefined;
    if (ttfb !== undefined) vitals.ttfb = ttfb;
    if (fcp !== undefined) vitals.fcp = fcp;
    if (lcp !== undefined) {
      const element = describe(lcp.entry.element);
      vitals.lcp = { value: lcp.value, ...(element && { element }), ...(lcp.entry.url !== '' && { url: cut(lcp.entry.url, PAGE_SCRIPT_LIMITS.urlChars) }) };
    }
    if (clsEntries.length > 0 || fcp !== undefined) {
      vitals.cls = { value: clsValue };
      const largest = clsEntries.reduce<LayoutShiftEntry | undefined>((a, b) => (a === undefined || b.value > a.value ? b : a), undefined);
      if (largest) {
        const source = largest.sources?.find((s) => s.node?.nodeType === 1) ?? largest.sources?.[0];
        const element = describe(source?.node ?? null);
        if (element) vitals.cls.largest_shift_element = element;
        vitals.cls.largest_shift_time = largest.startTime;
      }
    }
    const count = (perf as Performance & { interactionCount?: number }).interactionCount ?? byId.size;
    const candidate = longest[Math.min(longest.length - 1, Math.floor(count / 50))];
    if (candidate) {
      const entry = candidate.entries[0]!;
      const nextPaint = entry.startTime + candidate.latency;
      const processingStart = Math.min(Math.max(entry.startTime, Math.min(...candidate.entries.map((e) => e.processingStart))), nextPaint);
      const processingEnd = Math.min(Math.max(processingStart, ...candidate.entries.map((e) => e.processingEnd)), nextPaint);
      const target = candidate.target ?? describe(candidate.entries.find((e) => e.target)?.target ?? null);
      vitals.inp = {
        value: candidate.latency,
        event_type: cut(entry.name, PAGE_SCRIPT_LIMITS.keyChars),
        ...(target && { target }),
        input_delay: processingStart - entry.startTime,
        processing_duration: processingEnd - processingStart,
        presentation_delay: nextPaint - processingEnd,
        interaction_count: count,
      };
    }
    report({ type: 'page_web_vitals', ...vitals });
  }

  return {
    dispose() {
      clearTimeout(timer);
      for (const observer of observers) observer.disconnect();
      win.removeEventListener('keydown', finalizeLcp, listen);
      win.removeEventListener('click', finalizeLcp, listen);
      doc.removeEventListener('visibilitychange', onVisibility, listen);
    },
  };
}

/** An element as a selector and tag, cut to the report limits; undefined for anything else or a node gone. */
function describe(node: Node | null): WebVitalsElement | undefined {
  if (node?.nodeType !== 1 || !node.isConnected) return undefined;
  const element = node as Element;
  return { selector: cut(uniqueSelector(element), PAGE_SCRIPT_LIMITS.selectorChars), tag: cut(element.tagName.toUpperCase(), PAGE_SCRIPT_LIMITS.tagChars) };
}
