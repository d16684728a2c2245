// The page before and after each recorded action (docs/events.md "Snapshots"): which actions get
// snapshots, and when they are taken. The snapshots themselves are the telemetry layer's
// (src/telemetry/snapshot-family.ts).
//
// Before: asked when the action is about to reach the browser (a proxied client's command is held
// until then, src/cdp-proxy/cdp-proxy.ts; a computer action waits, src/control/computer-actions.ts),
// and waited for at most BEFORE_DEADLINE_MS: a page that does not answer by then (busy, a dialog
// open) lets the action go on without it, and the ask is withdrawn and counted as skipped.
//
// After: an action's effect often comes after its answer (a client's click is recorded at the
// press; the page's click handler runs at the release that follows it), so the after-snapshot is
// taken once AFTER_QUIET_MS have passed since the action ended, or with the next action's
// before-snapshot on that tab if that comes first: one snapshot is then the "after" of the one
// and the "before" of the next.

import type { SnapshotAction } from '../../injected/schema.ts';
import type { CommandRecord } from '../cdp-proxy/command-shape.ts';
import type { RelayHook } from '../cdp-proxy/cdp-proxy.ts';
import type { TabSnapshots } from '../telemetry/snapshot-family.ts';
import type { TelemetryStats } from '../telemetry/telemetry-stats.ts';

/** Longest an action waits for its before-snapshot. */
export const BEFORE_DEADLINE_MS = 500;
/** How long after an action ends its after-snapshot is taken (unless the next action comes first). */
export const AFTER_QUIET_MS = 100;

/** The proxied CDP commands whose page is snapshot (the ones that make the page do something). */
const PAGE_DRIVING_METHODS: ReadonlySet<string> = new Set([
  'Input.dispatchMouseEvent',
  'Input.dispatchKeyEvent',
  'Input.insertText',
  'Input.dispatchTouchEvent',
  'Input.dispatchDragEvent',
  'Input.synthesizeTapGesture',
  'Input.synthesizeScrollGesture',
  'Input.synthesizePinchGesture',
  'Page.navigate',
  'Page.reload',
  'Page.navigateToHistoryEntry',
  'Page.stopLoading',
  'DOM.setFileInputFiles',
]);

/** Whether a proxied command drives the page (a recorded one: command-shape.ts decides that). */
export function drivesPage(method: string): boolean {
  return PAGE_DRIVING_METHODS.has(method);
}

export interface ActionSnapshotsOptions {
  /** The current connection's snapshots; undefined while the browser is disconnected. */
  snapshots: () => TabSnapshots | undefined;
  stats: TelemetryStats;
  beforeDeadlineMs?: number;
  afterQuietMs?: number;
}

export class ActionSnapshots {
  /** Per tab: actions ended whose after-snapshot waits, and its timer. */
  private readonly afters = new Map<string, { actions: SnapshotAction[]; timer: NodeJS.Timeout }>();
  /** Actions that had a before-snapshot asked, by id: their tab and point (the after needs them). */
  private readonly begun = new Map<string, { tab: string; point?: { x: number; y: number } }>();
  private readonly beforeDeadlineMs: number;
  private readonly afterQuietMs: number;

  constructor(private readonly options: ActionSnapshotsOptions) {
    this.beforeDeadlineMs = options.beforeDeadlineMs ?? BEFORE_DEADLINE_MS;
    this.afterQuietMs = options.afterQuietMs ?? AFTER_QUIET_MS;
  }

  /**
   * The action `actionId` is about to act on `targetId`'s tab: resolves once its before-snapshot
   * was taken, or at the deadline. Undefined when no snapshot is taken (category off, no tab).
   */
  before(actionId: string, targetId: string | undefined, point?: { x: number; y: number }): Promise<void> | undefined {
    const snapshots = this.options.snapshots();
    const tab = targetId === undefined ? undefined : snapshots?.tabOf(targetId);
    if (snapshots === undefined || tab === undefined) return undefined;
    const actions = this.takeAfters(tab);
    actions.push({ action_id: actionId, phase: 'before', ...point });
    const ticket = snapshots.snapshot(tab, actions);
    if (ticket === undefined) return undefined;
    this.begun.set(actionId, point === undefined ? { tab } : { tab, point });
    if (this.begun.size > MAX_BEGUN) this.begun.delete(this.begun.keys().next().value!);
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        // The action goes on: a snapshot taken later would show it under way.
        ticket.withdraw();
        this.options.stats.snapshots.skipped++;
        resolve();
      }, this.beforeDeadlineMs);
      void ticket.done.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** The CDP proxy's hook: a page-driving command waits for the page before it. */
  relayHook(): RelayHook {
    return {
      beforeRelay: (actionId: string, targetId: string | undefined, record: CommandRecord) => {
        if (!drivesPage(record.method)) return undefined;
        const point = record.x !== undefined && record.y !== undefined ? { x: record.x, y: record.y } : undefined;
        return this.before(actionId, targetId, point);
      },
    };
  }

  /** The action ended (its control event was recorded): its after-snapshot is due. */
  ended(actionId: string): void {
    const begun = this.begun.get(actionId);
    if (begun === undefined) return;
    this.begun.delete(actionId);
    let pending = this.afters.get(begun.tab);
    if (pending === undefined) {
      const tab = begun.tab;
      const timer = setTimeout(() => this.flushAfters(tab), this.afterQuietMs);
      timer.unref();
      pending = { actions: [], timer };
      this.afters.set(tab, pending);
    }
    pending.actions.push({ action_id: actionId, phase: 'after', ...begun.point });
  }

  dispose(): void {
    for (const pending of this.afters.values()) clearTimeout(pending.timer);
    this.afters.clear();
    this.begun.clear();
  }

  private flushAfters(tab: string): void {
    const actions = this.takeAfters(tab);
    if (actions.length > 0) this.options.snapshots()?.snapshot(tab, actions);
  }

  private takeAfters(tab: string): SnapshotAction[] {
    const pending = this.afters.get(tab);
    if (pending === undefined) return [];
    clearTimeout(pending.timer);
    this.afters.delete(tab);
    return pending.actions;
  }
}

/** Actions whose end is awaited at once, at most (an action never answered is forgotten after). */
const MAX_BEGUN = 10_000;
