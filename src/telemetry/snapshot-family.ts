// Snapshot family (docs/events.md "Snapshots", docs/page-script.md "Snapshots"): takes a tab's
// DOM snapshots in the page script's world of each of its frames and emits them as page_snapshot.
// Who asks and when (before and after each recorded action) is the control layer's
// (src/control/action-snapshots.ts); this family asks itself at each page_navigation_settled.
//
// A tab's snapshots are taken one at a time, in the order asked: each frame's snapshot refers to
// the one before it (injected/snapshot.ts), so the agent names, per frame and document, the last
// one it stored (`base`). Asks that come while one is being taken join the next one, which then
// serves them all (the "after" of one action and the "before" of the next are one snapshot).
//
// Frames: the script's world in each frame, the tab's page session and every out-of-process
// iframe's session alike (each registers the script). An `<iframe>` element names its frame
// (the trace viewer shows the child frame's own snapshot in it): once per element and world the
// agent resolves the frame's owner element into the parent's world (`DOM.getFrameOwner`,
// `DOM.resolveNode`, no DOM domain needed) and hands it the frame id.

import type { Protocol } from 'devtools-protocol';
import {
  PAGE_SCRIPT_GLOBAL,
  SNAPSHOT_MASKED_FIELDS,
  type FrameSnapshotData,
  type FrameSnapshotReport,
  type PageSnapshotData,
  type SnapshotAction,
} from '../../injected/schema.ts';
import { isTargetGone } from '../browser/cdp-errors.ts';
import type { TargetState } from './event-context.ts';
import type { FamilyHost, TelemetryFamily } from './family.ts';

/** Longest a tab's snapshot may take before the tab's next one goes ahead without it (a dialog blocks the page). */
export const SNAPSHOT_TIMEOUT_MS = 5000;
/** Largest serialized frame kept (UTF-16 units of its JSON): a bigger one is left out and counted. */
export const MAX_FRAME_SNAPSHOT_CHARS = 16 * 1024 * 1024;

const MASK = SNAPSHOT_MASKED_FIELDS.join(',');
const GLOBAL = `globalThis[${JSON.stringify(PAGE_SCRIPT_GLOBAL)}]`;
const MARK_FRAME = `function (frameId) { ${GLOBAL}?.markFrame(this, frameId); }`;

/** An ask for a tab's snapshot, as its asker holds it. */
export interface SnapshotTicket {
  /** True once the snapshot holding this ask was emitted; false when none was (failed, withdrawn, nothing to show). */
  readonly done: Promise<boolean>;
  /** The asker no longer wants it (its deadline passed): the snapshot goes out without this ask. */
  withdraw(): void;
}

/** What the control layer asks of the family. */
export interface TabSnapshots {
  /** The tab (its page target id) that holds `targetId`; undefined when the category is off or the target unknown. */
  tabOf(targetId: string): string | undefined;
  /**
   * Queue a snapshot of the tab holding `targetId` for `actions`: it joins the tab's next snapshot
   * when one is waiting to start. Undefined when the category is off or the tab unknown.
   */
  snapshot(targetId: string, actions: readonly SnapshotAction[]): SnapshotTicket | undefined;
}

interface Job {
  reason: PageSnapshotData['reason'];
  actions: SnapshotAction[];
  /** Unix µs of when it was taken: the snapshot's time. */
  ts: number;
  /** Its time ran out (SNAPSHOT_TIMEOUT_MS): whatever comes back later is not emitted. */
  expired: boolean;
  done: Promise<boolean>;
  resolve(emitted: boolean): void;
}

interface TabQueue {
  running: Job | undefined;
  /** Jobs in line; the last one gathers the asks that come until it starts. */
  waiting: Job[];
}

/** The script's world in one frame. */
interface FrameWorld {
  state: TargetState;
  contextId: number;
}

export class SnapshotFamily implements TelemetryFamily, TabSnapshots {
  private host!: FamilyHost;
  /** Frame id → its world (the latest context of the script's world in that frame). */
  private readonly worlds = new Map<string, FrameWorld>();
  /** Frame id → parent frame id. */
  private readonly parents = new Map<string, string>();
  /** Tab session id → its snapshot queue. */
  private readonly queues = new Map<string, TabQueue>();
  /** `session:contextId` → the number of the last snapshot of that world the agent emitted. */
  private readonly bases = new Map<string, number>();
  /** `frameId|session:contextId` of the parent world the frame's element was named in. */
  private readonly marked = new Set<string>();
  private disposed = false;

  constructor(private readonly worldName: string) {}

  start(host: FamilyHost): void {
    this.host = host;
    host.handle('Runtime.executionContextCreated', (p, s) => {
      const frameId = (p.context.auxData as { frameId?: string } | undefined)?.frameId;
      if (p.context.name === this.worldName && frameId !== undefined) this.worlds.set(frameId, { state: s, contextId: p.context.id });
    });
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- contexts are keyed by executionContextId, which Chromium still sends
    host.handle('Runtime.executionContextDestroyed', (p, s) => this.forgetContexts(s, (id) => id === p.executionContextId));
    host.handle('Runtime.executionContextsCleared', (_p, s) => this.forgetContexts(s, () => true));
    host.handle('Page.frameAttached', (p) => this.parents.set(p.frameId, p.parentFrameId));
    host.handle('Page.frameNavigated', (p) => {
      if (p.frame.parentId !== undefined) this.parents.set(p.frame.id, p.frame.parentId);
    });
    host.handle('Page.frameDetached', (p) => {
      // A swap moves the frame to another process (an out-of-process iframe): it stays a child.
      if (p.reason === 'swap') return;
      this.parents.delete(p.frameId);
      this.worlds.delete(p.frameId);
    });
  }

  /** The tab's navigation settled (page_navigation_settled): its page as it is now. */
  navigationSettled(tab: TargetState): void {
    if (this.disposed || !this.host.isOn('snapshot')) return;
    // Never joined with action asks: the trace shows it as the settled page of its navigation.
    this.enqueue(tab, this.newJob('navigation_settled'));
  }

  tabOf(targetId: string): string | undefined {
    if (this.disposed || !this.host.isOn('snapshot')) return undefined;
    return this.tabStateOf(targetId)?.target.targetId;
  }

  snapshot(targetId: string, actions: readonly SnapshotAction[]): SnapshotTicket | undefined {
    if (this.disposed || !this.host.isOn('snapshot')) return undefined;
    const tab = this.tabStateOf(targetId);
    if (tab === undefined) return undefined;
    const waiting = this.queueOf(tab).waiting;
    let job = waiting.at(-1);
    if (job === undefined || job.reason !== 'action') {
      job = this.newJob('action');
      this.enqueue(tab, job);
    }
    job.actions.push(...actions);
    const owner = job;
    return {
      done: owner.done,
      withdraw: () => {
        owner.actions = owner.actions.filter((a) => !actions.includes(a));
      },
    };
  }

  targetDetached(state: TargetState): void {
    this.forgetContexts(state, () => true);
    const queue = this.queues.get(state.target.sessionId);
    if (queue === undefined) return;
    this.queues.delete(state.target.sessionId);
    for (const job of queue.waiting.splice(0)) job.resolve(false);
  }

  dispose(): void {
    this.disposed = true;
    for (const queue of this.queues.values()) for (const job of queue.waiting.splice(0)) job.resolve(false);
    this.queues.clear();
    this.worlds.clear();
    this.parents.clear();
    this.bases.clear();
    this.marked.clear();
  }

  // ---- the queue ------------------------------------------------------------------------------

  private newJob(reason: Job['reason']): Job {
    let resolve!: (emitted: boolean) => void;
    const done = new Promise<boolean>((r) => (resolve = r));
    return { reason, actions: [], ts: 0, expired: false, done, resolve };
  }

  private enqueue(tab: TargetState, job: Job): void {
    const queue = this.queueOf(tab);
    if (queue.running === undefined) this.run(tab, queue, job);
    else queue.waiting.push(job);
  }

  private run(tab: TargetState, queue: TabQueue, job: Job): void {
    queue.running = job;
    const finish = (emitted: boolean): void => {
      clearTimeout(timer);
      if (queue.running !== job) return;
      job.resolve(emitted);
      queue.running = undefined;
      const next = queue.waiting.shift();
      if (next !== undefined) this.run(tab, queue, next);
    };
    // A page that never answers (a dialog open, a hung renderer) holds its own tab's snapshots only this long.
    const timer = setTimeout(() => {
      job.expired = true;
      this.host.stats.snapshots.failed++;
      finish(false);
    }, SNAPSHOT_TIMEOUT_MS);
    timer.unref();
    job.ts = this.host.clock.nowUs();
    this.take(tab, job).then(finish, (err: unknown) => {
      this.host.logger.debug({ err, target_id: tab.target.targetId }, 'snapshot failed');
      this.host.stats.snapshots.failed++;
      finish(false);
    });
  }

  // ---- taking one -------------------------------------------------------------------------------

  /** Every frame of the tab in its world, then the event; true when emitted. */
  private async take(tab: TargetState, job: Job): Promise<boolean> {
    const frames = this.framesOf(tab);
    if (frames.length === 0) return false;
    await Promise.all(frames.map((frame) => this.markInParent(frame.frameId)));
    const results = await Promise.all(frames.map(({ frameId, world }) => this.frameSnapshot(frameId, world)));
    // Withdrawn asks (their deadline passed) leave the event; with none left there is nothing to show.
    if (this.disposed || job.expired || tab.target.isDetached || (job.reason === 'action' && job.actions.length === 0) || !this.host.isOn('snapshot'))
      return false;
    const taken: FrameSnapshotData[] = [];
    frames.forEach((frame, i) => {
      const report = results[i];
      if (report === undefined) return;
      const parent = this.parents.get(frame.frameId);
      // A frame whose parent was left out cannot be shown: the trace finds a frame through its parent's element.
      if (frame.frameId !== tab.target.targetId && (parent === undefined || !taken.some((t) => t.frame_id === parent))) return;
      taken.push({ frame_id: frame.frameId, ...(parent !== undefined && frame.frameId !== tab.target.targetId ? { parent_frame_id: parent } : {}), ...report });
    });
    if (taken[0]?.frame_id !== tab.target.targetId) return false;
    const data: PageSnapshotData = {
      ...this.host.tracker.contextOf(tab),
      reason: job.reason,
      ...(job.actions.length > 0 ? { actions: [...job.actions] } : {}),
      frames: taken,
    };
    this.host.emit('page_snapshot', job.ts, data);
    this.host.stats.snapshots.taken++;
    // Only what was emitted is a base: the next snapshot of a world refers to it alone.
    frames.forEach((frame, i) => {
      const report = results[i];
      if (report !== undefined && taken.some((t) => t.frame_id === frame.frameId)) this.bases.set(worldKey(frame.world), report.number);
    });
    return true;
  }

  /** The tab's frames with a world, the main frame first and each frame after its parent. */
  private framesOf(tab: TargetState): Array<{ frameId: string; world: FrameWorld }> {
    const mainId = tab.target.targetId;
    const main = this.worlds.get(mainId);
    if (main === undefined) return [];
    const out = [{ frameId: mainId, world: main }];
    const children = new Map<string, string[]>();
    for (const [frameId, world] of this.worlds) {
      if (frameId === mainId || world.state.target.tab !== tab.target) continue;
      const parent = this.parents.get(frameId);
      if (parent === undefined) continue;
      const list = children.get(parent);
      if (list === undefined) children.set(parent, [frameId]);
      else list.push(frameId);
    }
    for (let i = 0; i < out.length; i++) {
      for (const child of children.get(out[i]!.frameId) ?? []) {
        const world = this.worlds.get(child);
        if (world !== undefined) out.push({ frameId: child, world });
      }
    }
    return out;
  }

  /** Names the frame's `<iframe>` element in its parent's world, once per element and world. */
  private async markInParent(frameId: string): Promise<void> {
    const parentId = this.parents.get(frameId);
    const parent = parentId === undefined ? undefined : this.worlds.get(parentId);
    if (parent === undefined) return;
    const key = `${frameId}|${worldKey(parent)}`;
    if (this.marked.has(key)) return;
    const target = parent.state.target;
    try {
      const { backendNodeId } = await target.send('DOM.getFrameOwner', { frameId });
      const { object } = await target.send('DOM.resolveNode', { backendNodeId, executionContextId: parent.contextId });
      if (object.objectId === undefined) return;
      await target.send('Runtime.callFunctionOn', {
        objectId: object.objectId,
        functionDeclaration: MARK_FRAME,
        arguments: [{ value: frameId }],
        silent: true,
      });
      void target.sendMayFail('Runtime.releaseObject', { objectId: object.objectId });
      this.marked.add(key);
    } catch (err) {
      // The frame or its parent went away meanwhile; anything else leaves the frame unnamed (shown empty).
      if (!isTargetGone(err, target)) this.host.logger.debug({ err, frame_id: frameId }, 'snapshot: naming a frame failed');
    }
  }

  private async frameSnapshot(frameId: string, world: FrameWorld): Promise<FrameSnapshotReport | undefined> {
    const target = world.state.target;
    const base = this.bases.get(worldKey(world));
    const request = base === undefined ? { mask: MASK } : { base, mask: MASK };
    let result: Protocol.Runtime.EvaluateResponse;
    try {
      result = await target.send('Runtime.evaluate', {
        expression: `${GLOBAL}.snapshot(${JSON.stringify(request)})`,
        contextId: world.contextId,
        returnByValue: true,
        silent: true,
      });
    } catch (err) {
      if (!isTargetGone(err, target)) this.host.logger.debug({ err, frame_id: frameId }, 'snapshot: a frame did not answer');
      return undefined;
    }
    const text: unknown = result.result.value;
    if (result.exceptionDetails !== undefined || typeof text !== 'string') return undefined;
    if (text.length > MAX_FRAME_SNAPSHOT_CHARS) {
      this.host.stats.snapshots.too_large++;
      return undefined;
    }
    const report = parseReport(text);
    if (report === undefined) this.host.logger.debug({ frame_id: frameId }, 'snapshot: a frame answered something else');
    return report;
  }

  // ---- bookkeeping --------------------------------------------------------------------------------

  private tabStateOf(targetId: string): TargetState | undefined {
    for (const state of this.host.tracker.all()) {
      if (state.target.targetId !== targetId) continue;
      const tab = state.target.tab;
      return tab === undefined ? undefined : this.host.tracker.get(tab.sessionId);
    }
    return undefined;
  }

  private queueOf(tab: TargetState): TabQueue {
    let queue = this.queues.get(tab.target.sessionId);
    if (queue === undefined) {
      queue = { running: undefined, waiting: [] };
      this.queues.set(tab.target.sessionId, queue);
    }
    return queue;
  }

  private forgetContexts(state: TargetState, which: (contextId: number) => boolean): void {
    for (const [frameId, world] of this.worlds) {
      if (world.state !== state || !which(world.contextId)) continue;
      this.worlds.delete(frameId);
      this.bases.delete(worldKey(world));
    }
  }
}

function worldKey(world: FrameWorld): string {
  return `${world.state.target.sessionId}:${world.contextId}`;
}

/** The page script's answer, checked for the fields the agent relies on (the rest is the page's content). */
function parseReport(text: string): FrameSnapshotReport | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const report = value as Partial<FrameSnapshotReport>;
  if (typeof report.doc !== 'string' || typeof report.number !== 'number' || typeof report.url !== 'string') return undefined;
  if (report.base !== undefined && report.base !== report.number - 1) return undefined;
  if (typeof report.viewport !== 'object' || report.html === undefined) return undefined;
  return report as FrameSnapshotReport;
}
