// The injected page script (docs/page-script.md), entry of the bundle build.mjs makes. The agent registers it
// in an isolated world of every frame, before any page script runs, and calls `install` with the
// categories that are on: a category that is off installs nothing and costs nothing. When the
// config changes the agent calls `install` again in the same world (or `configure` directly),
// which adds or removes listeners and observers to match.

import { installInteraction } from './interaction.ts';
import { installLongTasks } from './long-tasks.ts';
import { installPerformance, type PerformanceReporting } from './performance.ts';
import { createReporter, type Report } from './report.ts';
import { createSnapshotter, type SnapshotRequest, type Snapshotter, type SnapshotStats } from './snapshot.ts';
import { installWebVitals, type WebVitalsReporting } from './web-vitals.ts';
import { PAGE_SCRIPT_GLOBAL, type PageScriptOptions } from './schema.ts';

/** What the agent can reach in the isolated world (by Runtime.evaluate in that context). */
export interface InstalledPageScript {
  configure(options: Pick<PageScriptOptions, 'interaction' | 'page' | 'history' | 'longTaskMs' | 'snapshot'>): void;
  takeLcpElement(ref: number): Element | undefined;
  /** A snapshot of this frame's document (docs/page-script.md "Snapshots"), as JSON; throws while the category is off. */
  snapshot(request: SnapshotRequest): string;
  /** The frame an `<iframe>` element holds (the agent's CDP frame id). */
  markFrame(element: Element, frameId: string): void;
  /** Snapshots taken in this world (zero while the category is off). */
  snapshotStats(): SnapshotStats;
}

export function install(options: PageScriptOptions): void {
  const global = globalThis as unknown as Record<string, InstalledPageScript | undefined>;
  let installed = global[PAGE_SCRIPT_GLOBAL];
  if (!installed) {
    installed = create(createReporter(options.binding));
    Object.defineProperty(global, PAGE_SCRIPT_GLOBAL, { value: installed });
  }
  installed.configure(options);
}

function create(report: Report): InstalledPageScript {
  let stopInteraction: (() => void) | undefined;
  let performance: PerformanceReporting | undefined;
  let performanceInstalled = false;
  let stopLongTasks: (() => void) | undefined;
  let webVitals: WebVitalsReporting | undefined;
  // Kept when the category goes off (nothing runs between snapshots), so its counters stay readable.
  let snapshotter: Snapshotter | undefined;
  let snapshotOn = false;
  return {
    configure({ interaction, page, history, longTaskMs = 0, snapshot = false }) {
      snapshotOn = snapshot;
      if (snapshot) snapshotter ??= createSnapshotter(window);
      else snapshotter?.pause();
      if (interaction && !stopInteraction) stopInteraction = installInteraction(report, window);
      if (!interaction && stopInteraction) {
        stopInteraction();
        stopInteraction = undefined;
      }
      if (page && !performance) {
        // Entries from before the script ran are history worth reporting the first time in a
        // document the agent just attached to; not those of a period the category was off, nor
        // those already reported before it was turned off.
        performance = installPerformance(report, history && !performanceInstalled ? undefined : globalThis.performance.now());
        performanceInstalled = true;
        // Web Vitals are per top-level document: not in iframes.
        if (window === window.top) webVitals = installWebVitals(report, window);
      }
      if (!page && performance) {
        performance.dispose();
        performance = undefined;
        webVitals?.dispose();
        webVitals = undefined;
      }
      // Long tasks (category page): installed again when the threshold changes.
      stopLongTasks?.();
      stopLongTasks = page && longTaskMs > 0 ? installLongTasks(report, longTaskMs, globalThis.performance.now()) : undefined;
    },
    takeLcpElement: (ref) => performance?.takeLcpElement(ref),
    snapshot(request) {
      if (!snapshotOn || snapshotter === undefined) throw new Error('the snapshot category is off');
      return snapshotter.snapshot(request);
    },
    markFrame(element, frameId) {
      snapshotter?.markFrame(element, frameId);
    },
    snapshotStats: () => ({ ...(snapshotter?.stats ?? { snapshots: 0, lastMs: 0, lastNodes: 0 }) }),
  };
}
