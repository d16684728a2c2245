// Validation of the page script's reports (docs/page-script.md). A report arrives as the payload string of a
// `Runtime.bindingCalled`; nothing in it is trusted until it has the exact shape of one of the
// report types in injected/schema.ts: known type, no unknown field, every field of the right type
// and within PAGE_SCRIPT_LIMITS.

import { PAGE_SCRIPT_LIMITS, type PageScriptReport, type PageScriptReportType } from '../../injected/schema.ts';

type FieldCheck = (value: unknown) => boolean;

/** Coordinates and scroll offsets: integers in any sane range (negative for RTL scrolling). */
const MAX_COORDINATE = 10_000_000;
/** Performance timeline values: non-negative, finite, in any sane range (ms, px², score). */
const MAX_MEASURE = 1e12;

const integer: FieldCheck = (v) => Number.isInteger(v) && Math.abs(v as number) <= MAX_COORDINATE;
const measure: FieldCheck = (v) => typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= MAX_MEASURE;
const boolean: FieldCheck = (v) => typeof v === 'boolean';
const string =
  (min: number, max: number): FieldCheck =>
  (v) =>
    typeof v === 'string' && v.length >= min && v.length <= max;
const selector = string(1, PAGE_SCRIPT_LIMITS.selectorChars);
const tag = string(1, PAGE_SCRIPT_LIMITS.tagChars);
const optional = (check: FieldCheck): FieldCheck => Object.assign((v: unknown) => check(v), { optional: true });

/** A plain object whose fields all pass their checks (optional ones may be absent); no other field. */
const object =
  (fields: Record<string, FieldCheck & { optional?: boolean }>): FieldCheck =>
  (v) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
    const record = v as Record<string, unknown>;
    for (const key of Object.keys(record)) if (!Object.hasOwn(fields, key)) return false;
    for (const [key, check] of Object.entries(fields)) {
      if (!Object.hasOwn(record, key)) {
        if (check.optional) continue;
        return false;
      }
      if (!check(record[key])) return false;
    }
    return true;
  };
const vitalsElement = optional(object({ selector, tag }));
const shortText = string(0, 64);
const url = string(0, PAGE_SCRIPT_LIMITS.urlChars);
/** An array of at most `max` objects, each with exactly the fields of `shape` (optional ones may be absent). */
const arrayOf =
  (max: number, shape: Record<string, FieldCheck & { optional?: boolean }>): FieldCheck =>
  (v) =>
    Array.isArray(v) &&
    v.length <= max &&
    v.every((item: unknown) => {
      if (typeof item !== 'object' || item === null || Array.isArray(item)) return false;
      const record = item as Record<string, unknown>;
      if (Object.keys(record).some((key) => !Object.hasOwn(shape, key))) return false;
      return Object.entries(shape).every(([key, check]) => (Object.hasOwn(record, key) ? check(record[key]) : check.optional === true));
    });

type Shape<R> = { [K in Exclude<keyof R, 'type'>]-?: FieldCheck };

const SHAPES: { [T in PageScriptReportType]: Shape<Extract<PageScriptReport, { type: T }>> } = {
  interaction_click: { x: integer, y: integer, selector, tag, text: string(0, PAGE_SCRIPT_LIMITS.textChars) },
  interaction_key: { key: string(0, PAGE_SCRIPT_LIMITS.keyChars), selector, tag },
  interaction_scroll_settled: { from_x: integer, from_y: integer, to_x: integer, to_y: integer, target_selector: selector },
  page_layout_shift: { time: measure, value: measure, had_recent_input: boolean },
  page_lcp: {
    time: measure,
    render_time: measure,
    load_time: measure,
    size: measure,
    element_id: string(0, PAGE_SCRIPT_LIMITS.elementIdChars),
    url: string(0, PAGE_SCRIPT_LIMITS.urlChars),
    element_ref: optional((v) => Number.isSafeInteger(v) && (v as number) > 0),
    truncated: optional((v) => v === true),
  },
  page_web_vitals: {
    reason: (v) => v === 'snapshot' || v === 'hidden',
    ttfb: optional(measure),
    fcp: optional(measure),
    lcp: optional(object({ value: measure, element: vitalsElement, url: optional(string(0, PAGE_SCRIPT_LIMITS.urlChars)) })),
    cls: optional(object({ value: measure, largest_shift_element: vitalsElement, largest_shift_time: optional(measure) })),
    inp: optional(
      object({
        value: measure,
        event_type: string(1, PAGE_SCRIPT_LIMITS.keyChars),
        target: vitalsElement,
        input_delay: measure,
        processing_duration: measure,
        presentation_delay: measure,
        interaction_count: measure,
      }),
    ),
  },
  page_long_task: {
    time: measure,
    duration: measure,
    attribution: arrayOf(5, {
      name: shortText,
      container_type: optional(shortText),
      container_src: optional(url),
      container_id: optional(string(0, PAGE_SCRIPT_LIMITS.elementIdChars)),
      container_name: optional(string(0, PAGE_SCRIPT_LIMITS.elementIdChars)),
    }),
    scripts: optional(
      arrayOf(5, {
        invoker_type: shortText,
        invoker: string(0, PAGE_SCRIPT_LIMITS.selectorChars),
        source_url: url,
        source_function_name: string(0, PAGE_SCRIPT_LIMITS.selectorChars),
        source_char_position: (v) => Number.isSafeInteger(v) && (v as number) >= 0,
        duration: measure,
      }),
    ),
  },
};

export type ReportParseResult = { ok: true; report: PageScriptReport } | { ok: false; reason: string };

export function parsePageScriptReport(payload: string): ReportParseResult {
  if (payload.length > PAGE_SCRIPT_LIMITS.payloadChars) return { ok: false, reason: 'payload too large' };
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return { ok: false, reason: 'payload is not JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, reason: 'payload is not an object' };
  const record = value as Record<string, unknown>;
  const type = record.type;
  if (typeof type !== 'string' || !Object.hasOwn(SHAPES, type)) return { ok: false, reason: 'unknown type' };
  const shape = SHAPES[type as PageScriptReportType] as Record<string, FieldCheck & { optional?: boolean }>;
  for (const key of Object.keys(record)) {
    if (key !== 'type' && !Object.hasOwn(shape, key)) return { ok: false, reason: `unknown field ${key}` };
  }
  for (const [key, check] of Object.entries(shape)) {
    const present = Object.hasOwn(record, key);
    if (!present && check.optional) continue;
    if (!present || !check(record[key])) return { ok: false, reason: `bad field ${key}` };
  }
  return { ok: true, report: record as unknown as PageScriptReport };
}
