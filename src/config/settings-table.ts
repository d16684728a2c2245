// The agent's settings table (docs/configuration.md): one row per flag and its variable, used by
// the parser (src/config.ts), the options check (options.ts), --help (help.ts) and
// docs/configuration.md (scripts/docs/configuration.ts). A plain flag is one row; `custom` rows
// are read by hand (tokens.ts, telemetry-setting.ts, otlp-settings.ts). Also the value kinds of
// the agent's settings (the generic ones live in src/settings.ts) and the defaults.

import { randomBytes } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { DEFAULT_OTLP_CATEGORIES, DEFAULT_OTLP_PROTOCOL, DEFAULT_OTLP_QUEUE_BYTES, DEFAULT_OTLP_QUEUE_EVENTS, otlpKinds } from '../export/otlp-config.ts';
import { DEFAULT_UPLOAD_IDLE_MS } from '../fs/write-file.ts';
import { hostListKind } from '../host-names.ts';
import { DEFAULT_HEADERS_TIMEOUT_MS } from '../http-timeouts.ts';
import { DEFAULT_LIMITS, type Limits } from '../limits.ts';
import { SCOPES } from './scopes.ts';
import { choiceKind, hostKind, integerKind, LOG_LEVELS, logLevelKind, portKind, stringKind, type Setting, type ValueKind } from '../settings.ts';

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 10001;
export const DEFAULT_RING_EVENTS = 16384;
export const DEFAULT_RING_BYTES = 64 * 1024 * 1024;
export const DEFAULT_KEEPALIVE_MS = 15000;
export const KEEPALIVE_MS_MIN = 10;
export const KEEPALIVE_MS_MAX = 3_600_000;
export const UPLOAD_IDLE_MS_MAX = 3_600_000;
export const HEADERS_TIMEOUT_MS_MIN = 100;
export const HEADERS_TIMEOUT_MS_MAX = 600_000;
/** Fan-out pacing while events keep coming (docs/events.md "Delivery", docs/decisions.md). */
export const DEFAULT_STREAM_PACE_MS = 1;
export const DEFAULT_STREAM_LOAD_PACE_MS = 8;
/** While a tab loads, the CDP socket is read at most this often (docs/performance.md). */
export const DEFAULT_LOAD_CDP_READ_MS = 8;
export const STREAM_PACE_MS_MAX = 100;
export const DEFAULT_RETAIN_BYTES = 1024 * 1024 * 1024;
export const DEFAULT_RETAIN_HOURS = 72;
/** The size cap of one replay (docs/replay.md "Limits"). */
export const DEFAULT_REPLAY_MAX_BYTES = 512 * 1024 * 1024;
/** The system-wide data directory, used when writable. */
export const SYSTEM_DATA_DIR = '/var/lib/browser-telemetry-agent';

/**
 * The command line's default data directory: /var/lib/browser-telemetry-agent when it is writable
 * or can be created (its parent is writable), else `$XDG_STATE_HOME/browser-telemetry-agent`
 * (default ~/.local/state/…). Only looks: the store creates the directory (mode 0700) at start-up,
 * so reading the command line has no side effects.
 */
export function defaultDataDir(env: Record<string, string | undefined> = process.env): string {
  if (writable(SYSTEM_DATA_DIR) ?? writable(path.dirname(SYSTEM_DATA_DIR)) === true) return SYSTEM_DATA_DIR;
  const base = env.XDG_STATE_HOME || path.join(env.HOME || homedir(), '.local', 'state');
  return path.join(base, 'browser-telemetry-agent');
}

/** Whether a directory is writable; undefined when it does not exist. */
function writable(dir: string): boolean | undefined {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : false;
  }
}

// ---------------------------------------------------------------------------------------------
// Value kinds of the agent's settings (the generic ones live in settings.ts).

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
const BYTE_SUFFIXES: Record<string, number> = { '': 1, kib: KiB, mib: MiB, gib: GiB };

export const positiveInteger = integerKind(1, Number.MAX_SAFE_INTEGER, 'a positive integer');

/** Byte counts: a plain integer, or binary suffixes KiB/MiB/GiB (case-insensitive, `64MiB`). */
export const byteSize: ValueKind<number> = {
  expected: 'a positive byte count: an integer, optionally with a KiB, MiB or GiB suffix (e.g. 64MiB)',
  fromText(text) {
    const match = /^(\d+)\s?([kmg]ib)?$/i.exec(text);
    if (!match) return undefined;
    const bytes = Number(match[1]) * BYTE_SUFFIXES[(match[2] ?? '').toLowerCase()]!;
    return Number.isSafeInteger(bytes) && bytes >= 1 ? bytes : undefined;
  },
  fromValue: (value) => positiveInteger.fromValue(value),
  format: formatBytes,
};

/**
 * http(s) must be exactly `scheme://host:port[/]` (it is resolved through /json/version);
 * ws(s) is a browser websocket URL, any path.
 */
function isCdpUrl(text: string): boolean {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  if (url.username || url.password || url.hostname === '') return false;
  if (url.protocol === 'ws:' || url.protocol === 'wss:') return true;
  // The port must be written out: URL() drops a default port, so look at the text itself.
  if (url.protocol === 'http:' || url.protocol === 'https:') return /^https?:\/\/(\[[^\]]+\]|[^/?#:@]+):\d+\/?$/i.test(text);
  return false;
}

/**
 * `--fs-allow`: absolute directories separated by colons, like PATH. A comma is refused in the
 * text so that a comma-separated list is not taken for one directory's name.
 */
const directoryList: ValueKind<string[]> = {
  expected: 'absolute directories separated by colons (e.g. /var/lib/bta:/tmp)',
  fromText: (text) => (text.includes(',') ? undefined : directoryList.fromValue(text.split(':'))),
  fromValue(value) {
    if (!Array.isArray(value) || value.length === 0) return undefined;
    if (!value.every((dir) => typeof dir === 'string' && dir.startsWith('/') && !dir.includes('\0'))) return undefined;
    return (value as string[]).map((dir) => path.posix.resolve(dir));
  },
};

export const kinds = {
  cdpUrl: stringKind('an http(s)://host:port URL or a ws(s):// browser URL', isCdpUrl),
  nonEmpty: stringKind('a non-empty string', (s) => s.length > 0),
  host: hostKind,
  port: portKind,
  sessionId: stringKind('1 to 128 characters of A-Z a-z 0-9 _ -', (s) => /^[A-Za-z0-9_-]{1,128}$/.test(s)),
  token: stringKind('a non-empty token of printable ASCII without spaces, at most 4096 characters', isTokenText, true),
  keepaliveMs: integerKind(KEEPALIVE_MS_MIN, KEEPALIVE_MS_MAX, `an integer from ${KEEPALIVE_MS_MIN} to ${KEEPALIVE_MS_MAX}`),
  logLevel: logLevelKind,
  onOff: { ...choiceKind<boolean>({ on: true, off: false, true: true, false: false }, 'on, off, true or false'), format: (on: boolean) => (on ? 'on' : 'off') },
  boolean: choiceKind<boolean>({ true: true, false: false }, 'a boolean'),
  directoryList,
  hostList: hostListKind(),
  dataDir: stringKind('an absolute directory, or none', (s) => s === 'none' || (s.startsWith('/') && !s.includes('\0'))),
  streamPaceMs: integerKind(0, STREAM_PACE_MS_MAX, `an integer from 0 to ${STREAM_PACE_MS_MAX}`),
  uploadIdleMs: integerKind(1, UPLOAD_IDLE_MS_MAX, `an integer from 1 to ${UPLOAD_IDLE_MS_MAX}`),
  headersTimeoutMs: integerKind(HEADERS_TIMEOUT_MS_MIN, HEADERS_TIMEOUT_MS_MAX, `an integer from ${HEADERS_TIMEOUT_MS_MIN} to ${HEADERS_TIMEOUT_MS_MAX}`),
  hangMs: integerKind(0, 600_000, 'an integer from 0 to 600000'),
};

export function isTokenText(s: string): boolean {
  return /^[\x21-\x7e]{1,4096}$/.test(s);
}

// ---------------------------------------------------------------------------------------------
// The settings table. The limits and OTLP tables follow.

function formatBytes(n: number): string {
  if (n % GiB === 0) return `${n / GiB}GiB`;
  if (n % MiB === 0) return `${n / MiB}MiB`;
  if (n % KiB === 0) return `${n / KiB}KiB`;
  return String(n);
}

export const SETTINGS = {
  cdpUrl: {
    flag: 'cdp-url',
    env: 'CDP_URL',
    arg: '<url>',
    default: 'none (embedded mode)',
    meaning:
      'Existing Chromium: http(s)://host:port (resolved through /json/version at every connect) or a ws(s):// browser URL. Absent: the agent launches and owns a headless Chromium.',
    kind: kinds.cdpUrl,
  },
  chromePath: {
    flag: 'chrome-path',
    env: 'CHROME_PATH',
    arg: '<path>',
    default: 'search PATH',
    meaning: 'Chromium binary for embedded mode; by default the first of chromium, chromium-browser, google-chrome on PATH.',
    kind: kinds.nonEmpty,
  },
  host: {
    flag: 'host',
    env: 'HOST',
    arg: '<address>',
    defaultValue: DEFAULT_HOST,
    meaning: 'Listen address.',
    kind: kinds.host,
  },
  port: {
    flag: 'port',
    env: 'PORT',
    arg: '<port>',
    defaultValue: DEFAULT_PORT,
    meaning: 'Listen port, 0 to 65535; 0 picks a free one.',
    kind: kinds.port,
  },
  sessionId: {
    flag: 'session-id',
    env: 'SESSION_ID',
    arg: '<id>',
    default: 'random, 16 URL-safe characters',
    // 12 random bytes → 16 base64url characters.
    makeDefault: () => randomBytes(12).toString('base64url'),
    meaning: 'The {id} this agent answers to (1 to 128 of A-Z a-z 0-9 _ -); any other id is 404.',
    kind: kinds.sessionId,
  },
  token: {
    flag: 'token',
    env: 'AGENT_TOKEN',
    arg: '<token>',
    default: 'generated, printed',
    meaning:
      'Bearer token with every scope (printable ASCII, no spaces). Combines with --tokens-file; when neither is set a random token is generated and printed.',
    kind: kinds.token,
    custom: true,
  },
  tokensFile: {
    flag: 'tokens-file',
    env: 'AGENT_TOKENS_FILE',
    arg: '<path>',
    default: 'none',
    meaning: `JSON array of {"token": "...", "scopes": [...]}; scopes: ${SCOPES.join(', ')} (* is all). Tokens must be unique.`,
    kind: kinds.nonEmpty,
    custom: true,
  },
  telemetry: {
    flag: 'telemetry',
    env: 'TELEMETRY',
    arg: '<json|off>',
    default: '{"enabled":true}',
    meaning:
      'Initial telemetry config as JSON, e.g. {"browser":{"network":{"enabled":false}}}; omitted categories are on. "off" disables telemetry, "on" is the default.',
    kind: kinds.nonEmpty,
    custom: true,
  },
  ringEvents: {
    flag: 'ring-events',
    env: 'RING_EVENTS',
    arg: '<count>',
    defaultValue: DEFAULT_RING_EVENTS,
    meaning: 'Most events kept in the event log.',
    kind: positiveInteger,
  },
  ringBytes: {
    flag: 'ring-bytes',
    env: 'RING_BYTES',
    arg: '<size>',
    defaultValue: DEFAULT_RING_BYTES,
    meaning: 'Most serialized bytes kept in the event log.',
    kind: byteSize,
  },
  keepaliveMs: {
    flag: 'keepalive-ms',
    env: 'KEEPALIVE_MS',
    arg: '<ms>',
    defaultValue: DEFAULT_KEEPALIVE_MS,
    meaning: `SSE keepalive interval in milliseconds, ${KEEPALIVE_MS_MIN} to ${KEEPALIVE_MS_MAX}.`,
    kind: kinds.keepaliveMs,
  },
  streamPaceMs: {
    flag: 'stream-pace-ms',
    env: 'STREAM_PACE_MS',
    arg: '<ms>',
    defaultValue: DEFAULT_STREAM_PACE_MS,
    meaning: `While events keep coming, subscribers get them at most this many ms late, in one write per subscriber instead of one per CDP read; 0: at once. 0 to ${STREAM_PACE_MS_MAX}.`,
    kind: kinds.streamPaceMs,
  },
  streamLoadPaceMs: {
    flag: 'stream-load-pace-ms',
    env: 'STREAM_LOAD_PACE_MS',
    arg: '<ms>',
    defaultValue: DEFAULT_STREAM_LOAD_PACE_MS,
    meaning: `The same while a tab is loading (its main frame, until its load event): fewer, larger writes leave the cores to the page; 0: --stream-pace-ms applies then too. 0 to ${STREAM_PACE_MS_MAX}.`,
    kind: kinds.streamPaceMs,
  },
  loadCdpReadMs: {
    flag: 'load-cdp-read-ms',
    env: 'LOAD_CDP_READ_MS',
    arg: '<ms>',
    defaultValue: DEFAULT_LOAD_CDP_READ_MS,
    meaning: `While a tab is loading, Chromium's messages are read at most this often, many per read instead of a wake-up for every one or two (never while a command waits for its answer); 0: as they arrive. 0 to ${STREAM_PACE_MS_MAX}.`,
    kind: kinds.streamPaceMs,
  },
  logLevel: {
    flag: 'log-level',
    env: 'LOG_LEVEL',
    arg: '<level>',
    defaultValue: 'info',
    meaning: `pino level: ${LOG_LEVELS.join(', ')}. Logs are JSON lines on stdout.`,
    kind: kinds.logLevel,
  },
  hangThresholdMs: {
    flag: 'hang-threshold-ms',
    env: 'HANG_THRESHOLD_MS',
    arg: '<ms>',
    defaultValue: 5000,
    meaning:
      'A tab whose main thread does not answer within this many ms gets page_unresponsive (page_responsive when it answers); 0: no hang detection. Also the probe period.',
    kind: kinds.hangMs,
  },
  longTaskMs: {
    flag: 'long-task-ms',
    env: 'LONG_TASK_MS',
    arg: '<ms>',
    defaultValue: 200,
    meaning: 'Main-thread tasks at least this long are reported as page_long_task (category page; the browser reports tasks from 50 ms); 0: none.',
    kind: kinds.hangMs,
  },
  screenshots: {
    flag: 'screenshots',
    env: 'SCREENSHOTS',
    arg: '<on|off>',
    defaultValue: true,
    meaning: 'off stops monitor_screenshot capture (true and false are accepted too).',
    kind: kinds.onOff,
  },
  fsAllow: {
    flag: 'fs-allow',
    env: 'FS_ALLOW',
    arg: '<dirs>',
    default: 'anywhere',
    meaning:
      'Directories write_file may write under, separated by colons (/var/lib/bta:/tmp); symlinks are resolved before the check. /proc, /sys and /dev are refused regardless.',
    kind: kinds.directoryList,
  },
  allowedHosts: {
    flag: 'allowed-hosts',
    env: 'ALLOWED_HOSTS',
    arg: '<names>',
    defaultValue: [] as string[],
    default: 'none',
    meaning:
      'Comma-separated host names (or IP addresses) the agent answers to in the Host header, besides its listen address: on loopback the loopback addresses and localhost, on 0.0.0.0 or :: any IP address and localhost. Other Host headers get 421 (DNS rebinding).',
    kind: kinds.hostList,
  },
  dataDir: {
    flag: 'data-dir',
    env: 'DATA_DIR',
    arg: '<dir|none>',
    default: `${SYSTEM_DATA_DIR} when writable, else ~/.local/state/browser-telemetry-agent`,
    meaning:
      'Directory of the durable event store (seq survives restarts, history outlives the RAM ring); none keeps events in RAM only. startAgent() without it is RAM only.',
    kind: kinds.dataDir,
  },
  retainBytes: {
    flag: 'retain-bytes',
    env: 'RETAIN_BYTES',
    arg: '<size>',
    defaultValue: DEFAULT_RETAIN_BYTES,
    meaning:
      'Most bytes of events the store keeps, over every session in the data directory; oldest go first. Replays share it: they get what the events leave (docs/replay.md).',
    kind: byteSize,
  },
  retainHours: {
    flag: 'retain-hours',
    env: 'RETAIN_HOURS',
    arg: '<hours>',
    defaultValue: DEFAULT_RETAIN_HOURS,
    meaning: 'Hours an event is kept in the store, and a finished replay in the data directory.',
    kind: positiveInteger,
  },
  replayMaxBytes: {
    flag: 'replay-max-bytes',
    env: 'REPLAY_MAX_BYTES',
    arg: '<size>',
    defaultValue: DEFAULT_REPLAY_MAX_BYTES,
    meaning:
      'A recording (POST /browsers/{id}/replays) ends by itself at this file size (replay_stopped reason max_size), or earlier when the data directory reaches --retain-bytes.',
    kind: byteSize,
  },
  ffmpegPath: {
    flag: 'ffmpeg-path',
    env: 'FFMPEG_PATH',
    arg: '<path>',
    default: 'ffmpeg on PATH, else the npm package @ffmpeg-installer/linux-x64',
    meaning: 'The ffmpeg that encodes replays (H.264 in MP4 when it has libx264, else VP8 in WebM).',
    kind: kinds.nonEmpty,
  },
  uploadIdleMs: {
    flag: 'upload-idle-ms',
    env: 'UPLOAD_IDLE_MS',
    arg: '<ms>',
    defaultValue: DEFAULT_UPLOAD_IDLE_MS,
    meaning: `write_file: an upload that sends nothing for this long is dropped (408) and its temporary file removed; 1 to ${UPLOAD_IDLE_MS_MAX}.`,
    kind: kinds.uploadIdleMs,
  },
  headersTimeoutMs: {
    flag: 'headers-timeout-ms',
    env: 'HEADERS_TIMEOUT_MS',
    arg: '<ms>',
    defaultValue: DEFAULT_HEADERS_TIMEOUT_MS,
    meaning: `A connection that has not sent a request's whole headers this long after it opened or after the request's first byte gets 408 and is closed, within 1 s more; ${HEADERS_TIMEOUT_MS_MIN} to ${HEADERS_TIMEOUT_MS_MAX}.`,
    kind: kinds.headersTimeoutMs,
  },
} satisfies Record<string, Setting<unknown>>;

const LIMIT_MEANINGS: Record<keyof Limits, string> = {
  maxBodyBytes: 'Response body kept in network_response.',
  maxBodyFetchBytes: 'Largest response body the agent asks Chromium for.',
  maxPostDataBytes: 'post_data kept in network_request.',
  maxConsoleTextBytes: 'Console text and each args item.',
  maxConsoleArgs: 'Console args kept per message.',
  maxHeaderValueBytes: 'Each header value.',
  maxStackFrames: 'Frames kept in stack_trace (the parent chain counts too).',
  maxEventDataBytes: 'Serialized data of one event.',
  maxUploadBytes: 'write_file body.',
};

export const LIMIT_KEYS = Object.keys(DEFAULT_LIMITS) as Array<keyof Limits>;

/** Limits named `...Bytes` take byte sizes; the others are counts. Flag names follow the keys. */
export const LIMIT_SETTINGS = Object.fromEntries(
  LIMIT_KEYS.map((key) => {
    const words = key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    const isBytes = key.endsWith('Bytes');
    const setting: Setting<number> = {
      flag: words,
      env: words.replace(/-/g, '_').toUpperCase(),
      arg: isBytes ? '<size>' : '<count>',
      defaultValue: DEFAULT_LIMITS[key],
      meaning: LIMIT_MEANINGS[key],
      kind: isBytes ? byteSize : positiveInteger,
    };
    return [key, setting];
  }),
) as Record<keyof Limits, Setting<number>>;

/**
 * OTLP export (docs/export.md). The endpoint and the protocol are the OTel spec's variables; their
 * logs-specific ones (OTEL_EXPORTER_OTLP_LOGS_*) are read beside them in readOtlp.
 */
export const OTLP_SETTINGS = {
  otlpEndpoint: {
    flag: 'otlp-endpoint',
    env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    arg: '<url>',
    default: 'none (export off)',
    meaning:
      'Export events as OTLP log records to this OTLP/HTTP receiver: a base URL, /v1/logs is appended (OTEL_EXPORTER_OTLP_LOGS_ENDPOINT gives the full URL instead). Request headers come from OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_LOGS_HEADERS (key=value,key2=value2).',
    kind: otlpKinds.endpoint,
  },
  otlpProtocol: {
    flag: 'otlp-protocol',
    env: 'OTEL_EXPORTER_OTLP_PROTOCOL',
    arg: '<protocol>',
    default: DEFAULT_OTLP_PROTOCOL,
    meaning: 'http/protobuf or http/json; OTEL_EXPORTER_OTLP_LOGS_PROTOCOL wins over the generic variable.',
    kind: otlpKinds.protocol,
  },
  otlpCategories: {
    flag: 'otlp-categories',
    env: 'OTLP_CATEGORIES',
    arg: '<list>',
    default: DEFAULT_OTLP_CATEGORIES.join(','),
    meaning:
      'Categories exported, comma-separated (console, network, page, interaction, snapshot, monitor, screenshot, control, connection, system, captcha), or all.',
    kind: otlpKinds.categories,
  },
  otlpQueueEvents: {
    flag: 'otlp-queue-events',
    env: 'OTLP_QUEUE_EVENTS',
    arg: '<count>',
    defaultValue: DEFAULT_OTLP_QUEUE_EVENTS,
    meaning: 'Events waiting for the receiver at most (while it is slow or down); newer ones are dropped and counted in bta_otlp_events_dropped_total.',
    kind: positiveInteger,
  },
  otlpQueueBytes: {
    flag: 'otlp-queue-bytes',
    env: 'OTLP_QUEUE_BYTES',
    arg: '<size>',
    defaultValue: DEFAULT_OTLP_QUEUE_BYTES,
    meaning: 'Serialized bytes of the waiting events at most.',
    kind: byteSize,
  },
} satisfies Record<string, Setting<unknown>>;

export const ALL_SETTINGS: Array<Setting<unknown>> = [...Object.values(SETTINGS), ...Object.values(LIMIT_SETTINGS), ...Object.values(OTLP_SETTINGS)];

/** Every environment variable a setting of the agent is read from (besides the OTEL_ ones the OTLP export reads by hand). */
export const AGENT_ENV_VARS: readonly string[] = ALL_SETTINGS.flatMap((setting) => (setting.env === undefined ? [] : [setting.env]));

/** The agent's settings by table, for docs/configuration.md (scripts/docs/configuration.ts). */
export const AGENT_SETTING_TABLES = { general: SETTINGS, limits: LIMIT_SETTINGS, otlp: OTLP_SETTINGS } as const;
