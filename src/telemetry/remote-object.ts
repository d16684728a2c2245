// Console arguments as strings (docs/events.md#types): a CDP RemoteObject rendered the way the DevTools
// console shows it collapsed, from what the message already carries (`value`,
// `unserializableValue`, `description`, `preview`). Never calls back into the page.

import type { Protocol } from 'devtools-protocol';

type RemoteObject = Protocol.Runtime.RemoteObject;
type ObjectPreview = Protocol.Runtime.ObjectPreview;
type PropertyPreview = Protocol.Runtime.PropertyPreview;

/** Subtypes whose `description` already is the useful text (a node's is `div#d.box`). */
const DESCRIBED_SUBTYPES = new Set(['node', 'regexp', 'date', 'error', 'proxy', 'wasmvalue', 'trustedtype']);

/** Subtypes that DevTools prints as `[a, b]`; the plain Array drops its `Array(n)` prefix. */
const INDEXED_SUBTYPES = new Set(['array', 'typedarray']);

/** Property names DevTools prints without quotes. */
const PLAIN_KEY = /^(?:[A-Za-z_$][\w$]*|\d+|Symbol\(.*\))$/;
const ARRAY_INDEX = /^\d+$/;

/** Characters escaped when a string inside a preview is printed as a one-line quoted literal. */
const QUOTE_ESCAPES = /[\\'\n\r\t]/g;
const QUOTE_ESCAPE_OF: Record<string, string> = { '\\': '\\\\', "'": "\\'", '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * One console argument as a string:
 * - strings verbatim; booleans and numbers as `String(value)`;
 * - `unserializableValue` as CDP gives it: `NaN`, `Infinity`, `-Infinity`, `-0` and bigints as
 *   `123n`. This follows what the console prints, not `String()` (which would give `0` and
 *   `123`), so that `-0` and bigints stay recognisable as such;
 * - `undefined`, `null`;
 * - functions, symbols, errors (the full stack text), DOM nodes, regexps and dates by their
 *   `description`;
 * - plain objects, class instances, arrays, maps, sets and promises by a compact rendering of
 *   their preview (`{a: 1, b: 'x', …}`, `[1, 2, 3]`, `Map(2) {'a' => 1}`), because their
 *   description alone is just `Object` / `Array(3)`.
 */
export function renderRemoteObject(obj: RemoteObject): string {
  switch (obj.type) {
    case 'string':
      return typeof obj.value === 'string' ? obj.value : (obj.description ?? '');
    case 'number':
    case 'bigint':
    case 'boolean':
      if (obj.unserializableValue !== undefined) return obj.unserializableValue;
      return obj.value !== undefined ? String(obj.value) : (obj.description ?? obj.type);
    case 'undefined':
      return 'undefined';
    case 'symbol':
    case 'function':
      return obj.description ?? obj.type;
    default:
      return renderObject(obj);
  }
}

function renderObject(obj: RemoteObject): string {
  if (obj.subtype === 'null') return 'null';
  if (obj.preview && (obj.subtype === undefined || !DESCRIBED_SUBTYPES.has(obj.subtype))) {
    return renderPreview(obj.preview);
  }
  return obj.description ?? obj.className ?? '{…}';
}

/** A full preview: the object and its (up to 5, arrays up to 100) own properties. */
function renderPreview(preview: ObjectPreview): string {
  const subtype = preview.subtype;
  if (subtype === 'map' || subtype === 'set' || subtype === 'weakmap' || subtype === 'weakset' || subtype === 'iterator') {
    return `${preview.description ?? subtype} {${renderEntries(preview)}}`;
  }
  if (subtype !== undefined && INDEXED_SUBTYPES.has(subtype)) {
    const items = renderIndexed(preview);
    return subtype === 'array' ? `[${items}]` : `${preview.description ?? ''} [${items}]`;
  }
  if (subtype === 'promise') return `${preview.description ?? 'Promise'} {${renderPromiseState(preview)}}`;
  if (subtype !== undefined && DESCRIBED_SUBTYPES.has(subtype)) return preview.description ?? subtype;
  if (preview.type !== 'object') return renderPrimitivePreview(preview);
  const body = renderProperties(preview.properties, 0, preview.overflow);
  const name = preview.description;
  return name === undefined || name === 'Object' ? `{${body}}` : `${name} {${body}}`;
}

function renderProperties(properties: PropertyPreview[], start: number, overflow: boolean): string {
  let out = '';
  for (let i = start; i < properties.length; i++) {
    const property = properties[i]!;
    if (out) out += ', ';
    out += `${renderKey(property.name)}: ${renderPropertyValue(property)}`;
  }
  if (overflow) out += out ? ', …' : '…';
  return out;
}

/** Array items in index order, holes as DevTools shows them (`empty × 2`), then named properties. */
function renderIndexed(preview: ObjectPreview): string {
  const properties = preview.properties;
  let out = '';
  let next = 0;
  let i = 0;
  for (; i < properties.length; i++) {
    const property = properties[i]!;
    if (!ARRAY_INDEX.test(property.name)) break;
    const index = Number(property.name);
    if (out) out += ', ';
    if (index > next) out += `empty × ${index - next}, `;
    out += renderPropertyValue(property);
    next = index + 1;
  }
  // Typed arrays also list buffer, byteLength, ...: DevTools hides those in the collapsed view.
  if (preview.subtype === 'array') {
    const rest = renderProperties(properties, i, false);
    if (rest) out += out ? `, ${rest}` : rest;
  }
  if (preview.overflow) out += out ? ', …' : '…';
  return out;
}

function renderEntries(preview: ObjectPreview): string {
  let out = '';
  for (const entry of preview.entries ?? []) {
    if (out) out += ', ';
    const value = renderEntryPart(entry.value);
    out += entry.key ? `${renderEntryPart(entry.key)} => ${value}` : value;
  }
  if (preview.overflow) out += out ? ', …' : '…';
  return out;
}

/** Map keys and values, set members: nested previews, one level deep. */
function renderEntryPart(preview: ObjectPreview): string {
  if (preview.type === 'string') return quote(preview.description ?? '');
  if (preview.type !== 'object' || preview.subtype === 'null') return preview.description ?? preview.type;
  return renderPreview(preview);
}

function renderPromiseState(preview: ObjectPreview): string {
  let state: string | undefined;
  let result: PropertyPreview | undefined;
  for (const property of preview.properties) {
    if (property.name === '[[PromiseState]]') state = property.value;
    else if (property.name === '[[PromiseResult]]') result = property;
  }
  if (state === undefined) return renderProperties(preview.properties, 0, preview.overflow);
  return state === 'pending' || !result ? `<${state}>` : `<${state}>: ${renderPropertyValue(result)}`;
}

/** A property's value inside a preview; nested objects are collapsed unless V8 sent their preview. */
function renderPropertyValue(property: PropertyPreview): string {
  switch (property.type) {
    case 'string':
      return quote(property.value ?? '');
    case 'function':
      return 'ƒ';
    case 'accessor':
      return '(...)';
    case 'object':
      if (property.valuePreview) return renderPreview(property.valuePreview);
      if (property.subtype === undefined && property.value === 'Object') return '{…}';
      return property.value ?? '{…}';
    default:
      return property.value ?? property.type;
  }
}

function renderPrimitivePreview(preview: ObjectPreview): string {
  return preview.type === 'string' ? quote(preview.description ?? '') : (preview.description ?? preview.type);
}

function renderKey(name: string): string {
  return PLAIN_KEY.test(name) ? name : quote(name);
}

/** A string inside a preview, as a single-quoted one-line literal. */
function quote(s: string): string {
  return `'${s.replace(QUOTE_ESCAPES, (c) => QUOTE_ESCAPE_OF[c]!)}'`;
}
