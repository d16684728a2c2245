// The OTLP export's settings (docs/export.md "Flags"): the resolved shape, its defaults, and the
// value kinds config.ts reads flags and the standard OTEL_EXPORTER_OTLP_* variables with.

import { EVENT_CATEGORIES, type EventCategory } from '../../injected/schema.ts';
import type { ValueKind } from '../settings.ts';

export type OtlpProtocol = 'http/protobuf' | 'http/json';
export const OTLP_PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'http/json'];

export interface OtlpConfig {
  /** The full logs URL batches are POSTed to (…/v1/logs). */
  url: string;
  protocol: OtlpProtocol;
  /** Categories exported (`event.category`); others are not queued. */
  categories: EventCategory[];
  /** Request headers, from OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_LOGS_HEADERS. */
  headers: Record<string, string>;
  /** Events queued (waiting or in flight) at most; newer ones are dropped and counted. */
  queueEvents: number;
  /** Frame bytes of the queued events at most (one event is queued whatever its size). */
  queueBytes: number;
}

/** What startAgent({ otlp }) takes: the URL, everything else optional. */
export interface OtlpOptions extends Partial<OtlpConfig> {
  url: string;
}

/** Screenshots (base64 PNGs) and DOM snapshots are large, and no log backend shows them. */
export const DEFAULT_OTLP_CATEGORIES: readonly EventCategory[] = EVENT_CATEGORIES.filter((c) => c !== 'screenshot' && c !== 'snapshot');
export const DEFAULT_OTLP_PROTOCOL: OtlpProtocol = 'http/protobuf';
export const DEFAULT_OTLP_QUEUE_EVENTS = 8192;
export const DEFAULT_OTLP_QUEUE_BYTES = 16 * 1024 * 1024;

/** The OTLP/HTTP path of the logs signal, appended to a base endpoint. */
const LOGS_PATH = 'v1/logs';

/**
 * OTEL_EXPORTER_OTLP_ENDPOINT semantics: a base URL, to which `v1/logs` is appended (after a `/`
 * when the base lacks one). OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, by contrast, is used as is.
 */
export function logsUrlFromEndpoint(base: string): string {
  return base.endsWith('/') ? `${base}${LOGS_PATH}` : `${base}/${LOGS_PATH}`;
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' && !/\s/.test(text);
  } catch {
    return false;
  }
}

/** The URL without credentials or query, for log lines. */
export function describeUrl(text: string): string {
  const url = new URL(text);
  return `${url.protocol}//${url.host}${url.pathname}`;
}

const httpUrl = (expected: string): ValueKind<string> => ({
  expected,
  fromText: (text) => (isHttpUrl(text) ? text : undefined),
  fromValue: (value) => (typeof value === 'string' && isHttpUrl(value) ? value : undefined),
});

/** `key1=value1,key2=value2`, values percent-decoded (the OTel spec's format for *_HEADERS). */
function parseHeaderList(text: string): Record<string, string> | undefined {
  const headers: Record<string, string> = {};
  for (const item of text.split(',')) {
    if (item.trim() === '') continue;
    const eq = item.indexOf('=');
    if (eq === -1) return undefined;
    const name = item.slice(0, eq).trim();
    let value: string;
    try {
      value = decodeURIComponent(item.slice(eq + 1).trim());
    } catch {
      return undefined;
    }
    if (!isHeaderName(name) || !isHeaderValue(value)) return undefined;
    headers[name] = value;
  }
  return Object.keys(headers).length > 0 ? headers : undefined;
}

/** RFC 9110 token. */
function isHeaderName(name: string): boolean {
  return /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name);
}

function isHeaderValue(value: string): boolean {
  return /^[\t\x20-\x7e\x80-\xff]*$/.test(value);
}

function checkHeaders(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const entries = Object.entries(value);
  if (!entries.every(([name, v]) => isHeaderName(name) && typeof v === 'string' && isHeaderValue(v))) return undefined;
  return Object.fromEntries(entries);
}

function checkCategories(value: unknown): EventCategory[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  if (!value.every((c) => (EVENT_CATEGORIES as readonly unknown[]).includes(c))) return undefined;
  return [...new Set(value as EventCategory[])];
}

export const otlpKinds = {
  /** `--otlp-endpoint`, OTEL_EXPORTER_OTLP_ENDPOINT: a base URL. */
  endpoint: httpUrl('an http(s):// base URL of an OTLP/HTTP receiver (e.g. http://127.0.0.1:4318); /v1/logs is appended'),
  /** OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, startAgent's `otlp.url`: the full logs URL. */
  url: httpUrl('the full http(s):// URL of an OTLP/HTTP logs receiver (e.g. http://127.0.0.1:4318/v1/logs)'),
  protocol: {
    expected: `${OTLP_PROTOCOLS.join(' or ')} (grpc is not supported)`,
    fromText: (text) => OTLP_PROTOCOLS.find((p) => p === text.trim().toLowerCase()),
    fromValue: (value) => OTLP_PROTOCOLS.find((p) => p === value),
  } satisfies ValueKind<OtlpProtocol>,
  categories: {
    expected: `a comma-separated list of ${EVENT_CATEGORIES.join(', ')}, or all`,
    fromText(text) {
      const words = text.split(',').map((w) => w.trim().toLowerCase());
      if (words.length === 1 && words[0] === 'all') return [...EVENT_CATEGORIES];
      return checkCategories(words);
    },
    fromValue: checkCategories,
  } satisfies ValueKind<EventCategory[]>,
  /** Header values are credentials: never echoed in errors. */
  headers: {
    expected: 'key=value pairs separated by commas, values percent-encoded (e.g. api-key=abc%20def,x-team=web)',
    secret: true,
    fromText: parseHeaderList,
    fromValue: checkHeaders,
  } satisfies ValueKind<Record<string, string>>,
};
