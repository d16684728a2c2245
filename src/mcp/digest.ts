// The digest of what_went_wrong (docs/mcp.md "what_went_wrong"), pure: events go in one by one
// (in seq order), findings come out grouped and counted, each with the action that caused it
// (`caused_by`) and the seqs to read more. The tool (wrong-tool.ts) reads the events, looks up
// the actions and fits the digest into its budget with the levels below.

import type { ConsoleErrorData, Envelope, NetworkLoadingFailedData, NetworkResponseData, PageNavigationData, TelemetryEvent } from '../../injected/schema.ts';
import { contextOf } from '../event-data.ts';
import { cutString, isoTime, topFrame } from './compact.ts';

/**
 * The event types the digest reads. Control events only count when they failed; responses only
 * with a status of 400 or more (tested on the JSON text before parsing, see `worthParsing`).
 */
export const DIGEST_TYPES = [
  'network_loading_failed',
  'network_response',
  'console_error',
  'page_crashed',
  'page_recovered',
  'service_crashed',
  'system_oom_kill',
  'page_unresponsive',
  'page_responsive',
  'page_dialog_opened',
  'page_dialog_closed',
  'network_download_started',
  'network_download_finished',
  'page_navigation',
  'page_navigation_settled',
  'monitor_disconnected',
  'monitor_reconnected',
  'monitor_reconnect_failed',
  'monitor_init_failed',
  'cdp_command',
  'api_call',
  'computer_action',
] as const;

/** The action types (docs/events.md "Control events"). */
export const ACTION_TYPES = ['cdp_command', 'api_call', 'computer_action'] as const;

/** Distinct console error texts and request URLs remembered; past them, only counted. */
const MAX_KEYS = 2000;
/** Findings of each list remembered (crashes, hangs, ...); past them, only counted. */
const MAX_ITEMS = 200;
/** Distinct texts counted in one console error group. */
const MAX_VARIANTS = 100;

/**
 * What groups console errors: the text with its numbers (ids, counts, line numbers, hex) made
 * one, so "no price for sku 4412" and "… 4417" are one finding, with the first text shown and
 * the number of variants.
 */
export function errorKey(text: string): string {
  return text.replace(/\b0x[0-9a-f]+\b|\d+/gi, (match) => (/^0x/i.test(match) ? '0x#' : '#'));
}

const RESPONSE_STATUS = /"status":(\d{3})\b/;

/**
 * Whether an envelope's JSON can matter to the digest, decided on its text: a response under 400
 * and an action that went well never do (most of a session's events of these types).
 */
export function worthParsing(json: string): boolean {
  if (json.includes('"type":"network_response"')) {
    const status = RESPONSE_STATUS.exec(json);
    return status !== null && Number(status[1]) >= 400;
  }
  if (json.includes('"type":"cdp_command"') || json.includes('"type":"api_call"') || json.includes('"type":"computer_action"')) {
    return json.includes('"outcome":"error"');
  }
  // An iframe's navigation: only the tab's own settle (the digest's unsettled navigations).
  if (json.includes('"type":"page_navigation"') && json.includes('"parent_frame_id":')) return false;
  return true;
}

interface Occurrence {
  seq: number;
  ts: number;
  caused_by?: string;
}

interface RequestExample extends Occurrence {
  url: string;
  method?: string;
  status?: number;
  error?: string;
  request_id?: string;
  resource_type?: string;
  count: number;
}

interface OriginGroup {
  origin: string;
  count: number;
  outcomes: Map<string, number>;
  first: Occurrence;
  examples: Map<string, RequestExample>;
}

interface ErrorGroup {
  /** The first occurrence's text. */
  text: string;
  count: number;
  /** Distinct texts in the group (it groups texts that differ only in their numbers), up to MAX_VARIANTS. */
  variants: Set<string>;
  first: Occurrence & { source?: string; url?: string };
  seqs: number[];
}

/** A finding of one of the plain lists: what happened, where, and its occurrence. */
type Item = Occurrence & Record<string, unknown>;

interface PendingNavigation extends Occurrence {
  url: string;
  target_id: string;
}

export type ItemList = 'crashes' | 'oom_kills' | 'hangs' | 'dialogs' | 'downloads' | 'unsettled_navigations' | 'telemetry_gaps' | 'failed_actions';
const ITEM_LISTS: readonly ItemList[] = ['crashes', 'oom_kills', 'hangs', 'dialogs', 'downloads', 'unsettled_navigations', 'telemetry_gaps', 'failed_actions'];

export class DigestBuilder {
  private readonly origins = new Map<string, OriginGroup>();
  private readonly errors = new Map<string, ErrorGroup>();
  private readonly items = new Map<ItemList, Item[]>(ITEM_LISTS.map((list) => [list, []]));
  private readonly totals = new Map<ItemList, number>(ITEM_LISTS.map((list) => [list, 0]));
  private failedRequests = 0;
  private canceledRequests = 0;
  private consoleErrors = 0;
  private otherErrorTexts = 0;
  private readonly pendingNavigations = new Map<string, PendingNavigation>();
  private readonly openHangs = new Map<string, Item>();
  private readonly openDialogs = new Map<string, Item>();
  private readonly downloads = new Map<string, Item>();
  /** Events read, and their first and last seq. */
  scanned = 0;
  firstSeq: number | undefined;
  lastSeq: number | undefined;
  lastTs: number | undefined;

  /** Counts an event read but not parsed (worthParsing said no). */
  skip(seq: number): void {
    this.count(seq);
  }

  add(envelope: Envelope): void {
    this.count(envelope.seq);
    const { seq, event } = envelope;
    this.lastTs = Math.max(this.lastTs ?? event.ts, event.ts);
    // Every type the digest reads has its data; an event without is nothing to report.
    if (event.data === undefined) return;
    const causedBy = contextOf(event)?.caused_by;
    const at: Occurrence = { seq, ts: event.ts, ...(causedBy !== undefined && { caused_by: causedBy }) };
    switch (event.type) {
      case 'network_loading_failed':
        if (event.data.canceled) this.canceledRequests++;
        else this.failedRequest(at, event.data, { error: event.data.error_text || 'failed' });
        return;
      case 'network_response':
        if (event.data.status >= 400) this.failedRequest(at, event.data, { status: event.data.status });
        return;
      case 'console_error':
        this.consoleError(at, event.data);
        return;
      case 'page_crashed': {
        const { status, error_code, url, target_id } = event.data;
        this.push('crashes', { ...at, what: 'tab crashed', status, error_code, url, target_id });
        if (target_id !== undefined) {
          // Its navigation never settles now, whatever its settle timers still emit.
          const pending = this.pendingNavigations.get(target_id);
          if (pending) this.unsettled(pending, 'the tab crashed');
          this.pendingNavigations.delete(target_id);
        }
        return;
      }
      case 'page_recovered': {
        const { target_id, down_ms } = event.data;
        const crash = this.findLast('crashes', (item) => item.target_id === target_id && item.recovered_after_ms === undefined);
        if (crash) crash.recovered_after_ms = down_ms;
        return;
      }
      case 'service_crashed': {
        const { service_name, phase, pid, exit_code, signal, attempts } = event.data;
        this.push('crashes', { ...at, what: `${service_name || 'a service'} crashed`, phase, pid, exit_code, signal, attempts });
        return;
      }
      case 'system_oom_kill': {
        const { process_name, pid, rss_kb, constraint, browser_process } = event.data;
        this.push('oom_kills', { ...at, process: process_name, pid, rss_kb, constraint, browser_process });
        return;
      }
      case 'page_unresponsive': {
        const { url, target_id, threshold_ms } = event.data;
        const hang: Item = { ...at, url, target_id, threshold_ms };
        this.push('hangs', hang);
        if (target_id !== undefined) this.openHangs.set(target_id, hang);
        return;
      }
      case 'page_responsive': {
        const { target_id, unresponsive_ms } = event.data;
        if (target_id === undefined) return;
        const hang = this.openHangs.get(target_id);
        if (hang) hang.unresponsive_ms = unresponsive_ms;
        this.openHangs.delete(target_id);
        return;
      }
      case 'page_dialog_opened': {
        const { dialog_type, message, url, target_id } = event.data;
        const dialog: Item = { ...at, dialog_type, message, url };
        this.push('dialogs', dialog);
        if (target_id !== undefined) this.openDialogs.set(target_id, dialog);
        return;
      }
      case 'page_dialog_closed': {
        const { target_id, accepted, open_ms } = event.data;
        if (target_id === undefined) return;
        const dialog = this.openDialogs.get(target_id);
        if (dialog) Object.assign(dialog, { accepted, open_ms });
        this.openDialogs.delete(target_id);
        return;
      }
      case 'network_download_started': {
        const { url, suggested_filename, guid } = event.data;
        const download: Item = { ...at, url, file: suggested_filename, state: 'in progress' };
        this.push('downloads', download);
        this.downloads.set(guid, download);
        return;
      }
      case 'network_download_finished': {
        const download = this.downloads.get(event.data.guid);
        if (download) Object.assign(download, { state: event.data.state, bytes: event.data.received_bytes });
        return;
      }
      case 'page_navigation':
        this.navigation(at, event.data);
        return;
      case 'page_navigation_settled':
        if (event.data.target_id !== undefined) this.pendingNavigations.delete(event.data.target_id);
        return;
      case 'monitor_disconnected':
      case 'monitor_reconnect_failed':
      case 'monitor_init_failed': {
        const { reason, step, error, attempts } = event.data;
        this.push('telemetry_gaps', { ...at, what: event.type, reason, step, error, attempts });
        return;
      }
      case 'monitor_reconnected': {
        const gap = this.findLast('telemetry_gaps', (item) => item.what === 'monitor_disconnected' && item.gap_ms === undefined);
        if (gap) gap.gap_ms = event.data.reconnect_duration_ms;
        return;
      }
      case 'cdp_command':
      case 'api_call':
      case 'computer_action':
        if (event.data.outcome === 'error')
          this.push('failed_actions', { ...at, action_id: event.data.action_id, action: describeAction(event), error: event.data.error });
        return;
      default:
        return;
    }
  }

  private count(seq: number): void {
    this.scanned++;
    this.firstSeq ??= seq;
    this.lastSeq = seq;
  }

  private failedRequest(at: Occurrence, data: NetworkLoadingFailedData | NetworkResponseData, outcome: { status?: number; error?: string }): void {
    this.failedRequests++;
    const url = data.url ?? '';
    const origin = originOf(url);
    let group = this.origins.get(origin);
    if (group === undefined) {
      if (this.origins.size >= MAX_KEYS) return;
      group = { origin, count: 0, outcomes: new Map(), first: at, examples: new Map() };
      this.origins.set(origin, group);
    }
    group.count++;
    const key = outcome.status !== undefined ? String(outcome.status) : outcome.error!;
    group.outcomes.set(key, (group.outcomes.get(key) ?? 0) + 1);
    const path = url.startsWith(origin) ? url.slice(origin.length) || '/' : url;
    // Requests that differ only in their query are one example, counted.
    const exampleKey = `${key} ${path.split('?')[0]}`;
    const known = group.examples.get(exampleKey);
    if (known) known.count++;
    else if (group.examples.size < 20)
      group.examples.set(exampleKey, {
        ...at,
        url: path,
        ...('method' in data && data.method !== undefined && { method: data.method }),
        ...outcome,
        request_id: data.request_id,
        ...(data.resource_type !== undefined && { resource_type: data.resource_type }),
        count: 1,
      });
  }

  private consoleError(at: Occurrence, data: ConsoleErrorData): void {
    this.consoleErrors++;
    const text = cutString(data.text, 500);
    const key = errorKey(text);
    let group = this.errors.get(key);
    if (group === undefined) {
      if (this.errors.size >= MAX_KEYS) {
        this.otherErrorTexts++;
        return;
      }
      const line = data.line !== undefined ? `:${data.line + 1}` : '';
      const source = data.source_url !== undefined && data.source_url !== '' ? `${data.source_url}${line}` : topFrame(data.stack_trace);
      group = {
        text,
        count: 0,
        variants: new Set(),
        first: { ...at, ...(source !== undefined && { source }), ...(data.url !== undefined && { url: data.url }) },
        seqs: [],
      };
      this.errors.set(key, group);
    }
    group.count++;
    if (group.variants.size < MAX_VARIANTS) group.variants.add(text);
    if (group.seqs.length < 5) group.seqs.push(at.seq);
  }

  private navigation(at: Occurrence, data: PageNavigationData): void {
    // An iframe's navigation has a parent; the tab's settle is what the digest follows.
    if (data.parent_frame_id !== undefined || data.target_id === undefined) return;
    const url = data.url;
    const previous = this.pendingNavigations.get(data.target_id);
    if (previous) this.unsettled(previous, 'another navigation began first');
    this.pendingNavigations.delete(data.target_id);
    // A blank tab's first document settles as it pleases; it is no finding either way.
    if (url === 'about:blank' || url === '') return;
    this.pendingNavigations.set(data.target_id, { ...at, url, target_id: data.target_id });
  }

  private unsettled(navigation: PendingNavigation, why: string): void {
    this.push('unsettled_navigations', { ...navigation, why });
  }

  private push(list: ItemList, item: Item): void {
    this.totals.set(list, this.totals.get(list)! + 1);
    const items = this.items.get(list)!;
    // The item itself: later events complete it (a download's end, a hang's length).
    if (items.length < MAX_ITEMS) items.push(item);
  }

  private findLast(list: ItemList, predicate: (item: Item) => boolean): Item | undefined {
    const items = this.items.get(list)!;
    for (let i = items.length - 1; i >= 0; i--) if (predicate(items[i]!)) return items[i];
    return undefined;
  }

  /**
   * The findings, complete (no level applied yet). Navigations still waiting for their settle at
   * the end count as unsettled only when the last event read is more than `settleGraceUs` after
   * them (a live session's page may just be loading).
   */
  findings(settleGraceUs = 30_000_000): Findings {
    for (const pending of this.pendingNavigations.values()) {
      if (this.lastTs === undefined || this.lastTs - pending.ts > settleGraceUs) this.unsettled(pending, 'not settled by the last event read');
    }
    this.pendingNavigations.clear();
    const origins = [...this.origins.values()].sort((a, b) => b.count - a.count || a.first.seq - b.first.seq);
    const errors = [...this.errors.values()].sort((a, b) => a.first.seq - b.first.seq);
    return {
      totals: {
        failed_requests: this.failedRequests,
        canceled_requests: this.canceledRequests,
        console_errors: this.consoleErrors,
        console_error_kinds: this.errors.size + this.otherErrorTexts,
        ...Object.fromEntries(this.totals),
      } as Findings['totals'],
      origins,
      errors,
      items: this.items,
    };
  }
}

export interface Findings {
  totals: Record<'failed_requests' | 'canceled_requests' | 'console_errors' | 'console_error_kinds' | ItemList, number>;
  origins: OriginGroup[];
  errors: ErrorGroup[];
  items: ReadonlyMap<ItemList, Item[]>;
}

/** How much of the findings a level shows: the digest tries each in turn until it fits its budget. */
export interface DigestLevel {
  /** Origins and console error texts shown. */
  groups: number;
  /** Requests shown per origin. */
  examples: number;
  /** Characters of a text (an error, a URL, a message). */
  text: number;
  /** Findings shown per other list. */
  items: number;
}

export const DIGEST_LEVELS: readonly DigestLevel[] = [
  { groups: 10, examples: 3, text: 300, items: 10 },
  { groups: 8, examples: 2, text: 200, items: 6 },
  { groups: 6, examples: 1, text: 140, items: 4 },
  { groups: 4, examples: 1, text: 100, items: 3 },
  { groups: 2, examples: 1, text: 80, items: 2 },
  { groups: 1, examples: 1, text: 60, items: 1 },
];

/** The findings a level shows, as the answer's fields; what was left out in `left_out`. */
export function renderFindings(findings: Findings, level: DigestLevel): { fields: Record<string, unknown>; causes: Set<string> } {
  const fields: Record<string, unknown> = {};
  const causes = new Set<string>();
  const leftOut: Record<string, number> = {};
  const cause = (occurrence: Occurrence) => {
    if (occurrence.caused_by !== undefined) causes.add(occurrence.caused_by);
  };
  if (findings.origins.length > 0) {
    fields.failed_requests = findings.origins.slice(0, level.groups).map((group) => {
      const examples = [...group.examples.values()].sort((a, b) => b.count - a.count || a.seq - b.seq);
      const shown = examples.slice(0, level.examples);
      for (const example of shown) cause(example);
      return dropUndefined({
        origin: group.origin,
        count: group.count,
        outcomes: Object.fromEntries(group.outcomes),
        first_ts: isoTime(group.first.ts),
        requests: shown.map((example) =>
          dropUndefined({
            seq: example.seq,
            caused_by: example.caused_by,
            method: example.method,
            url: cutString(example.url, level.text),
            status: example.status,
            error: example.error,
            request_id: example.request_id,
            resource_type: example.resource_type,
            times: example.count > 1 ? example.count : undefined,
          }),
        ),
        more_distinct_requests: examples.length > shown.length ? examples.length - shown.length : undefined,
      });
    });
    if (findings.origins.length > level.groups) leftOut.failed_request_origins = findings.origins.length - level.groups;
  }
  if (findings.errors.length > 0) {
    fields.console_errors = findings.errors.slice(0, level.groups).map((group) => {
      cause(group.first);
      return dropUndefined({
        text: cutString(group.text, level.text),
        count: group.count,
        variants:
          group.variants.size > 1 ? `${group.variants.size}${group.variants.size >= MAX_VARIANTS ? '+' : ''} texts differing in their numbers` : undefined,
        first: dropUndefined({
          ...occurrence(group.first),
          source: group.first.source === undefined ? undefined : cutString(group.first.source, level.text),
          url: group.first.url === undefined ? undefined : cutString(group.first.url, level.text),
        }),
        seqs: group.seqs.slice(0, Math.max(1, level.examples + 1)),
      });
    });
    if (findings.errors.length > level.groups) leftOut.console_error_kinds = findings.errors.length - level.groups;
  }
  for (const list of ITEM_LISTS) {
    const items = findings.items.get(list)!;
    if (items.length === 0) continue;
    fields[list] = items.slice(0, level.items).map((item) => {
      cause(item);
      const shown: Record<string, unknown> = { ...occurrence(item) };
      for (const [key, value] of Object.entries(item)) {
        if (key === 'seq' || key === 'ts' || key === 'caused_by' || value === undefined) continue;
        shown[key] = typeof value === 'string' ? cutString(value, level.text) : value;
      }
      return shown;
    });
    const total = findings.totals[list];
    if (total > level.items) leftOut[list] = total - Math.min(level.items, items.length);
  }
  if (Object.keys(leftOut).length > 0) fields.left_out = leftOut;
  return { fields, causes };
}

/** The one-line summary of every finding's count (never capped). */
export function summaryOf(findings: Findings): string {
  const t = findings.totals;
  const parts: string[] = [];
  const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
  if (t.failed_requests > 0) parts.push(`${plural(t.failed_requests, 'failed request')} (${plural(findings.origins.length, 'origin')})`);
  if (t.console_errors > 0) parts.push(`${plural(t.console_errors, 'console error')} (${plural(t.console_error_kinds, 'kind')})`);
  if (t.crashes > 0) parts.push(plural(t.crashes, 'crash', 'crashes'));
  if (t.oom_kills > 0) parts.push(plural(t.oom_kills, 'OOM kill'));
  if (t.hangs > 0) parts.push(plural(t.hangs, 'hang'));
  if (t.dialogs > 0) parts.push(plural(t.dialogs, 'dialog'));
  if (t.downloads > 0) parts.push(plural(t.downloads, 'download'));
  if (t.unsettled_navigations > 0) parts.push(plural(t.unsettled_navigations, 'navigation that never settled', 'navigations that never settled'));
  if (t.telemetry_gaps > 0) parts.push(plural(t.telemetry_gaps, 'telemetry gap'));
  if (t.failed_actions > 0) parts.push(plural(t.failed_actions, 'failed action'));
  return parts.length === 0 ? 'nothing went wrong in the events read' : parts.join(', ');
}

/** seq, ts (RFC 3339) and caused_by of a finding, first in its object. */
function occurrence(at: Occurrence): Record<string, unknown> {
  return dropUndefined({ seq: at.seq, ts: isoTime(at.ts), caused_by: at.caused_by });
}

/** An action in a few words: its kind and what it did (docs/events.md "Control events"). */
export function describeAction(event: TelemetryEvent): string {
  switch (event.type) {
    case 'cdp_command': {
      const data = event.data;
      const detail = [data?.event_type, data?.key, data?.url].filter((v) => v !== undefined).join(' ');
      return `CDP ${data?.method ?? '?'}${detail ? ` ${detail}` : ''}`;
    }
    case 'api_call':
      return `API ${event.data?.operation_id ?? '?'} (${String(event.data?.status)})`;
    case 'computer_action':
      return `computer ${event.data?.action ?? '?'}`;
    default:
      return event.type;
  }
}

/** `scheme://host[:port]` of a URL; the scheme alone for data:, blob: and the like. */
export function originOf(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.origin === 'null' ? parsed.protocol : parsed.origin;
  } catch {
    return url.slice(0, 40);
  }
}

function dropUndefined<T extends Record<string, unknown>>(object: T): T {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)) as T;
}
