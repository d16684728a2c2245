import { describe, expect, it } from 'vitest';
import { holdKey, keyForCharacter, lookupKeysym, modifierMask, parseCombo } from '../../src/computer/keysyms.ts';

describe('lookupKeysym', () => {
  it.each([
    ['Return', 'Enter', 'Enter', 13],
    ['Tab', 'Tab', 'Tab', 9],
    ['BackSpace', 'Backspace', 'Backspace', 8],
    ['Escape', 'Escape', 'Escape', 27],
    ['Delete', 'Delete', 'Delete', 46],
    ['Home', 'Home', 'Home', 36],
    ['End', 'End', 'End', 35],
    ['Page_Up', 'PageUp', 'PageUp', 33],
    ['Page_Down', 'PageDown', 'PageDown', 34],
    ['Left', 'ArrowLeft', 'ArrowLeft', 37],
    ['Up', 'ArrowUp', 'ArrowUp', 38],
    ['Right', 'ArrowRight', 'ArrowRight', 39],
    ['Down', 'ArrowDown', 'ArrowDown', 40],
    ['F1', 'F1', 'F1', 112],
    ['F5', 'F5', 'F5', 116],
    ['F12', 'F12', 'F12', 123],
    ['space', ' ', 'Space', 32],
    ['a', 'a', 'KeyA', 65],
    ['7', '7', 'Digit7', 55],
    ['comma', ',', 'Comma', 188],
    ['slash', '/', 'Slash', 191],
  ])('maps %s to key %j, code %s, key code %i', (keysym, key, code, keyCode) => {
    const press = lookupKeysym(keysym)!;
    expect([press.def.key, press.def.code, press.def.keyCode]).toEqual([key, code, keyCode]);
  });

  it('marks characters typed with Shift as shifted, on their unshifted key', () => {
    expect(lookupKeysym('A')).toMatchObject({ shifted: true, def: { key: 'a', code: 'KeyA', shiftKey: 'A' } });
    expect(lookupKeysym('exclam')).toMatchObject({ shifted: true, def: { code: 'Digit1' } });
    expect(lookupKeysym('?')).toMatchObject({ shifted: true, def: { code: 'Slash' } });
  });

  it('gives Return the carriage return as text, and Tab none', () => {
    expect(lookupKeysym('Return')!.def.text).toBe('\r');
    expect(lookupKeysym('Tab')!.def.text).toBeUndefined();
  });

  it('matches multi-letter names case-insensitively and single letters exactly', () => {
    expect(lookupKeysym('return')!.def.key).toBe('Enter');
    expect(lookupKeysym('PAGE_DOWN')!.def.key).toBe('PageDown');
    expect(lookupKeysym('b')!.shifted).toBe(false);
    expect(lookupKeysym('B')!.shifted).toBe(true);
  });

  it('knows no made-up names', () => {
    expect(lookupKeysym('Hyper_Q')).toBeUndefined();
    expect(lookupKeysym('F25')).toBeUndefined();
  });
});

describe('parseCombo', () => {
  it('parses ctrl+a as Control held around a', () => {
    const combo = parseCombo('ctrl+a')!;
    expect(combo.modifiers.map((m) => m.key)).toEqual(['Control']);
    expect(combo.key!.def.key).toBe('a');
  });

  it('parses Ctrl+Shift+Tab with both modifiers in order', () => {
    const combo = parseCombo('Ctrl+Shift+Tab')!;
    expect(combo.modifiers.map((m) => m.key)).toEqual(['Control', 'Shift']);
    expect(combo.key!.def.key).toBe('Tab');
  });

  it('accepts X modifier keysyms and super as Meta', () => {
    expect(parseCombo('Control_L+Alt_R+Delete')!.modifiers.map((m) => m.code)).toEqual(['ControlLeft', 'AltRight']);
    expect(parseCombo('super+l')!.modifiers.map((m) => m.key)).toEqual(['Meta']);
  });

  it('parses a lone modifier as a modifier press without a main key', () => {
    expect(parseCombo('Shift')).toEqual({ modifiers: [expect.objectContaining({ key: 'Shift' })] });
  });

  it('reads + alone and a trailing ++ as the plus key', () => {
    expect(parseCombo('+')!.key!.def.code).toBe('Equal');
    const combo = parseCombo('ctrl++')!;
    expect([combo.modifiers.map((m) => m.key), combo.key!.def.code]).toEqual([['Control'], 'Equal']);
  });

  it('rejects unknown parts, empty parts and a non-modifier before the last part', () => {
    expect(parseCombo('ctrl+nope')).toBeUndefined();
    expect(parseCombo('ctrl+')).toBeUndefined();
    expect(parseCombo('a+b')).toBeUndefined();
    expect(parseCombo('')).toBeUndefined();
  });
});

describe('holdKey', () => {
  it('accepts shift, ctrl, control, alt, meta and super in any case', () => {
    expect(['shift', 'CTRL', 'Control', 'alt', 'Meta', 'SUPER'].map((n) => holdKey(n)?.key)).toEqual(['Shift', 'Control', 'Control', 'Alt', 'Meta', 'Meta']);
  });

  it('refuses keys that are not modifiers', () => {
    expect(holdKey('a')).toBeUndefined();
    expect(holdKey('Return')).toBeUndefined();
  });
});

describe('keyForCharacter', () => {
  it('types newlines as Return and tabs as Tab', () => {
    expect(keyForCharacter('\n').def.key).toBe('Enter');
    expect(keyForCharacter('\t').def.key).toBe('Tab');
  });

  it('types a character without a key as its own key value and text', () => {
    expect(keyForCharacter('é')).toEqual({ def: { key: 'é', code: '', keyCode: 0, text: 'é' }, shifted: false });
  });
});

describe('modifierMask', () => {
  it('sums the CDP modifier bits (Alt 1, Ctrl 2, Meta 4, Shift 8)', () => {
    expect(modifierMask(['alt', 'ctrl', 'meta', 'shift'].map((n) => holdKey(n)!))).toBe(15);
  });
});
