// computer_action (docs/events.md "computer_action"): each action of a computer batch as its own
// control event, in the same shape rules as cdp_command: coordinates, buttons and counts, the
// names of keys that command the page, never typed characters.

import type { InputShape } from '../../injected/schema.ts';
import type { Action } from '../computer/batch-schema.ts';
import type { ActionObserver } from '../computer/executor.ts';
import { codePoints } from '../cdp-proxy/command-shape.ts';
import type { ControlRecorder } from './control-recorder.ts';

/** X keysym names (and common aliases) of keys that command the page; any other key counts as typed text. */
const COMMAND_KEYSYMS = new Set(
  [
    'return',
    'enter',
    'kp_enter',
    'tab',
    'iso_left_tab',
    'escape',
    'esc',
    'backspace',
    'delete',
    'insert',
    'up',
    'down',
    'left',
    'right',
    'home',
    'end',
    'page_up',
    'page_down',
    'prior',
    'next',
    'shift',
    'shift_l',
    'shift_r',
    'ctrl',
    'control',
    'control_l',
    'control_r',
    'alt',
    'alt_l',
    'alt_r',
    'meta',
    'super',
    'super_l',
    'super_r',
    'caps_lock',
    'menu',
  ].concat(Array.from({ length: 24 }, (_, i) => `f${i + 1}`)),
);

/** Actions that open a caused_by window (the ones that can make the page do something). */
const OPENING = new Set<Action['type']>(['click_mouse', 'type_text', 'press_key', 'scroll', 'drag_mouse']);

export function computerActionShape(action: Action): InputShape {
  switch (action.type) {
    case 'click_mouse':
      return {
        x: action.click_mouse.x,
        y: action.click_mouse.y,
        button: action.click_mouse.button ?? 'left',
        click_count: action.click_mouse.num_clicks ?? 1,
      };
    case 'move_mouse':
      return { x: action.move_mouse.x, y: action.move_mouse.y };
    case 'scroll':
      return { x: action.scroll.x, y: action.scroll.y, delta_x: action.scroll.delta_x ?? 0, delta_y: action.scroll.delta_y ?? 0 };
    case 'drag_mouse': {
      const last = action.drag_mouse.path.at(-1);
      return last === undefined ? {} : { x: last[0], y: last[1], button: action.drag_mouse.button ?? 'left' };
    }
    case 'type_text':
      return { text_length: codePoints(action.type_text.text) };
    case 'press_key': {
      const keys = action.press_key.keys;
      // A combo (ctrl+a) commands the page when every part does, or a modifier other than shift is held.
      const commanding = keys.every((combo) => {
        const parts = combo.toLowerCase().split('+');
        return parts.every((p) => COMMAND_KEYSYMS.has(p)) || parts.slice(0, -1).some((p) => p !== 'shift' && COMMAND_KEYSYMS.has(p));
      });
      return commanding ? { key: keys.join(' ') } : { text_length: keys.length };
    }
    case 'set_cursor':
    case 'sleep':
      return {};
  }
}

export function computerActionObserver(recorder: ControlRecorder): ActionObserver {
  return {
    begin(action, index, targetId, requestId) {
      // The batch's step: the one its caller had marked when the batch was asked for (docs/events.md "Steps").
      const start = recorder.begin(targetId, OPENING.has(action.type), recorder.stepOfRequest(requestId));
      if (start === undefined) return undefined;
      return (error) =>
        recorder.computerAction(start, {
          action: action.type,
          index,
          request_id: requestId ?? '',
          ...computerActionShape(action),
          outcome: error === undefined ? 'ok' : 'error',
          ...(error === undefined ? {} : { error }),
        });
    },
  };
}
