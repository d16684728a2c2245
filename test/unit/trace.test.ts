// The trace mapping (docs/export.md "Playwright trace") on synthetic events: control events in the
// official client's shapes (api_call) and the agent's (cdp_command, computer_action) with
// action_id and caused_by, dialogs, downloads and crashes, read by name.

import { describe, expect, it } from 'vitest';
import { TraceBuilder, errorLines, pngSize, resourceLine, TRACE_VERSION, contextOptionsLine } from '../../src/export/trace.ts';
import { buildEntry } from '../../src/export/har.ts';
import type { EventContext, EventDataByType, EventType, TelemetryEvent } from '../../injected/schema.ts';
import { eventOf } from '../../src/event-data.ts';

const TAB = 'TAB1';
const T0 = 1_800_000_000_000_000;
const ctx = { target_id: TAB, target_type: 'page', frame_id: TAB } satisfies EventContext;

function event<T extends EventType>(type: T, dtMs: number, data: EventDataByType[T]): TelemetryEvent {
  return eventOf<T>({ ts: T0 + dtMs * 1000, type, source: { kind: 'agent' }, data });
}

function lines(text: string): Array<Record<string, any>> {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, any>);
}

function run(events: TelemetryEvent[]): { lines: Array<Record<string, any>>; builder: TraceBuilder } {
  const builder = new TraceBuilder();
  let out = '';
  for (const e of events) out += builder.add(e);
  out += builder.end(T0 + 60_000_000);
  return { lines: lines(out), builder };
}

const befores = (all: Array<Record<string, any>>) => all.filter((l) => l.type === 'before');
const afterOf = (all: Array<Record<string, any>>, callId: string) => all.find((l) => l.type === 'after' && l.callId === callId);

describe('the trace mapping', () => {
  it('writes the computer batch as an api_call action with its actions under it', () => {
    const { lines: out } = run([
      event('api_call', 0, { action_id: 'a1', operation_id: 'batchComputerActions', request_id: 'r1', status: 204, duration_ms: 120, outcome: 'ok' }),
      event('computer_action', 5, {
        action_id: 'a2',
        request_id: 'r1',
        index: 0,
        action: 'click_mouse',
        x: 10,
        y: 20,
        button: 'left',
        duration_ms: 30,
        outcome: 'ok',
        ...ctx,
      }),
      event('computer_action', 40, {
        action_id: 'a3',
        request_id: 'r1',
        index: 1,
        action: 'type_text',
        text_length: 3,
        duration_ms: 50,
        outcome: 'ok',
        ...ctx,
      }),
    ]);
    const [call, click, type] = befores(out);
    expect(call).toMatchObject({ class: 'API', method: 'batchComputerActions', title: 'batchComputerActions → 204', startTime: T0 / 1000 });
    expect(afterOf(out, call!.callId)!.endTime).toBe(T0 / 1000 + 120);
    expect(click).toMatchObject({
      class: 'Computer',
      method: 'click_mouse',
      parentId: call!.callId,
      pageId: TAB,
      params: { x: 10, y: 20, button: 'left', index: 0 },
    });
    expect(out).toContainEqual({ type: 'input', callId: click!.callId, point: { x: 10, y: 20 } });
    expect(type).toMatchObject({ title: 'type_text 3 chars', parentId: call!.callId });
  });

  it('writes a cdp_command as an action with its outcome, and a failure as an error', () => {
    const { lines: out, builder } = run([
      event('cdp_command', 0, {
        action_id: 'c1',
        connection_id: 'k1',
        method: 'Input.dispatchMouseEvent',
        event_type: 'mousePressed',
        x: 5,
        y: 6,
        duration_ms: 2,
        outcome: 'ok',
        ...ctx,
      }),
      event('cdp_command', 10, {
        action_id: 'c2',
        connection_id: 'k1',
        method: 'Page.navigate',
        duration_ms: 3,
        outcome: 'error',
        error: 'Cannot navigate to invalid URL',
        ...ctx,
      }),
    ]);
    const [press, navigate] = befores(out);
    expect(press).toMatchObject({ class: 'CDP', method: 'Input.dispatchMouseEvent', title: 'Input.dispatchMouseEvent mousePressed at 5,6' });
    expect(afterOf(out, press!.callId)!.error).toBeUndefined();
    expect(afterOf(out, navigate!.callId)!.error).toEqual({ name: 'Error', message: 'Cannot navigate to invalid URL' });
    expect(builder.errors.map((e) => e.message)).toEqual(['Page.navigate: Cannot navigate to invalid URL']);
  });

  it('groups effects under their action: input and navigation as children, the rest in its log, even when they come first', () => {
    const { lines: out } = run([
      // The effect is recorded before the action's own event (an action is written when it ends).
      event('console_log', 1, { level: 'log', text: 'clicked', args: ['clicked'], caused_by: 'c1', ...ctx }),
      event('cdp_command', 0, { action_id: 'c1', connection_id: 'k1', method: 'Input.dispatchMouseEvent', duration_ms: 5, outcome: 'ok', ...ctx }),
      event('interaction_click', 2, { x: 1, y: 2, selector: '#b', tag: 'BUTTON', text: 'Go', caused_by: 'c1', ...ctx }),
      event('page_navigation', 3, { url: 'https://example.test/next', loader_id: 'L2', caused_by: 'c1', ...ctx }),
      event('network_loading_failed', 4, { request_id: 'q', error_text: 'net::ERR_FAILED', canceled: false, caused_by: 'c1', ...ctx }),
    ]);
    const [action, click, navigation] = befores(out);
    expect(click).toMatchObject({ class: 'Input', method: 'click', title: 'click #b', parentId: action!.callId });
    expect(navigation).toMatchObject({ class: 'Navigation', title: 'navigate to https://example.test/next', parentId: action!.callId });
    expect(out.filter((l) => l.type === 'log' && l.callId === action!.callId).map((l) => l.message)).toEqual(['console.log: clicked']);
    // The log line comes after the action's own line (the viewer drops a log of an unknown action).
    const logIndex = out.findIndex((l) => l.type === 'log');
    const actionIndex = out.findIndex((l) => l.type === 'before' && l.callId === action!.callId);
    expect(logIndex).toBeGreaterThan(actionIndex);
  });

  it('ends a navigation at its load and writes the page events', () => {
    const { lines: out } = run([
      event('page_navigation', 0, { url: 'https://example.test/', loader_id: 'L1', ...ctx }),
      event('page_dom_content_loaded', 20, { cdp_timestamp: 1, loader_id: 'L1', ...ctx }),
      event('page_load', 50, { cdp_timestamp: 2, loader_id: 'L1', ...ctx }),
    ]);
    const [navigation] = befores(out);
    expect(afterOf(out, navigation!.callId)!.endTime).toBe(T0 / 1000 + 50);
    expect(out).toContainEqual(expect.objectContaining({ type: 'event', class: 'BrowserContext', method: 'page', params: { pageId: TAB } }));
    expect(out.filter((l) => l.method === 'loadstate').map((l) => l.params.add)).toEqual(['domcontentloaded', 'load']);
  });

  it('writes console messages, and an uncaught error as a page error with its stack', () => {
    const stack = { callFrames: [{ functionName: 'boom', scriptId: '1', url: 'https://example.test/app.js', lineNumber: 9, columnNumber: 4 }] };
    const { lines: out, builder } = run([
      event('console_log', 0, { level: 'warning', text: 'careful', args: ['careful', '1'], stack_trace: stack, ...ctx }),
      event('console_error', 1, { level: 'error', text: 'logged', args: ['logged'], ...ctx }),
      event('console_error', 2, {
        text: 'Uncaught TypeError: x is not a function',
        line: 9,
        column: 4,
        source_url: 'https://example.test/app.js',
        stack_trace: stack,
        ...ctx,
      }),
    ]);
    const consoles = out.filter((l) => l.type === 'console');
    expect(consoles.map((l) => [l.messageType, l.text])).toEqual([
      ['warning', 'careful'],
      ['error', 'logged'],
    ]);
    expect(consoles[0]).toMatchObject({
      pageId: TAB,
      args: [{ preview: 'careful' }, { preview: '1' }],
      location: { url: 'https://example.test/app.js', lineNumber: 10, columnNumber: 5 },
    });
    const pageError = out.find((l) => l.method === 'pageError')!;
    expect(pageError.params.error.error).toEqual({
      name: 'TypeError',
      message: 'x is not a function',
      stack: 'TypeError: x is not a function\n    at boom (https://example.test/app.js:10:5)',
    });
    expect(builder.errors).toEqual([
      {
        ts: T0 + 2000,
        message: 'Uncaught TypeError: x is not a function',
        stack: [{ file: 'https://example.test/app.js', line: 10, column: 5, function: 'boom' }],
      },
    ]);
  });

  it('writes dialogs and downloads as actions from open to close, and crashes as errors', () => {
    const { lines: out, builder } = run([
      event('page_dialog_opened', 0, { dialog_type: 'confirm', message: 'Sure?', dialog_frame_id: TAB, has_browser_handler: false, ...ctx }),
      event('page_dialog_closed', 800, { accepted: true, closed_by: 'cdp_client', ...ctx }),
      event('network_download_started', 900, { guid: 'g', suggested_filename: 'a.pdf', url: 'https://example.test/a.pdf', ...ctx }),
      event('network_download_finished', 950, { guid: 'g', state: 'canceled', received_bytes: 10, total_bytes: 100, ...ctx }),
      event('page_crashed', 1000, { status: 'oom', ...ctx }),
    ]);
    const [dialog, download] = befores(out);
    expect(dialog).toMatchObject({ class: 'Dialog', title: 'confirm dialog: Sure?' });
    expect(afterOf(out, dialog!.callId)).toMatchObject({ endTime: T0 / 1000 + 800, result: { accepted: true } });
    expect(download).toMatchObject({ class: 'Download', title: 'download a.pdf' });
    expect(afterOf(out, download!.callId)!.error).toEqual({ name: 'Error', message: 'download canceled' });
    expect(builder.errors.map((e) => e.message)).toEqual(['page crashed (oom)']);
  });

  it('closes what never ended at the end of the trace', () => {
    const { lines: out } = run([event('page_navigation', 0, { url: 'https://example.test/', loader_id: 'L1', ...ctx })]);
    const [navigation] = befores(out);
    expect(afterOf(out, navigation!.callId)!.endTime).toBe(T0 / 1000 + 60_000);
  });

  it('places screenshots as screencast frames of the active tab', () => {
    const builder = new TraceBuilder();
    builder.add(event('page_navigation', 0, { url: 'https://example.test/', loader_id: 'L1', ...ctx }));
    expect(lines(builder.frame({ name: 'screenshot-7.png', ts: T0 + 5000, width: 800, height: 600 }))).toEqual([
      { type: 'screencast-frame', pageId: TAB, sha1: 'screenshot-7.png', width: 800, height: 600, timestamp: T0 / 1000 + 5 },
    ]);
  });

  it('wraps a HAR entry as a resource snapshot, its body in a resource file', () => {
    const entry = buildEntry(
      {
        ts: T0,
        type: 'network_request',
        source: { kind: 'cdp' },
        data: { request_id: 'q', method: 'GET', url: 'https://example.test/a.json', document_url: '', headers: {}, initiator_type: 'script' },
      },
      {
        kind: 'response',
        ts: T0 + 10_000,
        truncated: false,
        data: { request_id: 'q', status: 200, status_text: 'OK', headers: {}, mime_type: 'application/json', body: '{}', encoded_data_length: 10 },
      },
    );
    const [line] = lines(resourceLine(entry, TAB, 'body-12'));
    expect(line).toMatchObject({
      type: 'resource-snapshot',
      snapshot: { pageref: TAB, _monotonicTime: T0 / 1000, response: { status: 200, content: { _sha1: 'body-12' } } },
    });
    expect(line!.snapshot.response.content.text).toBeUndefined();
  });

  it('starts each file with the context options of the format version, and lists errors in a test-runner context', () => {
    const info = { sessionId: 's1', startTs: T0, title: 'browser session s1' };
    expect(lines(contextOptionsLine(info, 'library'))[0]).toMatchObject({
      version: TRACE_VERSION,
      type: 'context-options',
      origin: 'library',
      browserName: 'chromium',
      wallTime: T0 / 1000,
      monotonicTime: T0 / 1000,
    });
    expect(TRACE_VERSION).toBe(8);
    expect(lines(errorLines(info, [{ ts: T0, message: 'boom' }]))).toEqual([
      expect.objectContaining({ origin: 'testRunner' }),
      { type: 'error', message: 'boom' },
    ]);
  });

  it('reads a PNG size from its header', () => {
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAEElEQVR4nGP4z8DAwPCfAQAU+gH/o0e0jAAAAABJRU5ErkJggg==', 'base64');
    expect(pngSize(png)).toEqual({ width: 2, height: 1 });
    expect(pngSize(Buffer.from('not a png at all, not at all'))).toBeUndefined();
  });
});
