import { describe, expect, it } from 'vitest';
import type { EventType, TelemetryEvent } from '../../injected/schema.ts';
import { shapeCommand } from '../../src/cdp-proxy/command-shape.ts';
import { CauseLinker } from '../../src/control/cause-linker.ts';

const ev = (type: EventType, data: Record<string, unknown>): TelemetryEvent => ({ ts: 0, type, source: { kind: 'cdp' }, data });
const causeOf = (event: TelemetryEvent) => (event.data as { caused_by?: string }).caused_by;

describe('CauseLinker', () => {
  it('stamps the tab events of an open window until the settle of a later navigation', () => {
    const linker = new CauseLinker();
    const before = ev('console_log', { target_id: 'T', nav_seq: 1 });
    linker.link(before);
    expect(causeOf(before)).toBeUndefined();
    linker.open('T', 'act-1');
    const oldSettle = ev('page_navigation_settled', { target_id: 'T', nav_seq: 1 });
    const request = ev('network_request', { target_id: 'T', nav_seq: 1, request_id: 'r1', resource_type: 'Script', url: 'http://x/app.js' });
    const other = ev('console_error', { target_id: 'U', nav_seq: 1 });
    const settle = ev('page_navigation_settled', { target_id: 'T', nav_seq: 2 });
    const after = ev('console_error', { target_id: 'T', nav_seq: 2 });
    for (const e of [oldSettle, request, other, settle, after]) linker.link(e);
    // The settle of the navigation that was under way before the action does not close the window.
    expect([oldSettle, request, other, settle, after].map(causeOf)).toEqual(['act-1', 'act-1', undefined, 'act-1', undefined]);
    // The response of a request of the action, and a request started by its script (initiator chain), after the window closed.
    const response = ev('network_response', { target_id: 'T', request_id: 'r1' });
    const chained = ev('network_request', { target_id: 'T', request_id: 'r2', initiator_url: 'http://x/app.js' });
    linker.link(response);
    linker.link(chained);
    expect([causeOf(response), causeOf(chained)]).toEqual(['act-1', 'act-1']);
    // The next action takes the window; the chain still wins for its script's requests.
    linker.open('T', 'act-2');
    const next = ev('console_log', { target_id: 'T' });
    const chainedLater = ev('network_request', { target_id: 'T', request_id: 'r3', initiator_url: 'http://x/app.js' });
    linker.link(next);
    linker.link(chainedLater);
    expect([causeOf(next), causeOf(chainedLater)]).toEqual(['act-2', 'act-1']);
    // Control events are never stamped.
    const control = ev('cdp_command', { target_id: 'T', action_id: 'act-3' });
    linker.link(control);
    expect(causeOf(control)).toBeUndefined();
  });

  it('stamps a tab opened from the window by its opener', () => {
    const linker = new CauseLinker();
    linker.open('T', 'act-1');
    const opened = ev('page_tab_opened', { target_id: 'N', opener_id: 'T' });
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
