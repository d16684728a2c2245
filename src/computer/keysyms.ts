// X keysym names (as xdotool takes them) → the DOM key values Chromium's Input.dispatchKeyEvent
// needs: `key`, `code`, the Windows virtual key code, and the text a key types. The layout is US
// QWERTY. Combos (`ctrl+a`, `Ctrl+Shift+Tab`) are parsed here too; pure data and parsing, no CDP.

/** Modifier bits of Input.dispatchKeyEvent / dispatchMouseEvent `modifiers`. */
export const MODIFIER_BIT = { alt: 1, ctrl: 2, meta: 4, shift: 8 } as const;
export type Modifier = keyof typeof MODIFIER_BIT;

/** One physical key as the DOM sees it. */
export interface KeyDefinition {
  /** KeyboardEvent.key, unshifted. */
  key: string;
  /** KeyboardEvent.code. */
  code: string;
  /** windowsVirtualKeyCode (KeyboardEvent.keyCode). */
  keyCode: number;
  /** Text typed without Shift; absent for keys that type nothing. */
  text?: string;
  /** key and text with Shift held (printable keys only). */
  shiftKey?: string;
  /** KeyboardEvent.location: 1 left, 2 right, 3 numpad. */
  location?: number;
  /** Set on modifier keys. */
  modifier?: Modifier;
}

/** A key to press, plus whether it needs Shift (`A`, `exclam`). */
export interface KeyPress {
  def: KeyDefinition;
  shifted: boolean;
}

/** A parsed combo: modifiers pressed in order, then the main key (absent for "shift" alone). */
export interface KeyCombo {
  modifiers: KeyDefinition[];
  key?: KeyPress;
}

function printable(code: string, keyCode: number, key: string, shiftKey: string): KeyDefinition {
  return { key, code, keyCode, text: key, shiftKey };
}

// The punctuation keys of a US layout: code, key code, character unshifted and shifted.
const PUNCTUATION: [string, number, string, string][] = [
  ['Backquote', 192, '`', '~'],
  ['Minus', 189, '-', '_'],
  ['Equal', 187, '=', '+'],
  ['BracketLeft', 219, '[', '{'],
  ['BracketRight', 221, ']', '}'],
  ['Backslash', 220, '\\', '|'],
  ['Semicolon', 186, ';', ':'],
  ['Quote', 222, "'", '"'],
  ['Comma', 188, ',', '<'],
  ['Period', 190, '.', '>'],
  ['Slash', 191, '/', '?'],
];

// Printable keys of a US layout, by unshifted character.
const PRINTABLE: KeyDefinition[] = [
  ...'abcdefghijklmnopqrstuvwxyz'.split('').map((ch) => printable(`Key${ch.toUpperCase()}`, ch.toUpperCase().charCodeAt(0), ch, ch.toUpperCase())),
  ...'0123456789'.split('').map((d, i) => printable(`Digit${d}`, 48 + i, d, ')!@#$%^&*('[i]!)),
  printable('Space', 32, ' ', ' '),
  ...PUNCTUATION.map(([code, keyCode, key, shiftKey]) => printable(code, keyCode, key, shiftKey)),
];

/** Character → the key that types it, for every printable ASCII character. */
const BY_CHAR = new Map<string, KeyPress>();
for (const def of PRINTABLE) {
  BY_CHAR.set(def.key, { def, shifted: false });
  if (def.shiftKey !== def.key) BY_CHAR.set(def.shiftKey!, { def, shifted: true });
}

function special(key: string, code: string, keyCode: number, extra: Partial<KeyDefinition> = {}): KeyDefinition {
  return { key, code, keyCode, ...extra };
}

const SHIFT_L = special('Shift', 'ShiftLeft', 16, { location: 1, modifier: 'shift' });
const CONTROL_L = special('Control', 'ControlLeft', 17, { location: 1, modifier: 'ctrl' });
const ALT_L = special('Alt', 'AltLeft', 18, { location: 1, modifier: 'alt' });
const META_L = special('Meta', 'MetaLeft', 91, { location: 1, modifier: 'meta' });

/** Named keysyms that are not single characters. Looked up exactly, then case-insensitively. */
const NAMED = new Map<string, KeyPress>();
function name(names: string[], def: KeyDefinition, shifted = false): void {
  for (const n of names) NAMED.set(n, { def, shifted });
}

name(['Return', 'Enter'], special('Enter', 'Enter', 13, { text: '\r' }));
name(['KP_Enter'], special('Enter', 'NumpadEnter', 13, { text: '\r', location: 3 }));
name(['Tab'], special('Tab', 'Tab', 9));
name(['ISO_Left_Tab'], special('Tab', 'Tab', 9), true);
name(['BackSpace'], special('Backspace', 'Backspace', 8));
name(['Escape', 'Esc'], special('Escape', 'Escape', 27));
name(['Delete', 'Del'], special('Delete', 'Delete', 46));
name(['Insert'], special('Insert', 'Insert', 45));
name(['Home'], special('Home', 'Home', 36));
name(['End'], special('End', 'End', 35));
name(['Page_Up', 'Prior'], special('PageUp', 'PageUp', 33));
name(['Page_Down', 'Next'], special('PageDown', 'PageDown', 34));
name(['Left'], special('ArrowLeft', 'ArrowLeft', 37));
name(['Up'], special('ArrowUp', 'ArrowUp', 38));
name(['Right'], special('ArrowRight', 'ArrowRight', 39));
name(['Down'], special('ArrowDown', 'ArrowDown', 40));
name(['Caps_Lock'], special('CapsLock', 'CapsLock', 20));
name(['Num_Lock'], special('NumLock', 'NumLock', 144));
name(['Scroll_Lock'], special('ScrollLock', 'ScrollLock', 145));
name(['Pause'], special('Pause', 'Pause', 19));
name(['Print'], special('PrintScreen', 'PrintScreen', 44));
name(['Menu'], special('ContextMenu', 'ContextMenu', 93));
for (let n = 1; n <= 24; n++) name([`F${n}`], special(`F${n}`, `F${n}`, 111 + n));
for (let d = 0; d <= 9; d++) name([`KP_${d}`], special(String(d), `Numpad${d}`, 96 + d, { text: String(d), location: 3 }));
name(['KP_Add'], special('+', 'NumpadAdd', 107, { text: '+', location: 3 }));
name(['KP_Subtract'], special('-', 'NumpadSubtract', 109, { text: '-', location: 3 }));
name(['KP_Multiply'], special('*', 'NumpadMultiply', 106, { text: '*', location: 3 }));
name(['KP_Divide'], special('/', 'NumpadDivide', 111, { text: '/', location: 3 }));
name(['KP_Decimal'], special('.', 'NumpadDecimal', 110, { text: '.', location: 3 }));
name(['Shift', 'Shift_L'], SHIFT_L);
name(['Shift_R'], special('Shift', 'ShiftRight', 16, { location: 2, modifier: 'shift' }));
name(['Control', 'Control_L', 'Ctrl'], CONTROL_L);
name(['Control_R'], special('Control', 'ControlRight', 17, { location: 2, modifier: 'ctrl' }));
name(['Alt', 'Alt_L'], ALT_L);
name(['Alt_R'], special('Alt', 'AltRight', 18, { location: 2, modifier: 'alt' }));
name(['Meta', 'Meta_L', 'Super', 'Super_L'], META_L);
name(['Meta_R', 'Super_R'], special('Meta', 'MetaRight', 92, { location: 2, modifier: 'meta' }));

// X keysym names of the printable ASCII characters.
const CHAR_NAMES: Record<string, string> = {
  space: ' ',
  exclam: '!',
  quotedbl: '"',
  numbersign: '#',
  dollar: '$',
  percent: '%',
  ampersand: '&',
  apostrophe: "'",
  quoteright: "'",
  parenleft: '(',
  parenright: ')',
  asterisk: '*',
  plus: '+',
  comma: ',',
  minus: '-',
  period: '.',
  slash: '/',
  colon: ':',
  semicolon: ';',
  less: '<',
  equal: '=',
  greater: '>',
  question: '?',
  at: '@',
  bracketleft: '[',
  backslash: '\\',
  bracketright: ']',
  asciicircum: '^',
  underscore: '_',
  grave: '`',
  quoteleft: '`',
  braceleft: '{',
  bar: '|',
  braceright: '}',
  asciitilde: '~',
};
for (const [n, ch] of Object.entries(CHAR_NAMES)) NAMED.set(n, BY_CHAR.get(ch)!);

const NAMED_LOWER = new Map<string, KeyPress>();
for (const [n, press] of NAMED) if (!NAMED_LOWER.has(n.toLowerCase())) NAMED_LOWER.set(n.toLowerCase(), press);

/** `hold_keys` names (docs/computer-batch.md), case-insensitive. */
const HOLD_KEY_NAMES: Record<string, KeyDefinition> = {
  shift: SHIFT_L,
  ctrl: CONTROL_L,
  control: CONTROL_L,
  alt: ALT_L,
  meta: META_L,
  super: META_L,
};

/** A `hold_keys` entry → its modifier key; undefined when not a modifier name. */
export function holdKey(nameText: string): KeyDefinition | undefined {
  return HOLD_KEY_NAMES[nameText.toLowerCase()];
}

/**
 * One keysym (`Return`, `a`, `A`, `F5`, `exclam`, `!`) → the key to press. Single characters
 * are case-sensitive (`A` is Shift+a, as with xdotool); longer names are matched exactly first,
 * then case-insensitively (`return`, `page_up`).
 */
export function lookupKeysym(keysym: string): KeyPress | undefined {
  if (Array.from(keysym).length === 1) return BY_CHAR.get(keysym);
  return NAMED.get(keysym) ?? NAMED_LOWER.get(keysym.toLowerCase());
}

/**
 * Parse `ctrl+a`, `Ctrl+Shift+Tab`, `Return`, `+`, `ctrl++`. Every part but the last must be a
 * modifier. Returns undefined when a part is unknown or a non-modifier comes before the last part.
 */
export function parseCombo(combo: string): KeyCombo | undefined {
  if (combo === '') return undefined;
  let parts = combo.split('+');
  // A trailing empty part is the plus key itself: `+` alone, or `ctrl++`.
  if (parts.length > 1 && parts[parts.length - 1] === '' && parts[parts.length - 2] === '') parts = [...parts.slice(0, -2), '+'];
  else if (combo === '+') parts = ['+'];
  if (parts.some((p) => p === '')) return undefined;
  const presses: KeyPress[] = [];
  for (const part of parts) {
    const press = holdKeyPress(part) ?? lookupKeysym(part);
    if (!press) return undefined;
    presses.push(press);
  }
  const last = presses[presses.length - 1]!;
  const leading = presses.slice(0, -1);
  if (leading.some((p) => !p.def.modifier)) return undefined;
  const modifiers = leading.map((p) => p.def);
  if (last.def.modifier) return { modifiers: [...modifiers, last.def] };
  return { modifiers, key: last };
}

function holdKeyPress(part: string): KeyPress | undefined {
  const def = holdKey(part);
  return def ? { def, shifted: false } : undefined;
}

/** The key for one typed character: a known key, or a key-less character (é, 日, emoji). */
export function keyForCharacter(ch: string): KeyPress {
  if (ch === '\n' || ch === '\r') return NAMED.get('Return')!;
  if (ch === '\t') return NAMED.get('Tab')!;
  return BY_CHAR.get(ch) ?? { def: { key: ch, code: '', keyCode: 0, text: ch }, shifted: false };
}

/** The modifier bitmask of a set of modifier keys. */
export function modifierMask(keys: Iterable<KeyDefinition>): number {
  let mask = 0;
  for (const key of keys) if (key.modifier) mask |= MODIFIER_BIT[key.modifier];
  return mask;
}
