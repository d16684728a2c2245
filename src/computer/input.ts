// Mouse and keyboard of one tab over CDP Input.*: trusted pointer, mouse, click, wheel and key
// events (docs/chromium.md "Input"). Keeps what a real device would: the pointer position, the
// buttons held, the modifiers held.

import type { Protocol } from 'devtools-protocol';
import type { IgnoredFailures } from '../browser/cdp-errors.ts';
import type { MouseButton } from './batch-schema.ts';
import { MODIFIER_BIT, type KeyDefinition, type KeyPress } from './keysyms.ts';
import type { Point } from './motion.ts';
import type { InputTarget } from './targets.ts';

const BUTTON_BIT: Record<MouseButton, number> = { left: 1, right: 2, middle: 4, back: 8, forward: 16 };
const COMMAND_MODIFIERS = MODIFIER_BIT.alt | MODIFIER_BIT.ctrl | MODIFIER_BIT.meta;

/** What the page believes about the pointer; kept per tab across batches. */
export interface PointerState {
  x: number;
  y: number;
  /** Bitmask of the buttons held (click_type `down` leaves one held). */
  buttons: number;
}

export class TabInput {
  /** Modifier bits currently held. */
  private modifiers = 0;

  constructor(
    readonly target: InputTarget,
    readonly pointer: PointerState,
    /** The agent's count of best-effort failures. */
    private readonly failures: IgnoredFailures,
  ) {}

  get position(): Point {
    return { x: this.pointer.x, y: this.pointer.y };
  }

  async moveTo(point: Point): Promise<void> {
    await this.mouse('mouseMoved', point, this.heldButton(), 0);
    this.pointer.x = point.x;
    this.pointer.y = point.y;
  }

  async press(button: MouseButton, clickCount: number): Promise<void> {
    this.pointer.buttons |= BUTTON_BIT[button];
    await this.mouse('mousePressed', this.position, button, clickCount);
  }

  async release(button: MouseButton, clickCount: number): Promise<void> {
    this.pointer.buttons &= ~BUTTON_BIT[button];
    await this.mouse('mouseReleased', this.position, button, clickCount);
  }

  isHeld(button: MouseButton): boolean {
    return (this.pointer.buttons & BUTTON_BIT[button]) !== 0;
  }

  /** One wheel notch; deltas in CSS px. */
  async wheel(point: Point, deltaX: number, deltaY: number): Promise<void> {
    await this.target.send('Input.dispatchMouseEvent', {
      type: 'mouseWheel',
      x: point.x,
      y: point.y,
      deltaX,
      deltaY,
      modifiers: this.modifiers,
      buttons: this.pointer.buttons,
    });
  }

  /**
   * Hold modifier keys (real keydown, and the modifier bits on every event) while `work` runs,
   * then release them in reverse order, also when `work` fails. Keys already held are not
   * pressed again.
   */
  async withModifiers<T>(keys: readonly KeyDefinition[], work: () => Promise<T>): Promise<T> {
    const pressed: KeyDefinition[] = [];
    try {
      for (const key of keys) {
        const bit = key.modifier ? MODIFIER_BIT[key.modifier] : 0;
        if (bit === 0 || (this.modifiers & bit) !== 0) continue;
        this.modifiers |= bit;
        pressed.push(key);
        await this.key('rawKeyDown', { def: key, shifted: false });
      }
      return await work();
    } finally {
      for (const key of pressed.reverse()) {
        this.modifiers &= ~MODIFIER_BIT[key.modifier!];
        // Best effort: the tab may be gone, and the original failure is what matters.
        await this.failures.mayFail(this.key('keyUp', { def: key, shifted: false }));
      }
    }
  }

  /**
   * Key down: with its text (keydown, keypress, input) unless a command modifier is held, as a
   * keyboard does (ctrl+a selects instead of typing "a").
   */
  async keyDown(press: KeyPress): Promise<void> {
    const typesText = press.def.text !== undefined && (this.modifiers & COMMAND_MODIFIERS) === 0;
    await this.key(typesText ? 'keyDown' : 'rawKeyDown', press);
  }

  async keyUp(press: KeyPress): Promise<void> {
    await this.key('keyUp', press);
  }

  private async key(type: Protocol.Input.DispatchKeyEventRequest['type'], press: KeyPress): Promise<void> {
    const { def } = press;
    const shift = press.shifted || (this.modifiers & MODIFIER_BIT.shift) !== 0;
    const key = shift && def.shiftKey !== undefined ? def.shiftKey : def.key;
    const params: Protocol.Input.DispatchKeyEventRequest = {
      type,
      key,
      modifiers: this.modifiers | (press.shifted ? MODIFIER_BIT.shift : 0),
    };
    if (def.code !== '') params.code = def.code;
    if (def.keyCode !== 0) {
      params.windowsVirtualKeyCode = def.keyCode;
      params.nativeVirtualKeyCode = def.keyCode;
    }
    if (def.location !== undefined) params.location = def.location;
    if (def.location === 3) params.isKeypad = true;
    if (type === 'keyDown' && def.text !== undefined) {
      params.text = shift && def.shiftKey !== undefined ? def.shiftKey : def.text;
      params.unmodifiedText = def.text;
    }
    await this.target.send('Input.dispatchKeyEvent', params);
  }

  private heldButton(): MouseButton | 'none' {
    for (const [button, bit] of Object.entries(BUTTON_BIT) as Array<[MouseButton, number]>) {
      if ((this.pointer.buttons & bit) !== 0) return button;
    }
    return 'none';
  }

  private async mouse(type: 'mouseMoved' | 'mousePressed' | 'mouseReleased', point: Point, button: MouseButton | 'none', clickCount: number): Promise<void> {
    await this.target.send('Input.dispatchMouseEvent', {
      type,
      x: point.x,
      y: point.y,
      button,
      buttons: this.pointer.buttons,
      clickCount,
      modifiers: this.modifiers,
    });
  }
}
