// The event context (docs/events.md#the-event-context): which target, frame, document and navigation epoch an event
// belongs to. Fed by Page and Runtime events of each target's own session.

import type { Protocol } from 'devtools-protocol';
import type { EventContext, EventSource } from '../../injected/schema.ts';
import type { AttachedTarget } from '../browser/target-manager.ts';

interface FrameState {
  url: string;
  loaderId: string;
}

/** What the agent knows of one attached target's documents. */
export class TargetState {
  /** Navigation epoch; meaningful on page targets only (others read their tab's). */
  navSeq = 0;
  readonly frames = new Map<string, FrameState>();
  /** Runtime execution context id → frame id (this session's contexts only). */
  readonly contextFrames = new Map<number, string>();
  /** Until `Runtime.enable` answers, Runtime events are the target's replayed history. */
  runtimeReplaying = false;
  /**
   * Replayed history is dropped whole (Runtime re-enabled by a config change: what was logged
   * while the category was off is not reported later).
   */
  dropReplayedHistory = false;
  /** CDP domains the core has enabled on this target's session. */
  pageEnabled = false;
  runtimeEnabled = false;
  /** The CDP metadata block of `source`, built once per target. */
  readonly sourceMetadata: Readonly<{ cdp_session_id: string; target_id: string; target_type: string }>;
  /** One frozen `source` per CDP method, shared by the events: the log serializes it once. */
  private readonly sources = new Map<string, EventSource>();

  constructor(readonly target: AttachedTarget) {
    this.sourceMetadata = Object.freeze({ cdp_session_id: target.sessionId, target_id: target.targetId, target_type: target.type });
  }

  /** The `source` of an event this target's `method` caused (frozen, shared). */
  sourceOf(method: string): EventSource {
    let source = this.sources.get(method);
    if (source === undefined) {
      source = Object.freeze({ kind: 'cdp', event: method, metadata: this.sourceMetadata });
      this.sources.set(method, source);
    }
    return source;
  }
}

/**
 * A copy of the context with only its known fields, in the documented order (docs/events.md): the first fields of an event's
 * `data`, never an undefined value.
 */
export function withContext(ctx: EventContext): EventContext {
  const data: EventContext = {};
  if (ctx.session_id !== undefined) data.session_id = ctx.session_id;
  if (ctx.target_id !== undefined) data.target_id = ctx.target_id;
  if (ctx.target_type !== undefined) data.target_type = ctx.target_type;
  if (ctx.frame_id !== undefined) data.frame_id = ctx.frame_id;
  if (ctx.loader_id !== undefined) data.loader_id = ctx.loader_id;
  if (ctx.url !== undefined) data.url = ctx.url;
  if (ctx.nav_seq !== undefined) data.nav_seq = ctx.nav_seq;
  return data;
}

export class EventContextTracker {
  private readonly states = new Map<string, TargetState>();

  all(): IterableIterator<TargetState> {
    return this.states.values();
  }

  add(target: AttachedTarget): TargetState {
    const state = new TargetState(target);
    this.states.set(target.sessionId, state);
    return state;
  }

  remove(target: AttachedTarget): void {
    this.states.delete(target.sessionId);
  }

  get(sessionId: string | undefined): TargetState | undefined {
    return sessionId === undefined ? undefined : this.states.get(sessionId);
  }

  /** The tab's navigation epoch for any target it contains; undefined for service/shared workers. */
  navSeqOf(target: AttachedTarget): number | undefined {
    const tab = target.tab;
    if (!tab) return undefined;
    return this.states.get(tab.sessionId)?.navSeq;
  }

  /** Seed the frames of a document that existed before the agent attached. */
  seedFrameTree(state: TargetState, tree: Protocol.Page.FrameTree): void {
    this.recordFrame(state, tree.frame);
    for (const child of tree.childFrames ?? []) this.seedFrameTree(state, child);
  }

  recordFrame(state: TargetState, frame: Protocol.Page.Frame): void {
    state.frames.set(frame.id, { url: frame.url + (frame.urlFragment ?? ''), loaderId: frame.loaderId });
  }

  recordSameDocumentNavigation(state: TargetState, frameId: string, url: string): void {
    const frame = state.frames.get(frameId);
    if (frame) frame.url = url;
  }

  recordExecutionContext(state: TargetState, context: Protocol.Runtime.ExecutionContextDescription): void {
    const frameId = (context.auxData as { frameId?: string } | undefined)?.frameId;
    if (frameId) state.contextFrames.set(context.id, frameId);
  }

  /**
   * The context of an event of `state`'s target. `frameId` defaults to the target's main frame
   * (for page and iframe targets the target id is the main frame id).
   */
  contextOf(state: TargetState, frameId?: string): EventContext {
    const target = state.target;
    const ctx: EventContext = { session_id: target.sessionId, target_id: target.targetId, target_type: target.type };
    const isDocumentTarget = target.type === 'page' || target.type === 'iframe';
    const fid = frameId ?? (isDocumentTarget ? target.targetId : undefined);
    if (fid !== undefined) {
      ctx.frame_id = fid;
      const frame = state.frames.get(fid);
      if (frame) {
        if (frame.loaderId) ctx.loader_id = frame.loaderId;
        if (frame.url) ctx.url = frame.url;
      } else if (fid === target.targetId && target.url) {
        ctx.url = target.url;
      }
    } else if (target.url) {
      // Workers: the script URL is the document URL they run.
      ctx.url = target.url;
    }
    const navSeq = this.navSeqOf(target);
    if (navSeq !== undefined) ctx.nav_seq = navSeq;
    return ctx;
  }

  /** Context for a Runtime event identified by its execution context. */
  contextOfExecutionContext(state: TargetState, executionContextId: number | undefined): EventContext {
    const frameId = executionContextId === undefined ? undefined : state.contextFrames.get(executionContextId);
    return this.contextOf(state, frameId);
  }
}

/**
 * Is `frameId` a tab's main frame? Chromium gives a tab's main frame the id of its page target
 * (an iframe target's frame has its own target's id, but is no tab's main frame). The one
 * definition every family uses.
 */
export function isTabMainFrame(target: Pick<AttachedTarget, 'type' | 'targetId'>, frameId: string): boolean {
  return target.type === 'page' && frameId === target.targetId;
}
