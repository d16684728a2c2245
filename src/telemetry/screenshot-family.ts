// monitor_screenshot (docs/events.md#telemetry-config-lifecycle-and-monitor-events): a PNG of the active tab after its load event and after an
// uncaught exception in it, at most one every 2 s, downscaled until it is under 750 KiB. The
// `screenshot` category of the telemetry config switches it at any time (`--screenshots` is its
// start value).
//
// After a load the capture waits QUIET_MS (the page's late images, fonts and first layout
// shifts land in the picture) and is dropped when the tab navigates again first: capturing at the
// load event itself makes the browser composite and encode a PNG while it is busiest, often
// while the next page is already loading, and shows a page that is already gone.

import type { AttachedTarget } from '../browser/target-manager.ts';
import type { TargetState } from './event-context.ts';
import type { FamilyHost, TelemetryFamily } from './family.ts';
import type { Monitor } from './monitor.ts';
import { isScreenshotOn } from './telemetry-config.ts';

export interface ScreenshotOptions {
  /**
   * Not read: the telemetry config's `screenshot` category decides, at every trigger (config.ts
   * folds `--screenshots` into its start value).
   */
  enabled?: boolean;
  /** The tab whose screenshots are taken (the most recently opened or focused page). */
  activePage: () => AttachedTarget | undefined;
  monitor: Monitor;
  minIntervalMs?: number;
  maxPngBytes?: number;
  /** Delay after a load event (SCREENSHOT_QUIET_MS). */
  quietMs?: number;
}

const MIN_INTERVAL_MS = 2000;
/** Delay between a tab's load event and its screenshot. */
export const SCREENSHOT_QUIET_MS = 1000;
const MAX_PNG_BYTES = 750 * 1024;
/** Below this scale a screenshot says nothing useful; give up. */
const MIN_SCALE = 0.05;

export class ScreenshotFamily implements TelemetryFamily {
  private host!: FamilyHost;
  private lastCaptureAt = -Infinity;
  private inFlight = false;
  private disposed = false;
  private readonly minIntervalMs: number;
  private readonly maxPngBytes: number;
  private readonly quietMs: number;
  /** The capture waiting for its tab to stay on the loaded document for quietMs. */
  private pending: NodeJS.Timeout | undefined;

  constructor(private readonly options: ScreenshotOptions) {
    this.minIntervalMs = options.minIntervalMs ?? MIN_INTERVAL_MS;
    this.maxPngBytes = options.maxPngBytes ?? MAX_PNG_BYTES;
    this.quietMs = options.quietMs ?? SCREENSHOT_QUIET_MS;
  }

  start(host: FamilyHost): void {
    this.host = host;
    // Registered whatever the config says: a PATCH may turn the category on later.
    host.handle('Page.loadEventFired', (_p, state) => this.afterLoad(state));
    host.handle('Runtime.exceptionThrown', (_p, state) => {
      if (state.target.tab) this.trigger(state.target.tab);
    });
  }

  dispose(): void {
    this.disposed = true;
    clearTimeout(this.pending);
  }

  /** The load event of a tab's own document (not of its iframes): capture once it stayed there. */
  private afterLoad(state: TargetState): void {
    const tab = state.target.tab;
    if (!tab || state.target !== tab || !isScreenshotOn(this.host.config) || tab !== this.options.activePage()) return;
    clearTimeout(this.pending);
    const navSeq = this.host.tracker.navSeqOf(tab);
    this.pending = setTimeout(() => {
      this.pending = undefined;
      if (this.host.tracker.navSeqOf(tab) === navSeq) this.trigger(tab);
    }, this.quietMs);
    this.pending.unref();
  }

  private trigger(tab: AttachedTarget): void {
    if (this.disposed || !isScreenshotOn(this.host.config) || this.inFlight) return;
    if (tab !== this.options.activePage()) return;
    const now = performance.now();
    if (now - this.lastCaptureAt < this.minIntervalMs) return;
    this.lastCaptureAt = now;
    this.inFlight = true;
    void this.capture(tab)
      .then((png) => {
        if (png !== undefined && !this.disposed) this.options.monitor.emit('monitor_screenshot', { png });
      })
      .catch((err: unknown) => this.host.logger.debug({ err: (err as Error).message }, 'screenshot failed'))
      .finally(() => (this.inFlight = false));
  }

  /** A base64 PNG of the viewport under the size limit, or undefined when none fits. */
  private async capture(tab: AttachedTarget): Promise<string | undefined> {
    const { data } = await tab.send('Page.captureScreenshot', { format: 'png' });
    if (decodedSize(data) < this.maxPngBytes) return data;
    const { cssVisualViewport: vp } = await tab.send('Page.getLayoutMetrics');
    // PNG size grows with the pixel count: aim at the limit, then keep halving if needed.
    let scale = Math.min(0.9, Math.sqrt(this.maxPngBytes / decodedSize(data)) * 0.9);
    while (scale >= MIN_SCALE) {
      const clip = { x: vp.pageX, y: vp.pageY, width: vp.clientWidth, height: vp.clientHeight, scale };
      const shot = await tab.send('Page.captureScreenshot', { format: 'png', clip });
      if (decodedSize(shot.data) < this.maxPngBytes) return shot.data;
      scale /= 2;
    }
    return undefined;
  }
}

function decodedSize(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return (base64.length * 3) / 4 - padding;
}
