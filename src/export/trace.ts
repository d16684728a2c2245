// A Playwright trace (docs/export.md "Playwright trace") from a session's events. Pure: events go
// in, in seq order, and lines of the trace's files come out. The archive around them (the zip, the
// passes over the history) is trace-archive.ts; network entries are the HAR's (har.ts), wrapped
// here as the trace's resource snapshots.
//
// Control events (computer_action, cdp_command, api_call) become actions with their start, end,
// target and outcome; the page's own clicks, keys and scrolls become zero-length input actions;
// navigations become actions that end at their load. An event that names the action it was
// caused by (`caused_by`) is grouped under it: an input or navigation as a child action, anything
// else as a line of the action's log. A step (docs/events.md "Steps") is a group, as Playwright's
// test runner shows `test.step`: its caller's actions (`step_id`) are nested under it, and it lasts
// until its caller's next step that is not nested in it. Every event type has its case in
// TraceBuilder.add, shown or listed as not shown (docs/architecture.md "Add an event type").

import type { HarEntry } from './har.ts';
import { skipUnknown } from '../assert-never.ts';
import { contextOf } from '../event-data.ts';
import type {
  CdpCommandData,
  ConsoleErrorData,
  ConsoleLogData,
  EventContext,
  InputShape,
  PageNavigationData,
  PageTimingData,
  StackTrace,
  StepData,
  TelemetryEvent,
} from '../../injected/schema.ts';

/**
 * The trace format version written (docs/export.md "Version"): the oldest one whose shapes the
 * current loader still reads without rewriting actions or files, so both older and newer viewers
 * open it (a viewer refuses versions newer than its own, and upgrades older ones).
 */
export const TRACE_VERSION = 8;

/** Effects kept per action while waiting for the action's own event (they may come first). */
const PENDING_LOG_PER_ACTION = 50;
/** Actions whose effects may be waiting at once; beyond it, the oldest waiting are dropped. */
const PENDING_ACTIONS = 1000;

/** A trace line (one JSON object); the shapes are those of the trace format version above. */
type TraceLine = Record<string, unknown>;

export interface TraceContextInfo {
  sessionId: string;
  /** Unix µs of the trace's start (the first event written). */
  startTs: number;
  title: string;
  viewport?: { width: number; height: number };
}

/** One picture of the filmstrip, stored as `resources/<name>`. */
export interface TraceFrame {
  name: string;
  /** Unix µs. */
  ts: number;
  width: number;
  height: number;
}

/** An error for the trace's error list (the viewer's Errors tab, `playwright trace errors`). */
export interface TraceError {
  /** Unix µs. */
  ts: number;
  message: string;
  stack?: Array<{ file: string; line: number; column: number; function?: string }>;
}

/** Unix µs → the trace's monotonic time: ms, the same scale as its wall time. */
export function traceTime(ts: number): number {
  return ts / 1000;
}

/** The first line of every trace file: the context's options. */
export function contextOptionsLine(info: TraceContextInfo, origin: 'library' | 'testRunner'): string {
  const time = traceTime(info.startTs);
  const line: TraceLine = {
    version: TRACE_VERSION,
    type: 'context-options',
    origin,
    browserName: 'chromium',
    platform: 'linux',
    wallTime: time,
    monotonicTime: time,
    sdkLanguage: 'javascript',
    title: info.title,
    contextId: `session@${info.sessionId}`,
    options: info.viewport !== undefined ? { viewport: info.viewport } : {},
  };
  return `${JSON.stringify(line)}\n`;
}

/** The error list's file (a second context, origin testRunner, which is where the viewer reads errors). */
export function errorLines(info: TraceContextInfo, errors: readonly TraceError[]): string {
  let out = contextOptionsLine(info, 'testRunner');
  for (const error of errors) {
    const line: TraceLine = { type: 'error', message: error.message };
    if (error.stack !== undefined && error.stack.length > 0) line.stack = error.stack;
    out += `${JSON.stringify(line)}\n`;
  }
  return out;
}

/**
 * A HAR entry as the trace's network line. `pageId`: the tab it belongs to, when known.
 * `bodyFile`: the resource holding its response body (the viewer shows bodies only from files).
 */
export function resourceLine(entry: HarEntry, pageId: string | undefined, bodyFile?: string): string {
  const snapshot: Record<string, unknown> = { ...entry, _monotonicTime: Date.parse(entry.startedDateTime) };
  if (pageId !== undefined) snapshot.pageref = pageId;
  else delete snapshot.pageref;
  if (bodyFile !== undefined) {
    const { text: _text, encoding: _encoding, ...content } = entry.response.content;
    snapshot.response = { ...entry.response, content: { ...content, _sha1: bodyFile } };
  }
  return `${JSON.stringify({ type: 'resource-snapshot', snapshot })}\n`;
}

/** Width and height from a PNG's IHDR chunk (bytes 16-23), undefined when it is not a PNG. */
export function pngSize(png: Buffer): { width: number; height: number } | undefined {
  if (png.length < 24 || png.readUInt32BE(0) !== 0x89504e47 || png.toString('latin1', 12, 16) !== 'IHDR') return undefined;
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

type ControlType = 'computer_action' | 'cdp_command' | 'api_call';

/** The input shape of a control event, and a command's format and URL: shown as the action's parameters. */
type InputFields = InputShape & Pick<CdpCommandData, 'format' | 'url'>;

const INPUT_PARAMS = [
  'event_type',
  'x',
  'y',
  'button',
  'click_count',
  'delta_x',
  'delta_y',
  'text_length',
  'key',
  'modifiers',
  'format',
  'url',
] as const satisfies ReadonlyArray<keyof InputFields>;

interface OpenAction {
  callId: string;
  startTime: number;
}

interface OpenStep extends OpenAction {
  stepId: string;
}

/** Maps events to the lines of `trace.trace`; errors are collected for the error list. */
export class TraceBuilder {
  private calls = 0;
  /** Tab → its navigation action still waiting for its load. */
  private readonly openNavigations = new Map<string, OpenAction & { loaderId: string }>();
  /** Dialogs (by tab) and downloads (by guid) still open. */
  private readonly openDialogs = new Map<string, OpenAction>();
  private readonly openDownloads = new Map<string, OpenAction>();
  /** Each caller's steps still open, outermost first. */
  private readonly openSteps = new Map<string, OpenStep[]>();
  /** action_id → its call id, once the action's event was seen. */
  private readonly actionCalls = new Map<string, string>();
  /** api_call request_id → its call id (a computer batch's actions are grouped under their call). */
  private readonly requestCalls = new Map<string, string>();
  /**
   * Call ids given to actions named by an effect's caused_by before their own event came (a control
   * event is admitted when the action ended, after its first effects): the effect's action is
   * nested under that id, which the action then takes. Playwright builds the action tree once the
   * whole trace is read, so a parent declared later is found; one never declared leaves the
   * child at the top level.
   */
  private readonly reservedCalls = new Map<string, string>();
  /** Effects seen before their action, by action_id. */
  private readonly pendingLog = new Map<string, Array<{ time: number; message: string }>>();
  private readonly pages = new Set<string>();
  private lastPage: string | undefined;
  readonly errors: TraceError[] = [];
  /** Errors not kept (over maxErrors). */
  droppedErrors = 0;

  constructor(private readonly maxErrors = 10_000) {}

  /** The tab shown when a picture is taken (the screenshots are of the active tab). */
  get activePage(): string {
    return this.lastPage ?? 'page';
  }

  /** A filmstrip picture, at its time. */
  frame(frame: TraceFrame): string {
    const pageId = this.activePage;
    let out = this.ensurePage(pageId, frame.ts);
    out += line({ type: 'screencast-frame', pageId, sha1: frame.name, width: frame.width, height: frame.height, timestamp: traceTime(frame.ts) });
    return out;
  }

  /** One event, in seq order; returns the trace lines to append ('' when it has none here). */
  add(event: TelemetryEvent): string {
    const context = contextOf(event);
    const time = traceTime(event.ts);
    let out = '';
    const pageId = tabOf(context);
    if (pageId !== undefined) {
      out += this.ensurePage(pageId, event.ts);
      this.lastPage = pageId;
    }
    const { type, data } = event;
    // Every event of this agent has data; one without has nothing to show.
    if (data === undefined) return out;
    switch (type) {
      // Actions: what drove the browser.
      case 'computer_action':
      case 'cdp_command':
      case 'api_call':
        return out + this.onControl(event, pageId);
      case 'step':
        return out + this.onStep(event.ts, data);
      // The page's own input: zero-length actions.
      case 'interaction_click':
        return out + this.input(data, time, 'click', `click ${str(data.selector) || str(data.tag)}`, { selector: data.selector, text: data.text }, point(data));
      case 'interaction_key':
        return out + this.input(data, time, 'press', `press ${str(data.key)}`, { key: data.key, selector: data.selector });
      case 'interaction_scroll_settled':
        return (
          out +
          this.input(data, time, 'scroll', `scroll to ${num(data.to_x)},${num(data.to_y)}`, {
            from: `${num(data.from_x)},${num(data.from_y)}`,
            to: `${num(data.to_x)},${num(data.to_y)}`,
            selector: data.target_selector,
          })
        );
      // Navigations: actions that end at their load.
      case 'page_navigation':
        return out + this.onNavigation(event.ts, data);
      case 'page_dom_content_loaded':
      case 'page_load':
        return out + this.onLoad(type, event.ts, data);
      // The console and the errors.
      case 'console_log':
        return out + this.console(event.ts, data, str(data.level) || 'log');
      case 'console_error':
        // A console.error() call has `level`; an uncaught exception has none.
        return out + (data.level === 'error' ? this.console(event.ts, data, 'error') : this.pageError(event.ts, data));
      case 'page_crashed':
        return out + this.failure(event.ts, data, `page crashed${data.status !== undefined ? ` (${str(data.status)})` : ''}`);
      case 'page_unresponsive':
        return out + this.failure(event.ts, data, 'page unresponsive');
      case 'service_crashed':
        return out + this.failure(event.ts, undefined, `${str(data.service_name) || 'service'} crashed (${str(data.phase)})`);
      case 'system_oom_kill':
        return out + this.failure(event.ts, undefined, `out of memory: ${str(data.process_name)} (pid ${num(data.pid)}) killed`);
      // Dialogs and downloads: actions from their opening to their end.
      case 'page_dialog_opened': {
        const callId = this.nextCall();
        this.openDialogs.set(pageId ?? '', { callId, startTime: time });
        return (
          out +
          this.before(
            callId,
            time,
            'Dialog',
            'dialog',
            `${str(data.dialog_type)} dialog: ${str(data.message)}`,
            { type: data.dialog_type, message: data.message },
            pageId,
            data.caused_by,
          )
        );
      }
      case 'page_dialog_closed': {
        const open = this.openDialogs.get(pageId ?? '');
        if (open === undefined) return out + this.effect(data, time, `dialog closed (${data.accepted ? 'accepted' : 'dismissed'})`);
        this.openDialogs.delete(pageId ?? '');
        return out + line({ type: 'after', callId: open.callId, endTime: time, result: { accepted: data.accepted, closed_by: data.closed_by } });
      }
      case 'network_download_started': {
        const callId = this.nextCall();
        this.openDownloads.set(str(data.guid), { callId, startTime: time });
        return (
          out +
          this.before(
            callId,
            time,
            'Download',
            'download',
            `download ${str(data.suggested_filename)}`,
            { url: data.url, filename: data.suggested_filename },
            pageId,
            data.caused_by,
          )
        );
      }
      case 'network_download_finished': {
        const open = this.openDownloads.get(str(data.guid));
        if (open === undefined) return out;
        this.openDownloads.delete(str(data.guid));
        const failed = data.state !== 'completed';
        return (
          out +
          line({
            type: 'after',
            callId: open.callId,
            endTime: time,
            result: { state: data.state, received_bytes: data.received_bytes },
            ...(failed ? { error: { name: 'Error', message: `download ${str(data.state)}` } } : {}),
          })
        );
      }
      // In the trace's other passes (trace-archive.ts): requests and sockets are its resource
      // snapshots (the HAR's entries), screenshots its filmstrip.
      case 'network_request':
      case 'network_response':
      case 'network_loading_failed':
      case 'network_websocket_opened':
      case 'network_websocket_frame':
      case 'network_websocket_closed':
      case 'monitor_screenshot':
        return out;
      // Not shown in a trace: the trace viewer has no place for them.
      case 'network_idle':
      case 'network_download_progress':
      case 'network_eventsource_opened':
      case 'network_eventsource_message':
      case 'page_tab_opened':
      case 'page_layout_shift':
      case 'page_lcp':
      case 'page_layout_settled':
      case 'page_navigation_settled':
      case 'page_file_chooser_opened':
      case 'page_web_vitals':
      case 'page_recovered':
      case 'page_responsive':
      case 'page_long_task':
      case 'monitor_disconnected':
      case 'monitor_reconnected':
      case 'monitor_reconnect_failed':
      case 'monitor_init_failed':
      case 'replay_started':
      case 'replay_stopped':
      case 'live_view_connect':
      case 'live_view_disconnect':
      case 'cdp_connect':
      case 'cdp_disconnect':
        return out;
      default:
        skipUnknown(type);
        return out;
    }
  }

  /** Lines that close what is still open (navigations without a load, dialogs, downloads). */
  end(endTs: number): string {
    const time = traceTime(endTs);
    let out = '';
    const steps = [...this.openSteps.values()].flatMap((open) => open.reverse());
    for (const open of [...this.openNavigations.values(), ...this.openDialogs.values(), ...this.openDownloads.values(), ...steps])
      out += line({ type: 'after', callId: open.callId, endTime: Math.max(open.startTime, time) });
    this.openNavigations.clear();
    this.openDialogs.clear();
    this.openDownloads.clear();
    this.openSteps.clear();
    return out;
  }

  // ---- actions ----------------------------------------------------------------------------------

  private onControl(event: TelemetryEvent<ControlType>, pageId: string | undefined): string {
    const { type, data } = event;
    if (data === undefined) return '';
    // An api_call is admitted after its batch's computer actions, which name it by request id.
    const key = type === 'api_call' && data.request_id !== undefined ? `request:${data.request_id}` : data.action_id;
    const reserved = key === undefined ? undefined : this.reservedCalls.get(key);
    if (reserved !== undefined) this.reservedCalls.delete(key);
    const callId = reserved ?? this.nextCall();
    const startTime = traceTime(event.ts);
    const endTime = startTime + Math.max(0, typeof data.duration_ms === 'number' ? data.duration_ms : 0);
    const params: Record<string, unknown> = {};
    let klass: string;
    let method: string;
    let title: string;
    let parentId: string | undefined;
    let at: { x: number; y: number } | undefined;
    if (type === 'api_call') {
      klass = 'API';
      method = str(data.operation_id) || 'call';
      title = `${method} → ${num(data.status)}`;
      params.request_id = data.request_id;
      params.status = data.status;
      if (data.request_id !== undefined) this.requestCalls.set(data.request_id, callId);
    } else {
      const input: InputFields = data;
      for (const name of INPUT_PARAMS) if (input[name] !== undefined) params[name] = input[name];
      at = point(data);
      if (type === 'cdp_command') {
        klass = 'CDP';
        method = str(data.method) || 'command';
        title = `${method}${describeInput(data)}`;
      } else {
        klass = 'Computer';
        method = str(data.action) || 'action';
        title = `${method}${describeInput(data)}`;
        params.index = data.index;
        if (data.request_id !== undefined) parentId = this.requestCalls.get(data.request_id) ?? this.callOf(`request:${data.request_id}`);
      }
    }
    // An action of a step is nested in it (a batch's actions already are, through their batch).
    if (parentId === undefined && data.step_id !== undefined) parentId = this.callOf(stepKey(data.step_id));
    if (data.action_id !== undefined) this.remember(data.action_id, callId);
    // Control events are causes, never linked to another (src/control/cause-linker.ts): a computer
    // action's parent is its batch's api_call.
    let out = this.before(callId, startTime, klass, method, title, params, pageId, undefined, parentId);
    if (at !== undefined) out += line({ type: 'input', callId, point: at });
    const after: TraceLine = { type: 'after', callId, endTime };
    if (data.outcome === 'error') {
      after.error = { name: 'Error', message: data.error ?? `${method} failed` };
      this.addError(event.ts, `${title}: ${data.error ?? 'failed'}`);
    }
    out += line(after);
    if (data.action_id !== undefined) out += this.flushPending(data.action_id, callId);
    return out;
  }

  /**
   * A step: a group action (class `Test`, method `test.step`, as the test runner writes its steps)
   * titled with its name, its data as parameters, nested in its parent step. The caller's steps
   * still open that are not its ancestors end here.
   */
  private onStep(ts: number, data: StepData): string {
    const time = traceTime(ts);
    const caller = str(data.caller);
    const parentStep = data.parent_id;
    let open = this.openSteps.get(caller);
    if (open === undefined) {
      open = [];
      this.openSteps.set(caller, open);
    }
    let out = '';
    const keep = parentStep === undefined ? 0 : open.findIndex((step) => step.stepId === parentStep) + 1;
    for (const ended of open.splice(keep).reverse()) out += line({ type: 'after', callId: ended.callId, endTime: Math.max(ended.startTime, time) });
    const key = stepKey(data.step_id);
    const reserved = this.reservedCalls.get(key);
    if (reserved !== undefined) this.reservedCalls.delete(key);
    const callId = reserved ?? this.nextCall();
    this.remember(key, callId);
    open.push({ stepId: data.step_id, callId, startTime: time });
    const params: Record<string, unknown> = data.data ?? {};
    const parentId = parentStep === undefined ? undefined : this.callOf(stepKey(parentStep));
    return out + this.before(callId, time, 'Test', 'test.step', data.name, params, undefined, undefined, parentId);
  }

  /** A zero-length input action (the page's own click, key or scroll). */
  private input(context: EventContext, time: number, method: string, title: string, params: Record<string, unknown>, at?: { x: number; y: number }): string {
    const callId = this.nextCall();
    let out = this.before(callId, time, 'Input', method, title, params, tabOf(context), context.caused_by);
    if (at !== undefined) out += line({ type: 'input', callId, point: at });
    return out + line({ type: 'after', callId, endTime: time });
  }

  private onNavigation(ts: number, data: PageNavigationData): string {
    const tab = tabOf(data);
    // A tab's own document only; an iframe's navigation is part of the page's.
    if (tab === undefined || data.target_type !== 'page' || data.frame_id !== data.target_id || data.parent_frame_id !== undefined) return '';
    const time = traceTime(ts);
    let out = '';
    const previous = this.openNavigations.get(tab);
    if (previous !== undefined) out += line({ type: 'after', callId: previous.callId, endTime: time });
    const callId = this.nextCall();
    this.openNavigations.set(tab, { callId, startTime: time, loaderId: str(data.loader_id) });
    out += this.before(callId, time, 'Navigation', 'navigate', `navigate to ${str(data.url)}`, { url: data.url }, tab, data.caused_by);
    out += line({ type: 'event', time, class: 'Frame', method: 'navigated', params: { url: data.url, name: '', newDocument: true }, pageId: tab });
    return out;
  }

  private onLoad(type: 'page_dom_content_loaded' | 'page_load', ts: number, data: PageTimingData): string {
    const tab = tabOf(data);
    if (tab === undefined || data.target_type !== 'page' || (data.frame_id !== undefined && data.frame_id !== data.target_id)) return '';
    const time = traceTime(ts);
    const state = type === 'page_load' ? 'load' : 'domcontentloaded';
    let out = line({ type: 'event', time, class: 'Frame', method: 'loadstate', params: { add: state }, pageId: tab });
    const open = this.openNavigations.get(tab);
    if (open === undefined) return out;
    out += line({ type: 'log', callId: open.callId, time, message: `${state} event fired` });
    if (type === 'page_load' && (data.loader_id === undefined || data.loader_id === open.loaderId)) {
      this.openNavigations.delete(tab);
      out += line({ type: 'after', callId: open.callId, endTime: time });
    }
    return out;
  }

  private before(
    callId: string,
    time: number,
    klass: string,
    method: string,
    title: string,
    params: Record<string, unknown>,
    pageId: string | undefined,
    causedBy: unknown,
    parentId?: string,
  ): string {
    const parent = parentId ?? (typeof causedBy === 'string' ? this.callOf(causedBy) : undefined);
    const before: TraceLine = {
      type: 'before',
      callId,
      stepId: callId,
      startTime: time,
      class: klass,
      method,
      title: title.replace(/[{}]/g, ''),
      params: defined(params),
    };
    if (pageId !== undefined) before.pageId = pageId;
    if (parent !== undefined) before.parentId = parent;
    return line(before);
  }

  // ---- console, errors and effects ---------------------------------------------------------------

  private console(ts: number, data: ConsoleLogData | ConsoleErrorData, level: string): string {
    const text = str(data.text);
    const args = Array.isArray(data.args) ? data.args.map((arg) => ({ preview: str(arg), value: str(arg) })) : [{ preview: text, value: text }];
    const top = topFrame(data.stack_trace);
    const time = traceTime(ts);
    let out = line({
      type: 'console',
      time,
      pageId: tabOf(data),
      messageType: level === 'warn' ? 'warning' : level,
      text,
      args,
      location: { url: top?.url ?? str(data.url), lineNumber: (top?.lineNumber ?? 0) + 1, columnNumber: (top?.columnNumber ?? 0) + 1 },
    });
    out += this.effect(data, time, `console.${level}: ${text}`);
    return out;
  }

  private pageError(ts: number, data: ConsoleErrorData): string {
    const text = str(data.text);
    const frames = stackFrames(data.stack_trace);
    if (frames.length === 0 && typeof data.source_url === 'string')
      frames.push({ file: data.source_url, line: num(data.line) + 1, column: num(data.column) + 1 });
    const { name, message } = splitErrorText(text);
    const stack = [
      `${name}: ${message}`,
      ...frames.map((f) => `    at ${f.function ? `${f.function} (${f.file}:${f.line}:${f.column})` : `${f.file}:${f.line}:${f.column}`}`),
    ].join('\n');
    const time = traceTime(ts);
    this.addError(ts, text, frames);
    return (
      line({ type: 'event', time, class: 'Page', method: 'pageError', params: { error: { error: { name, message, stack } } }, pageId: tabOf(data) }) +
      this.effect(data, time, `page error: ${text}`)
    );
  }

  /** A crash or hang: an error, and a line in the console (where the viewer shows page errors). */
  private failure(ts: number, context: EventContext | undefined, message: string): string {
    const time = traceTime(ts);
    this.addError(ts, message);
    return (
      line({
        type: 'event',
        time,
        class: 'Page',
        method: 'pageError',
        params: { error: { error: { name: 'Error', message, stack: message } } },
        pageId: tabOf(context),
      }) + this.effect(context, time, message)
    );
  }

  /** An effect of an action (`caused_by`) as a line of the action's log. */
  private effect(context: EventContext | undefined, time: number, message: string): string {
    const actionId = context?.caused_by;
    if (typeof actionId !== 'string') return '';
    const callId = this.actionCalls.get(actionId);
    if (callId !== undefined) return line({ type: 'log', callId, time, message });
    let waiting = this.pendingLog.get(actionId);
    if (waiting === undefined) {
      if (this.pendingLog.size >= PENDING_ACTIONS) this.pendingLog.delete(this.pendingLog.keys().next().value!);
      waiting = [];
      this.pendingLog.set(actionId, waiting);
    }
    if (waiting.length < PENDING_LOG_PER_ACTION) waiting.push({ time, message });
    return '';
  }

  private flushPending(actionId: string, callId: string): string {
    const waiting = this.pendingLog.get(actionId);
    if (waiting === undefined) return '';
    this.pendingLog.delete(actionId);
    return waiting.map((entry) => line({ type: 'log', callId, time: entry.time, message: entry.message })).join('');
  }

  /** The call id of an action, reserved for it when its event has not come yet. */
  private callOf(actionId: string): string {
    let callId = this.actionCalls.get(actionId) ?? this.reservedCalls.get(actionId);
    if (callId === undefined) {
      callId = this.nextCall();
      if (this.reservedCalls.size >= PENDING_ACTIONS) this.reservedCalls.delete(this.reservedCalls.keys().next().value!);
      this.reservedCalls.set(actionId, callId);
    }
    return callId;
  }

  private remember(actionId: string, callId: string): void {
    // Bounded: effects come soon after their action.
    if (this.actionCalls.size >= PENDING_ACTIONS * 10) this.actionCalls.delete(this.actionCalls.keys().next().value!);
    this.actionCalls.set(actionId, callId);
  }

  private addError(ts: number, message: string, stack?: TraceError['stack']): void {
    if (this.errors.length >= this.maxErrors) {
      this.droppedErrors++;
      return;
    }
    this.errors.push(stack !== undefined && stack.length > 0 ? { ts, message, stack } : { ts, message });
  }

  private ensurePage(pageId: string, ts: number): string {
    if (this.pages.has(pageId)) return '';
    this.pages.add(pageId);
    return line({ type: 'event', time: traceTime(ts), class: 'BrowserContext', method: 'page', params: { pageId } });
  }

  private nextCall(): string {
    return `call@${++this.calls}`;
  }
}

// ---- small helpers -----------------------------------------------------------------------------

/** A step's key among the action ids (call ids are reserved and remembered by key). */
function stepKey(stepId: string): string {
  return `step:${stepId}`;
}

function line(value: TraceLine): string {
  return `${JSON.stringify(value)}\n`;
}

/** The tab an event belongs to: its page target (other targets' events have no tab here). */
function tabOf(context: EventContext | undefined): string | undefined {
  return context !== undefined && (context.target_type === 'page' || context.target_type === undefined) ? context.target_id : undefined;
}

function point(data: { x?: number; y?: number }): { x: number; y: number } | undefined {
  return typeof data.x === 'number' && typeof data.y === 'number' ? { x: data.x, y: data.y } : undefined;
}

function str(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return value === undefined || value === null ? '' : JSON.stringify(value);
}

function num(value: unknown): number {
  return typeof value === 'number' ? value : 0;
}

function defined(params: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in params) if (params[key] !== undefined && params[key] !== '') out[key] = params[key];
  return out;
}

/** A short description of a control event's input shape (never typed characters: only their count). */
function describeInput(data: InputFields): string {
  const parts: string[] = [];
  if (typeof data.event_type === 'string') parts.push(data.event_type);
  if (typeof data.x === 'number' && typeof data.y === 'number') parts.push(`at ${data.x},${data.y}`);
  if (typeof data.key === 'string') parts.push(data.key);
  if (typeof data.text_length === 'number') parts.push(`${data.text_length} chars`);
  if (typeof data.url === 'string') parts.push(data.url);
  return parts.length > 0 ? ` ${parts.join(' ')}` : '';
}

function topFrame(stack: StackTrace | undefined): StackTrace['callFrames'][number] | undefined {
  return stack?.callFrames[0];
}

/** CDP's 0-based frames → the trace's 1-based ones. */
function stackFrames(stack: StackTrace | undefined): NonNullable<TraceError['stack']> {
  const frames: NonNullable<TraceError['stack']> = [];
  for (let s: StackTrace | undefined = stack; s !== undefined; s = s.parent)
    for (const f of s.callFrames) frames.push({ file: f.url, line: f.lineNumber + 1, column: f.columnNumber + 1, function: f.functionName || undefined });
  return frames;
}

/** `Uncaught TypeError: x is not a function` → name TypeError, message `x is not a function`. */
function splitErrorText(text: string): { name: string; message: string } {
  const match = /^(?:Uncaught )?(?:\(in promise\) )?([A-Z][A-Za-z]*(?:Error|Exception)): ([\s\S]*)$/.exec(text);
  return match !== null ? { name: match[1]!, message: match[2]! } : { name: 'Error', message: text.replace(/^Uncaught /, '') };
}
