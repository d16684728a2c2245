// Which commands of a proxied CDP client are recorded as cdp_command, and the shape recorded of
// each (docs/events.md "cdp_command"). Pure: a parsed command in, a record (or nothing) out.
//
// Recorded: the commands that drive the browser (input, navigation, history, reload, dialogs,
// file choosers, screenshots, downloads, tabs, emulation that changes what the page sees). Not
// recorded: what a client library sends for itself (enables, Runtime.evaluate and callFunctionOn
// for locators, DOM reads, target bookkeeping). One gesture is one record: of a mouse click only
// the press, of a key only its keyDown; moves, releases, keyUp and char are not recorded.

import type { InputShape } from '../../injected/schema.ts';

/** The recorded methods (docs/events.md "cdp_command" lists them). */
export const RECORDED_METHODS: ReadonlySet<string> = new Set([
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
  'Page.handleJavaScriptDialog',
  'Page.captureScreenshot',
  'Page.printToPDF',
  'Page.close',
  'Page.setDownloadBehavior',
  'Browser.setDownloadBehavior',
  'Browser.cancelDownload',
  'DOM.setFileInputFiles',
  'Target.createTarget',
  'Target.closeTarget',
  'Target.activateTarget',
  'Emulation.setDeviceMetricsOverride',
  'Emulation.setUserAgentOverride',
  'Emulation.setGeolocationOverride',
  'Emulation.setTimezoneOverride',
  'Emulation.setLocaleOverride',
  'Emulation.setEmulatedMedia',
  'Emulation.setTouchEmulationEnabled',
  'Emulation.setScriptExecutionDisabled',
  'Emulation.setCPUThrottlingRate',
  'Network.emulateNetworkConditions',
]);

/** Input event types that are not a gesture of their own (part of one that is recorded, or a hover). */
const UNRECORDED_INPUT_TYPES: ReadonlySet<string> = new Set(['mouseMoved', 'mouseReleased', 'keyUp', 'char', 'touchMove', 'touchEnd', 'dragEnter', 'dragOver']);

/** Keys that command the page: recorded by name. Every other key is recorded only as text_length. */
const COMMAND_KEYS: ReadonlySet<string> = new Set([
  'Enter',
  'Tab',
  'Escape',
  'Backspace',
  'Delete',
  'Insert',
  'ArrowUp',
  'ArrowDown',
  'ArrowLeft',
  'ArrowRight',
  'Home',
  'End',
  'PageUp',
  'PageDown',
  'Shift',
  'Control',
  'Alt',
  'Meta',
  'CapsLock',
  'ContextMenu',
  ...Array.from({ length: 24 }, (_, i) => `F${i + 1}`),
]);

/**
 * Methods whose record opens a caused_by window (with the input types that do). Answering a dialog
 * is one: the dialog's close and what the page does once it returns are its effects.
 */
const NAVIGATIONS: ReadonlySet<string> = new Set(['Page.navigate', 'Page.reload', 'Page.navigateToHistoryEntry', 'Page.handleJavaScriptDialog']);

export interface CommandRecord extends InputShape {
  method: string;
  /** Opens a caused_by window in its tab (docs/events.md "caused_by"). */
  opens: boolean;
  url?: string;
  format?: string;
}

/** The record of a command, or undefined when it is not recorded. `includeUrls`: keep a navigation's URL. */
export function shapeCommand(method: string, params: Record<string, unknown> | undefined, includeUrls: boolean): CommandRecord | undefined {
  if (!RECORDED_METHODS.has(method)) return undefined;
  const p = params ?? {};
  const record: CommandRecord = { method, opens: NAVIGATIONS.has(method) };
  switch (method) {
    case 'Input.dispatchMouseEvent':
    case 'Input.dispatchTouchEvent':
    case 'Input.dispatchDragEvent': {
      const type = str(p.type);
      if (type === undefined || UNRECORDED_INPUT_TYPES.has(type)) return undefined;
      record.event_type = type;
      setNumber(record, 'x', p.x);
      setNumber(record, 'y', p.y);
      if (Array.isArray(p.touchPoints) && p.touchPoints.length > 0) {
        const first = p.touchPoints[0] as Record<string, unknown>;
        setNumber(record, 'x', first.x);
        setNumber(record, 'y', first.y);
      }
      const button = str(p.button);
      if (button !== undefined && button !== 'none') record.button = button;
      setNumber(record, 'click_count', p.clickCount);
      setNumber(record, 'delta_x', p.deltaX);
      setNumber(record, 'delta_y', p.deltaY);
      setNumber(record, 'modifiers', p.modifiers);
      record.opens = type === 'mousePressed' || type === 'touchStart' || type === 'drop';
      return record;
    }
    case 'Input.dispatchKeyEvent': {
      const type = str(p.type);
      if (type === undefined || UNRECORDED_INPUT_TYPES.has(type)) return undefined;
      record.event_type = type;
      const key = str(p.key);
      if (key !== undefined && COMMAND_KEYS.has(key)) record.key = key;
      else {
        const text = str(p.text) ?? str(p.unmodifiedText);
        record.text_length = text === undefined ? 0 : codePoints(text);
      }
      setNumber(record, 'modifiers', p.modifiers);
      record.opens = key === 'Enter';
      return record;
    }
    case 'Input.insertText':
      record.text_length = codePoints(str(p.text) ?? '');
      return record;
    case 'Input.synthesizeTapGesture':
    case 'Input.synthesizeScrollGesture':
    case 'Input.synthesizePinchGesture':
      setNumber(record, 'x', p.x);
      setNumber(record, 'y', p.y);
      record.opens = method === 'Input.synthesizeTapGesture';
      return record;
    case 'Page.navigate':
    case 'Target.createTarget':
      if (includeUrls) {
        const url = str(p.url);
        if (url !== undefined) record.url = url;
      }
      return record;
    case 'Emulation.setEmulatedMedia': {
      // Client libraries send it with nothing to emulate for every new page: that changes nothing.
      const features = Array.isArray(p.features) ? (p.features as Array<{ value?: unknown }>) : [];
      if ((str(p.media) ?? '') === '' && features.every((f) => f.value === '' || f.value === undefined)) return undefined;
      return record;
    }
    case 'Page.captureScreenshot': {
      const format = str(p.format);
      record.format = format ?? 'png';
      return record;
    }
    default:
      return record;
  }
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function setNumber(record: CommandRecord, key: 'x' | 'y' | 'click_count' | 'delta_x' | 'delta_y' | 'modifiers', value: unknown): void {
  if (typeof value === 'number' && Number.isFinite(value)) record[key] = Math.round(value * 100) / 100;
}

/** Characters as a person counts them (code points; an emoji of several code points counts several). */
export function codePoints(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // A high surrogate and its low surrogate are one code point.
    if (c < 0xd800 || c > 0xdbff) n++;
  }
  return n;
}
