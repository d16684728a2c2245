import { describe, expect, it } from 'vitest';
import type { EventContext, EventDataByType, EventType, NetworkRequestData, TelemetryEvent } from '../../injected/schema.ts';
import { shapeCommand } from '../../src/cdp-proxy/command-shape.ts';
import { CauseLinker } from '../../src/control/cause-linker.ts';
import { contextOf, eventOf } from '../../src/event-data.ts';

const ev = <T extends EventType>(type: T, data: EventDataByType[T]): TelemetryEvent => eventOf<T>({ ts: 0, type, source: { kind: 'cdp' }, data });
const log = (context: EventContext) => ev('console_log', { level: 'log', text: '', args: [], ...context });
const error = (context: EventContext) => ev('console_error', { text: '', ...context });
const settle = (context: EventContext) => ev('page_navigation_settled', context);
const request = (context: EventContext, requestId: string, more: Pick<NetworkRequestData, 'resource_type' | 'initiator_url'> = {}) =>
  ev('network_request', { request_id: requestId, method: 'GET', document_url: '', headers: {}, initiator_type: 'other', ...context, ...more });
const response = (context: EventContext, requestId: string) =>
  ev('network_response', { request_id: requestId, status: 200, status_text: 'OK', headers: {}, mime_type: 'text/plain', ...context });
const causeOf = (event: TelemetryEvent) => contextOf(event)?.caused_by;

describe('CauseLinker', () => {
  it('stamps the tab events of an open window until the settle of a later navigation', () => {
    const linker = new CauseLinker();
    const before = log({ target_id: 'T', nav_seq: 1 });
    linker.link(before);
    expect(causeOf(before)).toBeUndefined();
    linker.open('T', 'act-1');
    const oldSettle = settle({ target_id: 'T', nav_seq: 1 });
    const script = request({ target_id: 'T', nav_seq: 1, url: 'http://x/app.js' }, 'r1', { resource_type: 'Script' });
    const other = error({ target_id: 'U', nav_seq: 1 });
    const newSettle = settle({ target_id: 'T', nav_seq: 2 });
    const after = error({ target_id: 'T', nav_seq: 2 });
    for (const e of [oldSettle, script, other, newSettle, after]) linker.link(e);
    // The settle of the navigation that was under way before the action does not close the window.
    expect([oldSettle, script, other, newSettle, after].map(causeOf)).toEqual(['act-1', 'act-1', undefined, 'act-1', undefined]);
    // The response of a request of the action, and a request started by its script (initiator chain), after the window closed.
    const scriptResponse = response({ target_id: 'T' }, 'r1');
    const chained = request({ target_id: 'T' }, 'r2', { initiator_url: 'http://x/app.js' });
    linker.link(scriptResponse);
    linker.link(chained);
    expect([causeOf(scriptResponse), causeOf(chained)]).toEqual(['act-1', 'act-1']);
    // The next action takes the window; the chain still wins for its script's requests.
    linker.open('T', 'act-2');
    const next = log({ target_id: 'T' });
    const chainedLater = request({ target_id: 'T' }, 'r3', { initiator_url: 'http://x/app.js' });
    linker.link(next);
    linker.link(chainedLater);
    expect([causeOf(next), causeOf(chainedLater)]).toEqual(['act-2', 'act-1']);
    // Control events are never stamped.
    const control = ev('cdp_command', { target_id: 'T', action_id: 'act-3', connection_id: 'conn-1', method: 'Page.reload', duration_ms: 1, outcome: 'ok' });
    linker.link(control);
    expect(causeOf(control)).toBeUndefined();
  });

  it('stamps a tab opened from the window by its opener', () => {
    const linker = new CauseLinker();
    linker.open('T', 'act-1');
    const opened = ev('page_tab_opened', { target_id: 'N', target_type: 'page', url: 'about:blank', title: '', opener_id: 'T' });
    linker.link(opened);
    expect(causeOf(opened)).toBe('act-1');
  });
});

describe('shapeCommand', () => {
  it('records one gesture per click and key, never the characters', () => {
    expect(shapeCommand('Input.dispatchMouseEvent', { type: 'mouseMoved', x: 1, y: 2 }, false)).toBeUndefined();
    expect(shapeCommand('Input.dispatchMouseEvent', { type: 'mouseReleased', x: 1, y: 2 }, false)).toBeUndefined();
    expect(shapeCommand('Input.dispatchMouseEvent', { type: 'mousePressed', x: 1.234, y: 2, button: 'left', clickCount: 1 }, false)).toEqual({
      method: 'Input.dispatchMouseEvent',
      opens: true,
      event_type: 'mousePressed',
      x: 1.23,
      y: 2,
      button: 'left',
      click_count: 1,
    });
    const typed = shapeCommand('Input.dispatchKeyEvent', { type: 'keyDown', key: 'p', text: 'p' }, false);
    expect(typed).toEqual({ method: 'Input.dispatchKeyEvent', opens: false, event_type: 'keyDown', text_length: 1 });
    expect(JSON.stringify(typed)).not.toContain('"p"');
    expect(shapeCommand('Input.dispatchKeyEvent', { type: 'keyUp', key: 'Enter' }, false)).toBeUndefined();
    expect(shapeCommand('Input.dispatchKeyEvent', { type: 'keyDown', key: 'Enter', text: '\r' }, false)).toMatchObject({ key: 'Enter', opens: true });
    expect(shapeCommand('Input.insertText', { text: 'pässwörd😀' }, false)).toEqual({ method: 'Input.insertText', opens: false, text_length: 9 });
  });

  it('keeps a navigation URL only when asked, and skips bookkeeping', () => {
    expect(shapeCommand('Page.navigate', { url: 'http://x/' }, false)).toEqual({ method: 'Page.navigate', opens: true });
    expect(shapeCommand('Page.navigate', { url: 'http://x/' }, true)).toEqual({ method: 'Page.navigate', opens: true, url: 'http://x/' });
    expect(shapeCommand('Runtime.evaluate', { expression: '1' }, true)).toBeUndefined();
    expect(shapeCommand('Page.enable', {}, true)).toBeUndefined();
    expect(shapeCommand('Emulation.setEmulatedMedia', { media: '', features: [] }, false)).toBeUndefined();
    expect(shapeCommand('Emulation.setEmulatedMedia', { media: 'print' }, false)).toMatchObject({ method: 'Emulation.setEmulatedMedia' });
  });
});
