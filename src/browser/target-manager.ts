// Follows every target of the browser: auto-attach with waitForDebuggerOnStart at the browser level
// and again on every page and iframe session (docs/chromium.md#attaching-to-every-target), so out-of-process iframes and dedicated
// workers are caught before their first line runs. Each new target is set up by the observer and
// only then resumed. Speaks CDP; knows nothing of telemetry events.

import type { Protocol } from 'devtools-protocol';
import type { Logger } from 'pino';
import type { CdpConnection, CommandName, CommandParams, CommandResult } from './cdp-connection.ts';
import { isTargetGone, TargetClosedError } from './cdp-errors.ts';

/** One attached target and its flattened CDP session. */
export class AttachedTarget {
  /** The page target that contains this one (itself for a page); none for service/shared workers. */
  readonly tab: AttachedTarget | undefined;
  url: string;
  title: string;
  private detached = false;
  /** Rejecters of the commands sent and not yet answered (see `send`). */
  private readonly pending = new Set<(error: Error) => void>();

  constructor(
    private readonly connection: CdpConnection,
    readonly sessionId: string,
    readonly targetId: string,
    readonly type: string,
    info: Protocol.Target.TargetInfo,
    /** The target whose session auto-attached this one; undefined when attached at browser level. */
    readonly parent: AttachedTarget | undefined,
    /** Attached while paused by waitForDebuggerOnStart (a brand-new target with no history). */
    readonly wasWaiting: boolean,
  ) {
    this.url = info.url;
    this.title = info.title;
    if (type === 'page') this.tab = this;
    else if (type === 'iframe' || type === 'worker') this.tab = parent?.tab;
    else this.tab = undefined;
  }

  get isDetached(): boolean {
    return this.detached;
  }

  /** The session is gone: every command still waiting for its answer fails now. */
  markDetached(): void {
    if (this.detached) return;
    this.detached = true;
    for (const fail of this.pending) fail(new TargetClosedError(this.targetId));
    this.pending.clear();
  }

  /**
   * A command on this target's session; fails when the target goes away meanwhile. Chromium does
   * not always answer the commands pending on a session when its target closes (a command sent
   * right after `Target.closeTarget` stayed unanswered), so they are rejected on detach instead of
   * hanging their caller for good.
   */
  send<M extends CommandName>(method: M, params?: CommandParams<M>): Promise<CommandResult<M>> {
    if (this.detached) return Promise.reject(new TargetClosedError(this.targetId, method));
    return new Promise<CommandResult<M>>((resolve, reject) => {
      this.pending.add(reject);
      this.connection.send(method, params, this.sessionId).then(
        (result) => {
          this.pending.delete(reject);
          resolve(result);
        },
        (error: unknown) => {
          this.pending.delete(reject);
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the connection's rejection, passed through as it is
          reject(error);
        },
      );
    });
  }

  /**
   * A best-effort command (cleanup, optional steps): its answer, or undefined when it failed,
   * typically because the target went away meanwhile.
   */
  sendMayFail<M extends CommandName>(method: M, params?: CommandParams<M>): Promise<CommandResult<M> | undefined> {
    return this.mayFail(this.send(method, params));
  }

  /** `command` as a best-effort one (IgnoredFailures.mayFail), counted with the connection's. */
  mayFail<T>(command: Promise<T>): Promise<T | undefined> {
    return this.connection.failures.mayFail(command);
  }
}

export interface TargetObserver {
  /**
   * Set up a freshly attached target before it runs: send every setup command now and return
   * their promises without awaiting them (a paused service worker answers `Runtime.enable` only
   * after it is resumed, docs/chromium.md "Deadlock").
   */
  setUpTarget(target: AttachedTarget): Array<Promise<unknown>>;
  targetDetached(target: AttachedTarget): void;
  /** Every `Target.targetCreated` (discovery), before the target is attached. */
  targetCreated(info: Protocol.Target.TargetInfo): void;
  /** `Target.targetDestroyed`: the target is gone for good (its id never comes back). */
  targetDestroyed(targetId: string): void;
  /** Setup of a target failed in a way that loses telemetry. */
  setupFailed(target: AttachedTarget, step: string, error: Error): void;
}

/**
 * Extra per-target setup (e.g. the hidden-cursor style of the computer actions): called for every
 * newly attached target after the observer's setup and before the resume, with the same contract
 * as `TargetObserver.setUpTarget` (send now, return the promises, do not await).
 */
export type TargetSetupHook = (target: AttachedTarget) => Array<Promise<unknown>>;

type AutoAttachFilter = Protocol.Target.TargetFilter;

// The custom filter must exclude `tab` and end with `{}`; the two headless WebUI targets are
// `browser_ui` (docs/chromium.md "Attaching to every target").
const BROWSER_FILTER: AutoAttachFilter = [{ type: 'browser_ui', exclude: true }, { type: 'tab', exclude: true }, {}];
// Service and shared workers are attached once at the browser level; page sessions would attach
// the same service worker again for every page in its scope.
const CHILD_FILTER: AutoAttachFilter = [
  { type: 'service_worker', exclude: true },
  { type: 'shared_worker', exclude: true },
  { type: 'browser_ui', exclude: true },
  { type: 'tab', exclude: true },
  {},
];

export class TargetManager {
  private readonly bySession = new Map<string, AttachedTarget>();
  private readonly byTargetId = new Map<string, AttachedTarget>();
  private readonly disposers: Array<() => void> = [];
  private readonly pendingSetups = new Set<Promise<unknown>>();
  private disposed = false;
  /** Page targets in focus order, most recent last. */
  private pageOrder: string[] = [];
  private readonly setupHooks = new Set<TargetSetupHook>();
  private readonly activeListeners = new Set<(page: AttachedTarget | undefined) => void>();
  /** The active page last told to the listeners. */
  private toldActive: AttachedTarget | undefined;

  constructor(
    private readonly connection: CdpConnection,
    private readonly observer: TargetObserver,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    const c = this.connection;
    this.disposers.push(
      c.on('Target.attachedToTarget', (params, parentSessionId) => this.onAttached(params, parentSessionId)),
      c.on('Target.detachedFromTarget', (params) => this.onDetached(params.sessionId)),
      c.on('Target.targetCreated', (params) => this.onTargetCreated(params.targetInfo)),
      c.on('Target.targetInfoChanged', (params) => this.onTargetInfoChanged(params.targetInfo)),
      c.on('Target.targetDestroyed', (params) => this.onTargetDestroyed(params.targetId)),
    );
    await c.send('Target.setDiscoverTargets', { discover: true, filter: BROWSER_FILTER });
    // Attaches the targets that exist already (waitingForDebugger false, or true for targets an
    // earlier connection left paused) and every later one, paused until set up.
    await c.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true, filter: BROWSER_FILTER });
  }

  get(sessionId: string | undefined): AttachedTarget | undefined {
    return sessionId === undefined ? undefined : this.bySession.get(sessionId);
  }

  byId(targetId: string): AttachedTarget | undefined {
    return this.byTargetId.get(targetId);
  }

  all(): IterableIterator<AttachedTarget> {
    return this.bySession.values();
  }

  /**
   * The tab "in front" (docs/replay.md "Which tab"): headless Chromium has no focus and every tab
   * stays visible, so it is the most recently opened page, or the most recently brought to the
   * front through the agent (`activate`); when it closes, the one before it.
   */
  activePage(): AttachedTarget | undefined {
    for (let i = this.pageOrder.length - 1; i >= 0; i--) {
      const target = this.byTargetId.get(this.pageOrder[i]!);
      if (target) return target;
    }
    return undefined;
  }

  /**
   * A client brought page `targetId` to the front (`Page.bringToFront`, `Target.activateTarget`
   * through the agent's CDP endpoint): it is the active page from now on.
   */
  activate(targetId: string): void {
    if (this.byTargetId.get(targetId)?.type !== 'page') return;
    this.pageOrder = [...this.pageOrder.filter((id) => id !== targetId), targetId];
    this.activeMayHaveChanged();
  }

  /** Told (asynchronously, once per change) whenever `activePage()` becomes another page or none; returns its removal. */
  onActivePageChange(listener: (page: AttachedTarget | undefined) => void): () => void {
    this.activeListeners.add(listener);
    return () => this.activeListeners.delete(listener);
  }

  /** Run `hook` on every target attached from now on; returns its removal. */
  addSetupHook(hook: TargetSetupHook): () => void {
    this.setupHooks.add(hook);
    return () => this.setupHooks.delete(hook);
  }

  /** Resolves once every setup started so far has settled (used by tests and shutdown). */
  async idle(): Promise<void> {
    while (this.pendingSetups.size > 0) await Promise.allSettled([...this.pendingSetups]);
  }

  dispose(): void {
    this.disposed = true;
    this.activeListeners.clear();
    for (const dispose of this.disposers.splice(0)) dispose();
    for (const target of this.bySession.values()) target.markDetached();
    this.bySession.clear();
    this.byTargetId.clear();
  }

  private onAttached(params: Protocol.Target.AttachedToTargetEvent, parentSessionId: string | undefined): void {
    if (this.disposed) return;
    const { sessionId, targetInfo, waitingForDebugger } = params;
    const duplicate = this.byTargetId.get(targetInfo.targetId);
    if (duplicate) {
      // The same worker reached through a second session: keep the first, release this one.
      this.release(sessionId);
      return;
    }
    const parent = parentSessionId === undefined ? undefined : this.bySession.get(parentSessionId);
    const target = new AttachedTarget(this.connection, sessionId, targetInfo.targetId, targetInfo.type, targetInfo, parent, waitingForDebugger);
    this.bySession.set(sessionId, target);
    this.byTargetId.set(target.targetId, target);
    if (target.type === 'page') {
      this.pageOrder.push(target.targetId);
      this.activeMayHaveChanged();
    }

    let setups: Array<Promise<unknown>>;
    try {
      setups = this.observer.setUpTarget(target);
    } catch (err) {
      setups = [];
      this.observer.setupFailed(target, 'setup', err as Error);
    }
    for (const hook of this.setupHooks) {
      try {
        setups.push(...hook(target));
      } catch (err) {
        this.logger.warn({ target_id: target.targetId, err: (err as Error).message }, 'target setup hook failed');
      }
    }
    if (target.type === 'page' || target.type === 'iframe') {
      const autoAttach = target.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true, filter: CHILD_FILTER });
      autoAttach.catch((err: unknown) => {
        if (!isTargetGone(err, target)) this.observer.setupFailed(target, 'Target.setAutoAttach', err as Error);
      });
      setups.push(autoAttach);
    }
    // Always resume, also when the setup failed: an unresumed popup freezes its opener's
    // window.open() call. On a target that is not paused this is a no-op.
    const resume = target.send('Runtime.runIfWaitingForDebugger');
    setups.push(resume);
    const all = Promise.allSettled(setups).then((results) => {
      for (const result of results) {
        if (result.status === 'rejected' && !target.isDetached) {
          this.logger.debug({ target_id: target.targetId, target_type: target.type, err: String(result.reason) }, 'target setup command failed');
        }
      }
    });
    this.pendingSetups.add(all);
    void all.finally(() => this.pendingSetups.delete(all));
  }

  private release(sessionId: string): void {
    const { failures } = this.connection;
    void failures
      .mayFail(this.connection.send('Runtime.runIfWaitingForDebugger', undefined, sessionId))
      .then(() => failures.mayFail(this.connection.send('Target.detachFromTarget', { sessionId })));
  }

  private onDetached(sessionId: string): void {
    const target = this.bySession.get(sessionId);
    if (!target) return;
    this.bySession.delete(sessionId);
    if (this.byTargetId.get(target.targetId) === target) this.byTargetId.delete(target.targetId);
    target.markDetached();
    if (target.type === 'page') {
      this.pageOrder = this.pageOrder.filter((id) => id !== target.targetId);
      this.activeMayHaveChanged();
    }
    this.observer.targetDetached(target);
  }

  private onTargetCreated(info: Protocol.Target.TargetInfo): void {
    if (this.disposed) return;
    this.observer.targetCreated(info);
  }

  private onTargetInfoChanged(info: Protocol.Target.TargetInfo): void {
    const target = this.byTargetId.get(info.targetId);
    if (!target) return;
    target.url = info.url;
    target.title = info.title;
  }

  private onTargetDestroyed(targetId: string): void {
    this.pageOrder = this.pageOrder.filter((id) => id !== targetId);
    this.activeMayHaveChanged();
    if (!this.disposed) this.observer.targetDestroyed(targetId);
  }

  /**
   * Tells the listeners when the active page changed, after the current CDP message is handled:
   * a listener may send commands to the new page (which the target's own setup sent first).
   */
  private activeMayHaveChanged(): void {
    if (this.activeListeners.size === 0) return;
    queueMicrotask(() => {
      if (this.disposed) return;
      const active = this.activePage();
      if (active === this.toldActive) return;
      this.toldActive = active;
      for (const listener of [...this.activeListeners]) listener(active);
    });
  }
}
