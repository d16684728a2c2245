// Truncation (docs/events.md#truncation-limits): byte limits count UTF-8 bytes, cuts land on a character (code point)
// boundary and add no marker text; every cut is reported so the event gets `truncated: true`.

import type { Protocol } from 'devtools-protocol';
import type { StackTrace } from '../../injected/schema.ts';

export interface Cut<T> {
  value: T;
  cut: boolean;
}

/**
 * The longest prefix of `s` that is at most `maxBytes` bytes in UTF-8. Never splits a surrogate
 * pair (a lone surrogate counts as the 3 bytes of the U+FFFD it is encoded as). Grapheme
 * clusters (ZWJ emoji, combining marks) may be split: the cut is per code point.
 */
export function truncateUtf8(s: string, maxBytes: number): Cut<string> {
  // A UTF-16 code unit is at most 3 UTF-8 bytes (a surrogate pair: 2 units, 4 bytes).
  if (s.length * 3 <= maxBytes) return { value: s, cut: false };
  if (maxBytes <= 0) return { value: '', cut: true };
  // Every code unit is at least 1 byte, so a string this short may still fit: ask Node natively.
  if (s.length <= maxBytes && Buffer.byteLength(s, 'utf8') <= maxBytes) return { value: s, cut: false };
  // Over the limit. Mostly-ASCII text: the first maxBytes units usually fit as they are.
  let end = maxBytes < s.length ? maxBytes : s.length;
  if (end > 0 && isHighSurrogate(s.charCodeAt(end - 1))) end--;
  const candidate = s.slice(0, end);
  if (Buffer.byteLength(candidate, 'utf8') <= maxBytes) return { value: candidate, cut: true };
  return { value: s.slice(0, utf8PrefixLength(s, maxBytes)), cut: true };
}

/** Number of UTF-16 units of the longest prefix of `s` that fits in `maxBytes` UTF-8 bytes. */
function utf8PrefixLength(s: string, maxBytes: number): number {
  let bytes = 0;
  let i = 0;
  while (i < s.length) {
    const code = s.charCodeAt(i);
    let units = 1;
    let size: number;
    if (code < 0x80) size = 1;
    else if (code < 0x800) size = 2;
    else if (isHighSurrogate(code) && i + 1 < s.length && isLowSurrogate(s.charCodeAt(i + 1))) {
      size = 4;
      units = 2;
    } else size = 3;
    if (bytes + size > maxBytes) break;
    bytes += size;
    i += units;
  }
  return i;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/**
 * Keep at most `maxFrames` call frames in total, the parent chain included (innermost first;
 * an async parent left with no frames is dropped). Keeps CDP's shape and names; `parentId`
 * (a reference to a stack the agent does not fetch) is dropped. Returns `st` itself when it
 * needs no change.
 */
export function capStackTrace(st: Protocol.Runtime.StackTrace, maxFrames: number): Cut<StackTrace> {
  if (fitsAsIs(st, maxFrames)) return { value: st, cut: false };
  let budget = Math.max(0, maxFrames);
  let cut = false;
  let top: StackTrace | undefined;
  let last: StackTrace | undefined;
  for (let level: Protocol.Runtime.StackTrace | undefined = st; level; level = level.parent) {
    if (level !== st && budget === 0) {
      cut = true;
      break;
    }
    const frames = level.callFrames;
    const kept = frames.length > budget ? frames.slice(0, budget) : frames;
    if (kept !== frames) cut = true;
    budget -= kept.length;
    const copy: StackTrace = level.description !== undefined ? { description: level.description, callFrames: kept } : { callFrames: kept };
    if (last) last.parent = copy;
    else top = copy;
    last = copy;
  }
  return { value: top!, cut };
}

function fitsAsIs(st: Protocol.Runtime.StackTrace, maxFrames: number): boolean {
  let frames = 0;
  for (let level: Protocol.Runtime.StackTrace | undefined = st; level; level = level.parent) {
    if (level.parentId !== undefined) return false;
    frames += level.callFrames.length;
    if (frames > maxFrames) return false;
  }
  return true;
}

/**
 * docs/events.md#truncation-limits: if `data` serialized as JSON is over `maxBytes` UTF-8 bytes, cut its largest string
 * values (nested ones in arrays and objects too; keys are never touched) until it fits. Strings
 * are cut to a common length, largest first, so small fields such as ids survive a flood in one
 * big field. Mutates `data` in place and returns whether it cut. If even empty strings cannot
 * make it fit, every string is emptied and the rest is left as is.
 */
export function enforceDataLimit(data: object, maxBytes: number): boolean {
  // Common case: a cheap upper bound on the JSON size already fits, no serialization needed.
  if (jsonSizeUpperBound(data, maxBytes) <= maxBytes) return false;
  let size = Buffer.byteLength(JSON.stringify(data), 'utf8');
  let cut = false;
  // One pass normally suffices (see cutToLevel); loop in case char boundaries leave a remainder.
  while (size > maxBytes) {
    const strings = collectStrings(data);
    if (!cutLargestStrings(strings, size - maxBytes)) break;
    cut = true;
    size = Buffer.byteLength(JSON.stringify(data), 'utf8');
  }
  return cut;
}

/**
 * An upper bound of the UTF-8 size of JSON.stringify(value); stops counting once over `limit`.
 * A string costs at most 6 bytes per UTF-16 unit (`\u0001`), plus quotes.
 */
function jsonSizeUpperBound(value: unknown, limit: number): number {
  switch (typeof value) {
    case 'string':
      return value.length * 6 + 2;
    case 'number':
      return 24;
    case 'boolean':
      return 5;
    case 'object': {
      if (value === null) return 4;
      let size = 2;
      if (Array.isArray(value)) {
        for (const item of value) {
          size += jsonSizeUpperBound(item, limit) + 1;
          if (size > limit) return size;
        }
        return size;
      }
      for (const key in value) {
        size += key.length * 6 + 4 + jsonSizeUpperBound((value as Record<string, unknown>)[key], limit);
        if (size > limit) return size;
      }
      return size;
    }
    default:
      // undefined, functions, symbols are omitted by JSON.stringify (or `null` in arrays).
      return 4;
  }
}

interface StringSlot {
  holder: Record<string, unknown> | unknown[];
  key: string | number;
  value: string;
  /** Bytes of the string inside JSON, quotes excluded. */
  jsonBytes: number;
}

function collectStrings(root: object): StringSlot[] {
  const slots: StringSlot[] = [];
  const visit = (holder: Record<string, unknown> | unknown[], key: string | number, value: unknown): void => {
    if (typeof value === 'string') {
      if (value.length > 0) slots.push({ holder, key, value, jsonBytes: Buffer.byteLength(JSON.stringify(value), 'utf8') - 2 });
    } else if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) visit(value, i, value[i]);
    } else if (value !== null && typeof value === 'object') {
      const record = value as Record<string, unknown>;
      for (const k in record) visit(record, k, record[k]);
    }
  };
  const record = root as Record<string, unknown>;
  for (const k in record) visit(record, k, record[k]);
  return slots;
}

/**
 * Cut the largest strings down to a common level so that together they shed at least `excess`
 * JSON bytes (water-filling). Dropping n UTF-8 bytes of raw text drops at least n bytes of its
 * JSON form (escaping only ever grows text), so cutting each raw string by what its JSON form
 * must lose is enough. Returns false if nothing could be cut.
 */
function cutLargestStrings(slots: StringSlot[], excess: number): boolean {
  if (slots.length === 0) return false;
  slots.sort((a, b) => b.jsonBytes - a.jsonBytes);
  let level = 0;
  let sum = 0;
  for (let k = 0; k < slots.length; k++) {
    sum += slots[k]!.jsonBytes;
    const candidate = Math.floor((sum - excess) / (k + 1));
    const next = slots[k + 1]?.jsonBytes ?? 0;
    if (candidate >= next) {
      level = Math.max(0, candidate);
      break;
    }
  }
  let changed = false;
  for (const slot of slots) {
    if (slot.jsonBytes <= level) break;
    const rawBytes = Buffer.byteLength(slot.value, 'utf8');
    const target = Math.max(0, rawBytes - (slot.jsonBytes - level));
    const { value, cut } = truncateUtf8(slot.value, target);
    if (!cut) continue;
    (slot.holder as Record<string | number, unknown>)[slot.key] = value;
    changed = true;
  }
  return changed;
}
