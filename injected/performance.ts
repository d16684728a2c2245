// Layout shifts and largest contentful paints (docs/page-script.md) from buffered PerformanceObservers, so
// entries from before the script ran (a document that existed before the agent attached) are
// reported too. The browser calls back only when there are new entries: nothing runs while the
// page is idle.

import type { Report } from './report.ts';
import { PAGE_SCRIPT_LIMITS } from './schema.ts';
import { cut } from './visible-text.ts';

/**
 * LCP elements the agent has not yet resolved to a backend node id. The agent resolves the
 * candidates of a load together once the load has ended, so a page may report several meanwhile.
 */
const MAX_PENDING_ELEMENTS = 32;

// Not in TypeScript's DOM library.
interface LayoutShiftEntry extends PerformanceEntry {
  value: number;
  hadRecentInput: boolean;
}

interface LcpEntry extends PerformanceEntry {
  renderTime: number;
  loadTime: number;
  size: number;
  id: string;
  url: string;
  element: Element | null;
}

export interface PerformanceReporting {
  /** The LCP element behind `element_ref`, handed over once (the agent resolves it). */
  takeLcpElement(ref: number): Element | undefined;
  dispose(): void;
}

/** `since`: report only entries that start at or after this time (ms since the time origin). */
export function installPerformance(report: Report, since?: number): PerformanceReporting {
  const pending = new Map<number, Element>();
  let nextRef = 1;
  const observers: PerformanceObserver[] = [];
  // This world's own constructor: the page replacing its PerformanceObserver changes nothing here.
  const Observer = typeof PerformanceObserver === 'function' ? PerformanceObserver : undefined;
  const supported = Observer?.supportedEntryTypes ?? [];

  if (Observer && supported.includes('layout-shift')) {
    const observer = new Observer((list) => {
      for (const entry of list.getEntries() as LayoutShiftEntry[]) {
        if (since !== undefined && entry.startTime < since) continue;
        report({ type: 'page_layout_shift', time: entry.startTime, value: entry.value, had_recent_input: entry.hadRecentInput });
      }
    });
    observer.observe({ type: 'layout-shift', buffered: true });
    observers.push(observer);
  }

  if (Observer && supported.includes('largest-contentful-paint')) {
    const observer = new Observer((list) => {
      for (const entry of list.getEntries() as LcpEntry[]) {
        if (since !== undefined && entry.startTime < since) continue;
        let elementRef: number | undefined;
        if (entry.element) {
          elementRef = nextRef++;
          pending.set(elementRef, entry.element);
          if (pending.size > MAX_PENDING_ELEMENTS) pending.delete(pending.keys().next().value!);
        }
        const url = cut(entry.url, PAGE_SCRIPT_LIMITS.urlChars);
        report({
          type: 'page_lcp',
          time: entry.startTime,
          render_time: entry.renderTime,
          load_time: entry.loadTime,
          size: entry.size,
          element_id: cut(entry.id, PAGE_SCRIPT_LIMITS.elementIdChars),
          url,
          ...(elementRef !== undefined && { element_ref: elementRef }),
          ...(url.length < entry.url.length && { truncated: true as const }),
        });
      }
    });
    observer.observe({ type: 'largest-contentful-paint', buffered: true });
    observers.push(observer);
  }

  return {
    takeLcpElement(ref) {
      const element = pending.get(ref);
      pending.delete(ref);
      return element;
    },
    dispose() {
      for (const observer of observers) observer.disconnect();
      pending.clear();
    },
  };
}
