// Page script family (docs/page-script.md): injects the page script (injected/, bundled by build.mjs) into an
// isolated world of every page and out-of-process iframe, and turns its reports into
// interaction_click, interaction_key, interaction_scroll_settled, page_layout_shift and page_lcp.
//
// Injection (docs/chromium.md "Injection"): `Runtime.addBinding` with `executionContextName` exposes
// the report binding only in the world named `worldName`; `Page.addScriptToEvaluateOnNewDocument`
// with that `worldName` and `runImmediately: true` runs the script in every later document before
// its first script, and right away in the documents that exist already (measured: the world it
// creates there is the one `Page.createIsolatedWorld` would return, so no separate evaluation is
// needed). The page can neither see, call, overwrite nor forge the binding. Both registrations
// are per session, so every out-of-process iframe gets its own in its setup.
//
// `runImmediately` is asked only where a document may already be in use: targets that existed
// before the agent attached, and pages (a popup's first document may be written by its opener).
// An out-of-process iframe attached while paused has only its initial empty document, replaced at
// once by its real one: running the script there too would create a second isolated world per
// iframe per page load for nothing.
//
// A config change (PATCH) swaps the registration for one with the new categories, again with
// `runImmediately`: in a world where the script runs already, it adds or removes its listeners and
// observers to match. With both categories off it is unregistered and told to stop in every
// existing world.
//
// page_lcp carries the LCP element's backend node id, which costs a `Runtime.evaluate` in the
// page's renderer. The candidates reported while their tab loads are resolved together once the
// load has ended (one evaluation per document), so none of it competes with the load
// (docs/page-script.md "Cost"); their events come then, with the time they were reported.
//
// Reports are untrusted all the same: each must come from a context of that world, pass the
// per-target rate limit and validate against its schema shape; only the measured fields are taken
// from it, the context (target, frame, loader, url, nav_seq) always comes from the agent.

import { randomBytes } from 'node:crypto';
import type { Protocol } from 'devtools-protocol';
import {
  EVENT_CATEGORY,
  PAGE_SCRIPT_GLOBAL,
  type Category,
  type EventContext,
  type LcpReport,
  type PageLcpData,
  type PageScriptOptions,
  type PageScriptReport,
  type PageWebVitalsData,
  type WebVitalsReport,
} from '../../injected/schema.ts';
import { assertNever } from '../assert-never.ts';
import { PAGE_SCRIPT_BUNDLE, PAGE_SCRIPT_GLOBAL_NAME } from '../generated/page-script.ts';
import type { TargetState } from './event-context.ts';
import type { FamilyHost, TelemetryFamily } from './family.ts';
import { parsePageScriptReport } from './page-script-report.ts';
import { TokenBucket } from './token-bucket.ts';

/** Rate limit per target (docs/page-script.md): bursts of 100 reports, 1000 per second sustained. */
export const REPORT_BURST = 100;
export const REPORTS_PER_SECOND = 1000;

const BINDING_NAME = '__browserTelemetryAgentReport';
const METHOD = 'Runtime.bindingCalled';
const SCRIPT_TARGET_TYPES = new Set(['page', 'iframe']);

/** Longest a page_lcp waits for its tab's load to end. */
export const MAX_LCP_WAIT_MS = 5000;

/** A page_lcp waiting for its element's node id. */
interface PendingLcp {
  state: TargetState;
  contextId: number;
  ref: number;
  emit(nodeId: number | undefined): void;
}

/** The script registered on one session. */
interface Registration {
  /** Which categories it installs. */
  categories: string;
  /** Its `addScriptToEvaluateOnNewDocument` identifier, once known. */
  identifier: Promise<string | undefined>;
}

export class PageScriptFamily implements TelemetryFamily {
  /**
   * Unique per agent connection: bindings match worlds by name across all sessions of a page, so
   * a second agent (or client) using the same name would receive this agent's reports.
   */
  readonly worldName = `browser-telemetry-agent-${randomBytes(6).toString('hex')}`;
  private host!: FamilyHost;
  /** Per session: the execution contexts of the script's world. */
  private readonly worldContexts = new Map<string, Set<number>>();
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly warnedRateLimited = new Set<string>();
  private readonly sources = new Map<string, string>();
  /** Per session: the current script registration (none while both categories are off). */
  private readonly registrations = new Map<string, Registration>();
  /** page_lcp events waiting for their tab's load to end, by tab session, with their timer. */
  private readonly lcpWaiting = new Map<string, { entries: PendingLcp[]; timer: NodeJS.Timeout }>();
  private disposed = false;
  /**
   * Per tab session: the latest Web Vitals snapshot of its current top-level document, emitted as
   * page_web_vitals when the document is hidden or left.
   */
  private readonly webVitals = new Map<
    string,
    { data: Omit<PageWebVitalsData, 'reason'>; state: TargetState; loaderId: string | undefined; emitted: boolean }
  >();

  constructor(
    /** Every page_layout_shift emitted, for the tab's settle machines. */
    private readonly onLayoutShift: (state: TargetState) => void,
    /** Milliseconds on a monotonic clock (the rate limiter's). */
    private readonly now: () => number = () => performance.now(),
    /** page_long_task threshold (ms); 0: no long-task observer (docs/page-script.md "Long tasks"). */
    private readonly longTaskMs = 0,
  ) {}

  start(host: FamilyHost): void {
    this.host = host;
    host.handle('Runtime.executionContextCreated', (p, s) => {
      if (p.context.name === this.worldName) this.contextsOf(s).add(p.context.id);
    });
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- contexts are keyed by executionContextId, which Chromium still sends
    host.handle('Runtime.executionContextDestroyed', (p, s) => this.worldContexts.get(s.target.sessionId)?.delete(p.executionContextId));
    host.handle('Runtime.executionContextsCleared', (_p, s) => this.worldContexts.get(s.target.sessionId)?.clear());
    host.handle('Runtime.bindingCalled', this.onBindingCalled);
    host.loadingTabs.onLoadEnd((tabSessionId) => this.flushLcp(tabSessionId));
  }

  setUpTarget(state: TargetState): Array<Promise<unknown>> {
    if (!SCRIPT_TARGET_TYPES.has(state.target.type)) return [];
    const options = this.optionsFor(true);
    if (!options.interaction && !options.page) return [];
    const target = state.target;
    return this.register(state, options, !target.wasWaiting || target.type === 'page');
  }

  /** The config changed: re-register the script with the categories now on, or stop it. */
  reconfigure(state: TargetState): Array<Promise<unknown>> {
    const target = state.target;
    if (!SCRIPT_TARGET_TYPES.has(target.type)) return [];
    const options = this.optionsFor(false);
    const current = this.registrations.get(target.sessionId);
    if ((current?.categories ?? categoriesOf({ interaction: false, page: false })) === categoriesOf(options)) return [];
    const commands: Array<Promise<unknown>> = [];
    if (current) {
      this.registrations.delete(target.sessionId);
      const remove = current.identifier.then((identifier) => {
        if (identifier !== undefined) return target.sendMayFail('Page.removeScriptToEvaluateOnNewDocument', { identifier });
        return undefined;
      });
      commands.push(remove);
    }
    if (options.interaction || options.page) {
      commands.push(...this.register(state, options, true));
    } else {
      // Nothing to register: tell the script in every existing world to remove everything.
      const expression = `globalThis[${JSON.stringify(PAGE_SCRIPT_GLOBAL)}]?.configure(${JSON.stringify(options)})`;
      for (const contextId of this.worldContexts.get(target.sessionId) ?? []) {
        commands.push(target.sendMayFail('Runtime.evaluate', { expression, contextId, silent: true }));
      }
    }
    return commands;
  }

  /** The tab's main frame committed another document: the previous one's Web Vitals are final. */
  frameNavigated(state: TargetState, _frame: Protocol.Page.Frame, isTabMainFrame: boolean): void {
    if (isTabMainFrame) this.emitWebVitals(state.target.sessionId, 'navigated');
  }

  /** The session ends: every tab's latest Web Vitals (docs/events.md "Web Vitals"). */
  endSession(): void {
    for (const sessionId of [...this.webVitals.keys()]) this.emitWebVitals(sessionId, 'session_end');
  }

  targetDetached(state: TargetState): void {
    const sessionId = state.target.sessionId;
    this.emitWebVitals(sessionId, 'tab_closed');
    this.worldContexts.delete(sessionId);
    this.buckets.delete(sessionId);
    this.warnedRateLimited.delete(sessionId);
    this.registrations.delete(sessionId);
    // Its waiting page_lcp events go with it (an event of a detached target is not emitted).
    const waiting = this.lcpWaiting.get(sessionId);
    if (waiting !== undefined) {
      clearTimeout(waiting.timer);
      this.lcpWaiting.delete(sessionId);
    }
  }

  dispose(): void {
    this.disposed = true;
    this.webVitals.clear();
    this.worldContexts.clear();
    this.buckets.clear();
    this.registrations.clear();
    for (const waiting of this.lcpWaiting.values()) clearTimeout(waiting.timer);
    this.lcpWaiting.clear();
  }

  /**
   * Binding, then script (the script looks the binding up when it reports). The binding is added
   * again on every registration: turning Runtime off and on again drops it.
   */
  private register(state: TargetState, options: PageScriptOptions, runImmediately: boolean): Array<Promise<unknown>> {
    const target = state.target;
    const binding = target.send('Runtime.addBinding', { name: BINDING_NAME, executionContextName: this.worldName });
    const script = target.send('Page.addScriptToEvaluateOnNewDocument', { source: this.sourceFor(options), worldName: this.worldName, runImmediately });
    const identifier = target.mayFail(script).then((r) => r?.identifier);
    this.registrations.set(target.sessionId, { categories: categoriesOf(options), identifier });
    return [this.host.setUpStep(target, 'Runtime.addBinding', binding), this.host.setUpStep(target, 'Page.addScriptToEvaluateOnNewDocument', script)];
  }

  private optionsFor(history: boolean): PageScriptOptions {
    const options: PageScriptOptions = { binding: BINDING_NAME, interaction: this.host.isOn('interaction'), page: this.host.isOn('page'), history };
    if (this.longTaskMs > 0) options.longTaskMs = this.longTaskMs;
    return options;
  }

  private readonly onBindingCalled = (params: Protocol.Runtime.BindingCalledEvent, state: TargetState): void => {
    if (params.name !== BINDING_NAME) return;
    const sessionId = state.target.sessionId;
    if (!this.worldContexts.get(sessionId)?.has(params.executionContextId)) {
      this.drop('invalid_report', state, 'not from the page script world');
      return;
    }
    if (!this.bucketOf(sessionId).take()) {
      this.drop('rate_limit', state, 'over the rate limit');
      return;
    }
    const parsed = parsePageScriptReport(params.payload);
    if (!parsed.ok) {
      this.drop('invalid_report', state, parsed.reason);
      return;
    }
    const report = parsed.report;
    if (!this.host.admits(EVENT_CATEGORY[report.type] as Category)) return;
    // Binding calls carry no timestamp: the event time is when the agent received the report.
    const ts = this.host.clock.nowUs();
    const ctx = this.host.tracker.contextOfExecutionContext(state, params.executionContextId);
    this.translate(report, ts, ctx, state, params.executionContextId);
  };

  private translate(report: PageScriptReport, ts: number, ctx: EventContext, state: TargetState, contextId: number): void {
    const host = this.host;
    switch (report.type) {
      case 'interaction_click': {
        const { x, y, selector, tag, text } = report;
        host.emit('interaction_click', ts, { ...ctx, x, y, selector, tag, text }, { method: METHOD, origin: state });
        return;
      }
      case 'interaction_key': {
        const { key, selector, tag } = report;
        host.emit('interaction_key', ts, { ...ctx, key, selector, tag }, { method: METHOD, origin: state });
        return;
      }
      case 'interaction_scroll_settled': {
        const { from_x, from_y, to_x, to_y, target_selector } = report;
        host.emit('interaction_scroll_settled', ts, { ...ctx, from_x, from_y, to_x, to_y, target_selector }, { method: METHOD, origin: state });
        return;
      }
      case 'page_layout_shift': {
        const details = { value: report.value, had_recent_input: report.had_recent_input };
        const data = { ...ctx, source_frame_id: sourceFrameOf(ctx, state), time: report.time, duration: 0 as const, layout_shift_details: details };
        host.emit('page_layout_shift', ts, data, { method: METHOD, origin: state });
        this.onLayoutShift(state);
        return;
      }
      case 'page_lcp':
        this.emitLcp(report, ts, ctx, state, contextId);
        return;
      case 'page_web_vitals':
        this.onWebVitals(report, ctx, state);
        return;
      case 'page_long_task': {
        const { time, duration, attribution, scripts } = report;
        const data = { ...ctx, source_frame_id: sourceFrameOf(ctx, state), time, duration, attribution, ...(scripts && { scripts }) };
        host.emit('page_long_task', ts, data, { method: METHOD, origin: state });
        return;
      }
      default:
        assertNever(report);
    }
  }

  /**
   * A Web Vitals snapshot of a tab's top-level document (docs/events.md "Web Vitals"): kept until
   * the document is left; a `hidden` one is emitted at once and ends the document's reporting.
   */
  private onWebVitals(report: WebVitalsReport, ctx: EventContext, state: TargetState): void {
    const target = state.target;
    // Top-level documents only (the script does not run it in iframes).
    if (target.type !== 'page' || ctx.frame_id !== target.targetId) return;
    const { type: _type, reason, ...vitals } = report;
    const current = this.webVitals.get(target.sessionId);
    // The document already reported its hidden snapshot.
    if (current?.emitted === true && current.loaderId === ctx.loader_id) return;
    this.webVitals.set(target.sessionId, { data: { ...ctx, ...vitals }, state, loaderId: ctx.loader_id, emitted: false });
    if (reason === 'hidden') this.emitWebVitals(target.sessionId, 'hidden');
  }

  private emitWebVitals(sessionId: string, reason: PageWebVitalsData['reason']): void {
    const pending = this.webVitals.get(sessionId);
    if (pending === undefined) return;
    // A hidden document keeps its entry (a later snapshot of it is ignored); leaving it ends it.
    if (reason !== 'hidden') this.webVitals.delete(sessionId);
    if (pending.emitted) return;
    pending.emitted = true;
    if (this.disposed || !this.host.admits('page')) return;
    this.host.emit('page_web_vitals', this.host.clock.nowUs(), { ...pending.data, reason }, { method: METHOD, origin: pending.state });
  }

  /** page_lcp waits for its element's backend node id (one evaluation in the script's world). */
  private emitLcp(report: LcpReport, ts: number, ctx: EventContext, state: TargetState, contextId: number): void {
    const details: PageLcpData['lcp_details'] = {
      render_time: report.render_time,
      load_time: report.load_time,
      size: report.size,
      element_id: report.element_id,
      url: report.url,
    };
    const data: PageLcpData = { ...ctx, source_frame_id: sourceFrameOf(ctx, state), time: report.time, lcp_details: details };
    const emit = (nodeId: number | undefined): void => {
      if (this.disposed || state.target.isDetached || !this.host.admits('page')) return;
      if (nodeId !== undefined) details.node_id = nodeId;
      this.host.emit('page_lcp', ts, data, { truncated: report.truncated === true, method: METHOD, origin: state });
    };
    if (report.element_ref === undefined) {
      emit(undefined);
      return;
    }
    const pending: PendingLcp = { state, contextId, ref: report.element_ref, emit };
    const tab = state.target.tab;
    if (tab === undefined || !this.host.loadingTabs.isLoading(tab.sessionId)) {
      this.resolve([pending]);
      return;
    }
    let waiting = this.lcpWaiting.get(tab.sessionId);
    if (waiting === undefined) {
      const timer = setTimeout(() => this.flushLcp(tab.sessionId), MAX_LCP_WAIT_MS);
      timer.unref();
      waiting = { entries: [], timer };
      this.lcpWaiting.set(tab.sessionId, waiting);
    }
    waiting.entries.push(pending);
  }

  /** The tab's main frame finished loading: its waiting page_lcp events are resolved now. */
  private flushLcp(tabSession: string): void {
    const waiting = this.lcpWaiting.get(tabSession);
    if (waiting === undefined) return;
    clearTimeout(waiting.timer);
    this.lcpWaiting.delete(tabSession);
    // One evaluation per execution context (a document of the tab or of one of its iframes).
    const byContext = new Map<string, PendingLcp[]>();
    for (const entry of waiting.entries) {
      const key = `${entry.state.target.sessionId}/${entry.contextId}`;
      byContext.set(key, [...(byContext.get(key) ?? []), entry]);
    }
    for (const entries of byContext.values()) this.resolve(entries);
  }

  /**
   * The LCP elements the script kept under the entries' refs (all of one execution context), as
   * backend DOM node ids: deep serialization of a node carries its backendNodeId, so one
   * Runtime.evaluate suffices for all of them. May fail (the document went away): the events are
   * then reported without node_id.
   */
  private resolve(entries: PendingLcp[]): void {
    const { state, contextId } = entries[0]!;
    const global = `globalThis[${JSON.stringify(PAGE_SCRIPT_GLOBAL)}]`;
    const expression = `[${entries.map((e) => `${global}.takeLcpElement(${e.ref})`).join(',')}]`;
    state.target.send('Runtime.evaluate', { expression, contextId, silent: true, serializationOptions: { serialization: 'deep', maxDepth: 1 } }).then(
      ({ result }) => {
        if (result.objectId) void state.target.sendMayFail('Runtime.releaseObject', { objectId: result.objectId });
        const items =
          result.deepSerializedValue?.type === 'array'
            ? (result.deepSerializedValue.value as Array<{ type?: string; value?: { backendNodeId?: unknown } }>)
            : [];
        entries.forEach((entry, i) => {
          const node = items[i]?.type === 'node' ? items[i].value : undefined;
          entry.emit(typeof node?.backendNodeId === 'number' ? node.backendNodeId : undefined);
        });
      },
      () => {
        for (const entry of entries) entry.emit(undefined);
      },
    );
  }

  /**
   * Counted in the telemetry stats (/metrics `bta_events_dropped_total`): `invalid_report` = not
   * from the script's world, not JSON, unknown type or field, wrong type or size; `rate_limit` =
   * over the target's token bucket.
   */
  private drop(reason: 'invalid_report' | 'rate_limit', state: TargetState, detail: string): void {
    this.host.stats.dropped[reason]++;
    const target = state.target;
    if (reason === 'rate_limit') {
      // Once per target: a page flooding reports would otherwise flood the log too.
      if (this.warnedRateLimited.has(target.sessionId)) return;
      this.warnedRateLimited.add(target.sessionId);
      this.host.logger.warn({ target_id: target.targetId, target_type: target.type }, 'page script reports over the rate limit are dropped');
      return;
    }
    this.host.logger.debug({ target_id: target.targetId, target_type: target.type, reason: detail }, 'page script report dropped');
  }

  private bucketOf(sessionId: string): TokenBucket {
    let bucket = this.buckets.get(sessionId);
    if (!bucket) {
      bucket = new TokenBucket(REPORT_BURST, REPORTS_PER_SECOND, this.now);
      this.buckets.set(sessionId, bucket);
    }
    return bucket;
  }

  private contextsOf(state: TargetState): Set<number> {
    let contexts = this.worldContexts.get(state.target.sessionId);
    if (!contexts) {
      contexts = new Set();
      this.worldContexts.set(state.target.sessionId, contexts);
    }
    return contexts;
  }

  /** The bundle plus its install call, once per combination of categories. */
  private sourceFor(options: PageScriptOptions): string {
    const key = JSON.stringify(options);
    let source = this.sources.get(key);
    if (source === undefined) {
      source = `(()=>{${PAGE_SCRIPT_BUNDLE}\n${PAGE_SCRIPT_GLOBAL_NAME}.install(${key})})()\n//# sourceURL=browser-telemetry-agent/page-script.js`;
      this.sources.set(key, source);
    }
    return source;
  }
}

function categoriesOf(options: Pick<PageScriptOptions, 'interaction' | 'page'>): string {
  return `${options.interaction ? 'interaction' : ''},${options.page ? 'page' : ''}`;
}

/** The frame whose document reported the entry; page and iframe targets always know it. */
function sourceFrameOf(ctx: EventContext, state: TargetState): string {
  return ctx.frame_id ?? state.target.targetId;
}
