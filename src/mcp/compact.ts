// The compact form of an event that the MCP tools answer with (docs/mcp.md "Budgets"): the event's
// data flattened beside its seq, time and type; headers, bodies, images, stack traces, console
// arguments, resource timing and the context fields a model rarely needs dropped unless asked;
// long strings cut with the number of characters left out. What was dropped is counted, so the
// answer can say what it left out and how to get it.

import type { Envelope } from '../../injected/schema.ts';

/** What a caller may ask to keep (`include`). Images are never inline in an event: get_screenshot. */
export const INCLUDE_GROUPS = ['headers', 'bodies', 'stack_traces', 'args', 'timing', 'context'] as const;
export type IncludeGroup = (typeof INCLUDE_GROUPS)[number];

/** The data fields of each group (by key; bodies also by type below). */
const GROUP_FIELDS: Record<IncludeGroup, readonly string[]> = {
  headers: ['headers', 'request_headers', 'redirect_response'],
  bodies: ['body', 'body_encoding', 'post_data', 'payload', 'payload_encoding'],
  stack_traces: ['stack_trace'],
  args: ['args'],
  timing: ['timing', 'remote_ip_address', 'remote_port', 'connection_id', 'protocol', 'encoded_data_length', 'data_length'],
  context: [
    'session_id',
    'frame_id',
    'loader_id',
    'target_type',
    'document_url',
    'parent_frame_id',
    'source_frame_id',
    'dialog_frame_id',
    'chooser_frame_id',
    'initiator_url',
    'status_text',
  ],
};

const GROUP_OF = new Map<string, IncludeGroup>();
for (const group of INCLUDE_GROUPS) for (const field of GROUP_FIELDS[group]) GROUP_OF.set(field, group);

/** Fields whose meaning depends on the event type: kept for the types listed. */
const KEPT_FOR: Record<string, ReadonlySet<string>> = {
  // A CDP command's connection is its client (docs/events.md "cdp_command"), not a socket.
  connection_id: new Set(['cdp_command', 'cdp_connect', 'cdp_disconnect', 'step']),
};

/** The context groups' fields every event would repeat: dropped without being counted. */
const SILENT_GROUPS: ReadonlySet<IncludeGroup> = new Set(['context']);

/** Items of an array kept before the rest is summarized. */
const MAX_ARRAY_ITEMS = 10;

export interface CompactOptions {
  include: ReadonlySet<IncludeGroup>;
  /** Characters of a string kept; the rest is replaced by `…(+N chars)`. */
  maxString: number;
  /**
   * The target most events of an answer belong to: said once by the answer (`default_target_id`)
   * and left out of those events, which would each repeat its 32 characters.
   */
  defaultTarget?: string;
}

/** What compacting left out, over every event of an answer. */
export class Omissions {
  /** Dropped field → how many events it was dropped from. */
  readonly fields = new Map<string, number>();
  stringsCut = 0;
  arraysCut = 0;

  drop(field: string): void {
    this.fields.set(field, (this.fields.get(field) ?? 0) + 1);
  }

  merge(other: Omissions): void {
    for (const [field, count] of other.fields) this.fields.set(field, (this.fields.get(field) ?? 0) + count);
    this.stringsCut += other.stringsCut;
    this.arraysCut += other.arraysCut;
  }

  get isEmpty(): boolean {
    return this.fields.size === 0 && this.stringsCut === 0 && this.arraysCut === 0;
  }

  /** The answer's `omitted` object: counts, and how to get each back. */
  describe(options: CompactOptions): Record<string, unknown> | undefined {
    if (this.isEmpty) return undefined;
    const described: Record<string, unknown> = {};
    if (this.fields.size > 0) described.fields = Object.fromEntries(this.fields);
    if (this.stringsCut > 0) described.strings_cut = this.stringsCut;
    if (this.arraysCut > 0) described.arrays_cut = this.arraysCut;
    const groups = new Set<string>();
    for (const field of this.fields.keys()) {
      const group = GROUP_OF.get(field);
      if (group !== undefined) groups.add(group);
    }
    const how: string[] = [];
    if (groups.size > 0) how.push(`include: ${JSON.stringify([...groups])} keeps them`);
    if (this.fields.has('png')) how.push('get_screenshot shows an image');
    if (this.stringsCut > 0) how.push(`strings were cut at ${options.maxString} characters (max_string raises it)`);
    if (this.fields.has('body') || this.fields.has('post_data')) how.push('get_request with include_body returns one request whole');
    described.how = how.join('; ');
    return described;
  }
}

/** An event as the tools show it: `{seq, ts, type, …data}`; `truncated` when the agent cut it. */
export type CompactEvent = Record<string, unknown>;

/** RFC 3339 with milliseconds, from Unix µs. */
export function isoTime(us: number): string {
  return new Date(Math.floor(us / 1000)).toISOString();
}

/** The compact form of one envelope; what it left out is added to `omissions`. */
export function compactEnvelope(envelope: Envelope, options: CompactOptions, omissions: Omissions): CompactEvent {
  const { seq, event } = envelope;
  const compact: CompactEvent = { seq, ts: isoTime(event.ts), type: event.type };
  if (event.data !== undefined) {
    const entries: Array<[string, unknown]> = Object.entries(event.data);
    for (const [key, value] of entries) {
      if (key === 'seq' || key === 'ts' || key === 'type') continue;
      if (key === 'target_id' && value === options.defaultTarget && value !== undefined) continue;
      if (!keeps(event.type, key, value, options, omissions, compact)) continue;
      compact[key] = shrink(value, options, omissions, 0);
    }
  }
  if (event.truncated) compact.truncated = true;
  return compact;
}

/** Whether `key` of an event's data is kept as it is; a dropped one may leave a summary in `compact`. */
function keeps(type: string, key: string, value: unknown, options: CompactOptions, omissions: Omissions, compact: CompactEvent): boolean {
  if (key === 'png') {
    // The screenshot itself: an image, never text in an answer.
    omissions.drop('png');
    return false;
  }
  // An EventSource message's `data` is its body; a step's `data` is the caller's own object.
  const group = type === 'network_eventsource_message' && key === 'data' ? 'bodies' : GROUP_OF.get(key);
  if (group === undefined || options.include.has(group)) return true;
  if (KEPT_FOR[key]?.has(type)) return true;
  if (!SILENT_GROUPS.has(group)) omissions.drop(key);
  if (key === 'stack_trace') {
    const top = topFrame(value);
    if (top !== undefined) compact.top_frame = top;
  }
  if (key === 'redirect_response' && typeof value === 'object' && value !== null) {
    const status = (value as { status?: unknown }).status;
    if (typeof status === 'number') compact.redirect_status = status;
  }
  return false;
}

/** `fn (url:line:col)` of a CDP stack trace's first frame (1-based line and column, as DevTools shows). */
export function topFrame(stack: unknown): string | undefined {
  const frame = (stack as { callFrames?: Array<{ functionName?: string; url?: string; lineNumber?: number; columnNumber?: number }> } | undefined)
    ?.callFrames?.[0];
  if (frame === undefined) return undefined;
  const where = `${frame.url ?? ''}:${(frame.lineNumber ?? 0) + 1}:${(frame.columnNumber ?? 0) + 1}`;
  return frame.functionName ? `${frame.functionName} (${where})` : where;
}

function shrink(value: unknown, options: CompactOptions, omissions: Omissions, depth: number): unknown {
  if (typeof value === 'string') return cutString(value, options.maxString, omissions);
  if (Array.isArray(value)) {
    const kept = value.slice(0, MAX_ARRAY_ITEMS).map((item) => shrink(item, options, omissions, depth + 1));
    if (value.length > MAX_ARRAY_ITEMS) {
      omissions.arraysCut++;
      kept.push(`…(+${value.length - MAX_ARRAY_ITEMS} more)`);
    }
    return kept;
  }
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = shrink(item, options, omissions, depth + 1);
    return out;
  }
  return value;
}

/** `text` cut to `max` characters (never inside a surrogate pair) with the count left out. */
export function cutString(text: string, max: number, omissions?: Omissions): string {
  if (text.length <= max) return text;
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  if (omissions) omissions.stringsCut++;
  return `${text.slice(0, end)}…(+${text.length - end} chars)`;
}
