// Flags + environment → the gateway's validated configuration, in the agent's style (shared
// parsing in src/settings.ts): flags win over env vars, an empty variable counts as unset, a bad
// value is one ConfigError line naming the flag (main.ts prints it and exits 2). Two commands:
// serving (the default) and `create-key`, which prints a new API key (the bootstrap).

import { resolve } from 'node:path';
import {
  choiceKind,
  ConfigError,
  hostKind,
  integerKind,
  logLevelKind,
  LOG_LEVELS,
  checkValue,
  commandHelpText,
  flagHelpLine,
  scanArgv,
  SettingReader,
  stringKind,
  type LogLevel,
  type Setting,
  portKind,
} from 'browser-telemetry-agent/program';
import { MAX_DAYS_TO_EXPIRE } from './api-key.ts';
import { hostListKind } from 'browser-telemetry-agent/http-kit';
import type { StorageConfig } from './storage/open-store.ts';

export const DEFAULT_GATEWAY_HOST = '127.0.0.1';
export const DEFAULT_GATEWAY_PORT = 10000;
/** Relative to the working directory. */
export const DEFAULT_DATA_DIR = 'gateway-data';
/**
 * Reads, PATCH and DELETE (docs/gateway.md "Timeouts"): an agent answers them in milliseconds, and
 * the official client gives up and retries sooner than a longer wait would.
 */
export const DEFAULT_AGENT_RESPONSE_TIMEOUT_MS = 10_000;
/** A computer batch: the waiting it declares (sleeps, delays, motion) plus this margin for its actions. */
export const DEFAULT_AGENT_BATCH_MARGIN_MS = 10_000;
export const DEFAULT_AGENT_IDLE_TIMEOUT_MS = 30_000;
/** The agent's own default --keepalive-ms (src/config.ts, DEFAULT_KEEPALIVE_MS). */
export const DEFAULT_AGENT_KEEPALIVE_MS = 15_000;
/** The longest period between re-checks of open forwarded streams' keys (http/key-watch.ts). */
export const MAX_KEY_RECHECK_MS = 30_000;
const TIMEOUT_MS_MIN = 10;
const TIMEOUT_MS_MAX = 3_600_000;
/** docs/gateway.md "Retention". */
export const DEFAULT_ARCHIVE_RETAIN_DAYS = 30;
const MAX_ARCHIVE_RETAIN_DAYS = 3650;
/** docs/gateway.md "Ending": an agent unheard of for this long has ended its session. */
export const DEFAULT_ARCHIVE_SILENCE_MS = 300_000;
const ARCHIVE_SILENCE_MS_MIN = 1000;
const ARCHIVE_SILENCE_MS_MAX = 86_400_000;
/**
 * docs/gateway.md "Leases": a dead holder's sessions are taken over within a lease and a third
 * (the renewal period): 20 s by default, inside the 30 s the archive promises.
 */
export const DEFAULT_ARCHIVE_LEASE_MS = 15_000;
const ARCHIVE_LEASE_MS_MIN = 100;
const ARCHIVE_LEASE_MS_MAX = 22_500;
/** docs/viewer.md "Through the gateway": e.g. `openssl rand -base64 32` (44 characters). */
export const MIN_VIEWER_SECRET_CHARS = 32;

/** The archive's settings (docs/gateway.md). */
export interface ArchiveConfig {
  /** Whether this instance follows sessions (takes leases); reads are served either way. */
  follow: boolean;
  retainDays: number;
  /** A session whose agent has not answered for this long is ended. */
  silenceMs: number;
  /** A lease lasts this long unless renewed. */
  leaseMs: number;
}

export interface GatewayConfig {
  host: string;
  port: number;
  /** Canonical host names answered besides the listen address (src/http/host-policy.ts). */
  allowedHosts: string[];
  storage: StorageConfig;
  logLevel: LogLevel;
  /** Reads, PATCH and DELETE: from the request sent to the agent's response head; then 504. */
  agentResponseTimeoutMs: number;
  /** A computer batch: its declared waiting plus this, to the response head; then 504. */
  agentBatchMarginMs: number;
  /** Non-stream routes: the longest the agent may leave a body (either way) without a byte. */
  agentIdleTimeoutMs: number;
  /** The agents' SSE keepalive period: a stream without a byte for 3 of them is dead. */
  agentKeepaliveMs: number;
  /** Period of the re-check of open streams' keys (deleted or expired elsewhere). */
  keyRecheckMs: number;
  /** POST /browsers asks the agent whether it serves the session before registering it. */
  checkAgent: boolean;
  archive: ArchiveConfig;
  /**
   * The secret the viewer's tickets and cookies are signed with (docs/viewer.md "Through the
   * gateway"), shared by every instance; undefined: a random key per process.
   */
  viewerSecret: string | undefined;
}

export interface CreateKeyOptions {
  storage: StorageConfig;
  name: string;
  /** Project id or name; absent for an organization-wide key. */
  project?: string;
  /** Absent: the key never expires. */
  daysToExpire?: number;
}

export type GatewayCommandLine =
  { kind: 'serve'; config: GatewayConfig } | { kind: 'create-key'; options: CreateKeyOptions } | { kind: 'help'; text: string } | { kind: 'version' };

/** Options of startGateway(): every field optional, defaults as on the command line. */
export interface GatewayConfigOptions {
  host?: string;
  port?: number;
  /** SQLite under this directory (the default backend). */
  dataDir?: string;
  /** PostgreSQL; excludes dataDir. */
  databaseUrl?: string;
  logLevel?: LogLevel;
  allowedHosts?: string[];
  agentResponseTimeoutMs?: number;
  agentBatchMarginMs?: number;
  agentIdleTimeoutMs?: number;
  agentKeepaliveMs?: number;
  /** 10 ms to 30 s (the default). */
  keyRecheckMs?: number;
  archiveFollow?: boolean;
  checkAgent?: boolean;
  archiveRetainDays?: number;
  archiveSilenceMs?: number;
  archiveLeaseMs?: number;
  /** At least 32 characters; absent: a random key per process. */
  viewerSecret?: string;
}

function isPostgresUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'postgres:' || url.protocol === 'postgresql:') && url.hostname !== '';
  } catch {
    return false;
  }
}

const kinds = {
  nonEmpty: stringKind('a non-empty string', (s) => s.length > 0),
  hostList: hostListKind(),
  timeoutMs: integerKind(TIMEOUT_MS_MIN, TIMEOUT_MS_MAX, `an integer from ${TIMEOUT_MS_MIN} to ${TIMEOUT_MS_MAX}`),
  keyRecheckMs: integerKind(10, MAX_KEY_RECHECK_MS, `an integer from 10 to ${MAX_KEY_RECHECK_MS}`),
  // The URL usually carries a password: never echoed.
  databaseUrl: stringKind('a postgres:// or postgresql:// URL with a host', isPostgresUrl, true),
  keyName: stringKind('1 to 255 characters', (s) => s.length > 0 && Array.from(s).length <= 255),
  days: integerKind(1, MAX_DAYS_TO_EXPIRE, `an integer from 1 to ${MAX_DAYS_TO_EXPIRE}`),
  onOff: choiceKind<boolean>({ on: true, off: false, true: true, false: false }, 'on, off, true or false'),
  retainDays: integerKind(1, MAX_ARCHIVE_RETAIN_DAYS, `an integer from 1 to ${MAX_ARCHIVE_RETAIN_DAYS}`),
  silenceMs: integerKind(ARCHIVE_SILENCE_MS_MIN, ARCHIVE_SILENCE_MS_MAX, `an integer from ${ARCHIVE_SILENCE_MS_MIN} to ${ARCHIVE_SILENCE_MS_MAX}`),
  leaseMs: integerKind(ARCHIVE_LEASE_MS_MIN, ARCHIVE_LEASE_MS_MAX, `an integer from ${ARCHIVE_LEASE_MS_MIN} to ${ARCHIVE_LEASE_MS_MAX}`),
  // A signing secret: never echoed.
  viewerSecret: stringKind(`at least ${MIN_VIEWER_SECRET_CHARS} characters`, (s) => s.length >= MIN_VIEWER_SECRET_CHARS, true),
};

const STORAGE_SETTINGS = {
  dataDir: {
    flag: 'data-dir',
    env: 'GATEWAY_DATA_DIR',
    arg: '<dir>',
    default: `./${DEFAULT_DATA_DIR}`,
    meaning: 'SQLite storage: the directory of gateway.sqlite3, created and migrated on start. The embedded default; needs no database server.',
    kind: kinds.nonEmpty,
  },
  databaseUrl: {
    flag: 'database-url',
    env: 'GATEWAY_DATABASE_URL',
    arg: '<url>',
    default: 'none (SQLite)',
    meaning:
      'PostgreSQL storage instead of SQLite: postgres://user:password@host:port/database, migrated on start. For several gateway instances sharing one state. Excludes --data-dir.',
    kind: kinds.databaseUrl,
  },
} satisfies Record<string, Setting<unknown>>;

const SERVE_SETTINGS = {
  host: {
    flag: 'host',
    env: 'GATEWAY_HOST',
    arg: '<address>',
    default: DEFAULT_GATEWAY_HOST,
    meaning: 'Listen address.',
    kind: hostKind,
  },
  port: {
    flag: 'port',
    env: 'GATEWAY_PORT',
    arg: '<port>',
    default: String(DEFAULT_GATEWAY_PORT),
    meaning: 'Listen port, 0 to 65535; 0 picks a free one.',
    kind: portKind,
  },
  // GATEWAY_ like every gateway variable: the agent's ALLOWED_HOSTS on the same machine must not
  // configure the gateway too.
  allowedHosts: {
    flag: 'allowed-hosts',
    env: 'GATEWAY_ALLOWED_HOSTS',
    arg: '<names>',
    default: 'none',
    meaning:
      'Comma-separated host names (or IP addresses) the gateway answers to in the Host header, besides its listen address: on loopback the loopback addresses and localhost, on 0.0.0.0 or :: any IP address and localhost. Other Host headers get 421 misdirected_request (DNS rebinding).',
    kind: kinds.hostList,
  },
  ...STORAGE_SETTINGS,
  logLevel: {
    flag: 'log-level',
    env: 'GATEWAY_LOG_LEVEL',
    arg: '<level>',
    default: 'info',
    meaning: `pino level: ${LOG_LEVELS.join(', ')}. Logs are JSON lines on stdout.`,
    kind: logLevelKind,
  },
  agentResponseTimeoutMs: {
    flag: 'agent-response-timeout-ms',
    env: 'GATEWAY_AGENT_RESPONSE_TIMEOUT_MS',
    arg: '<ms>',
    default: String(DEFAULT_AGENT_RESPONSE_TIMEOUT_MS),
    meaning: `Longest wait for an agent's response head once the request is sent, for reads, PATCH and DELETE; then 504 browser_unavailable. ${TIMEOUT_MS_MIN} to ${TIMEOUT_MS_MAX}.`,
    kind: kinds.timeoutMs,
  },
  agentBatchMarginMs: {
    flag: 'agent-batch-margin-ms',
    env: 'GATEWAY_AGENT_BATCH_MARGIN_MS',
    arg: '<ms>',
    default: String(DEFAULT_AGENT_BATCH_MARGIN_MS),
    meaning: `A computer batch's wait for the response head: the waiting it declares (sleeps, delays, motion durations) plus this; then 504 browser_unavailable. ${TIMEOUT_MS_MIN} to ${TIMEOUT_MS_MAX}.`,
    kind: kinds.timeoutMs,
  },
  agentIdleTimeoutMs: {
    flag: 'agent-idle-timeout-ms',
    env: 'GATEWAY_AGENT_IDLE_TIMEOUT_MS',
    arg: '<ms>',
    default: String(DEFAULT_AGENT_IDLE_TIMEOUT_MS),
    meaning: `Longest an agent may leave a request or response body without a byte (all but the telemetry streams), and, for write_file, the wait for the response head after the body; then 504, or the response is cut. ${TIMEOUT_MS_MIN} to ${TIMEOUT_MS_MAX}.`,
    kind: kinds.timeoutMs,
  },
  agentKeepaliveMs: {
    flag: 'agent-keepalive-ms',
    env: 'GATEWAY_AGENT_KEEPALIVE_MS',
    arg: '<ms>',
    default: String(DEFAULT_AGENT_KEEPALIVE_MS),
    meaning: `The agents' --keepalive-ms: a telemetry stream without a byte for 3 such periods has a dead agent and is ended (504 before its head). ${TIMEOUT_MS_MIN} to ${TIMEOUT_MS_MAX}.`,
    kind: kinds.timeoutMs,
  },
  checkAgent: {
    flag: 'check-agent',
    env: 'GATEWAY_CHECK_AGENT',
    arg: '<on|off>',
    default: 'on',
    meaning:
      'POST /browsers asks the agent (GET /browsers/{id} with agent_token, within the agent timeouts) whether it serves the session before registering it: a session it does not serve or a token it refuses is 400, an agent that does not answer 502 or 504. off: registered unchecked (a provisioner that registers before the agent is up).',
    kind: kinds.onOff,
  },
  archiveFollow: {
    flag: 'archive-follow',
    env: 'GATEWAY_ARCHIVE_FOLLOW',
    arg: '<on|off>',
    default: 'on',
    meaning:
      "Whether this instance follows live sessions' telemetry streams into the archive (one instance per session, by lease). off: it only serves reads from the archive.",
    kind: kinds.onOff,
  },
  archiveRetainDays: {
    flag: 'archive-retain-days',
    env: 'GATEWAY_ARCHIVE_RETAIN_DAYS',
    arg: '<days>',
    default: String(DEFAULT_ARCHIVE_RETAIN_DAYS),
    meaning: `Days an archived event is kept; an ended session goes with its last event. 1 to ${MAX_ARCHIVE_RETAIN_DAYS}.`,
    kind: kinds.retainDays,
  },
  archiveSilenceMs: {
    flag: 'archive-silence-ms',
    env: 'GATEWAY_ARCHIVE_SILENCE_MS',
    arg: '<ms>',
    default: String(DEFAULT_ARCHIVE_SILENCE_MS),
    meaning: `A live session whose agent has not answered for this long (vanished without a DELETE) is marked ended. ${ARCHIVE_SILENCE_MS_MIN} to ${ARCHIVE_SILENCE_MS_MAX}.`,
    kind: kinds.silenceMs,
  },
  archiveLeaseMs: {
    flag: 'archive-lease-ms',
    env: 'GATEWAY_ARCHIVE_LEASE_MS',
    arg: '<ms>',
    default: String(DEFAULT_ARCHIVE_LEASE_MS),
    meaning: `How long an instance's claim to follow a session lasts unless renewed (every third of it); a dead instance's sessions are taken over within 4/3 of it. ${ARCHIVE_LEASE_MS_MIN} to ${ARCHIVE_LEASE_MS_MAX}.`,
    kind: kinds.leaseMs,
  },
  viewerSecret: {
    flag: 'viewer-secret',
    env: 'GATEWAY_VIEWER_SECRET',
    arg: '<secret>',
    default: 'random per process',
    meaning: `Signs the live viewer's one-time links and cookies (docs/viewer.md "Through the gateway"); at least ${MIN_VIEWER_SECRET_CHARS} characters, e.g. from openssl rand -base64 32. Every instance behind one address must have the same one. Without it each process makes its own: a link or a viewer then works only on the instance that minted it, and not after a restart. Prefer the environment variable (a flag shows in the process list).`,
    kind: kinds.viewerSecret,
  },
} satisfies Record<string, Setting<unknown>>;

/** The command that prints a new API key, and its settings. */
export const CREATE_KEY_COMMAND = 'create-key';

const CREATE_KEY_SETTINGS = {
  name: {
    flag: 'name',
    arg: '<name>',
    default: 'required',
    meaning: 'Label of the new key (1 to 255 characters).',
    kind: kinds.keyName,
  },
  project: {
    flag: 'project',
    arg: '<id|name>',
    default: 'none (organization-wide)',
    meaning: 'Scope the key to this project (its id or name); without it the key is organization-wide.',
    kind: kinds.nonEmpty,
  },
  daysToExpire: {
    flag: 'days-to-expire',
    arg: '<days>',
    default: 'never',
    meaning: `Days until the key expires, 1 to ${MAX_DAYS_TO_EXPIRE}.`,
    kind: kinds.days,
  },
  ...STORAGE_SETTINGS,
} satisfies Record<string, Setting<unknown>>;

/** The gateway's settings by command, for docs/configuration.md (scripts/docs/configuration.ts). */
export const GATEWAY_SETTING_TABLES = { serve: SERVE_SETTINGS, createKey: CREATE_KEY_SETTINGS } as const;

/**
 * Parse argv (without node and script) and env. `create-key` as the first word selects that
 * command; otherwise the gateway serves. `--help`/`--version` win over everything else.
 */
export function parseGatewayCommandLine(argv: readonly string[], env: Record<string, string | undefined>): GatewayCommandLine {
  if (argv[0] === CREATE_KEY_COMMAND) return parseCreateKey(argv.slice(1), env);
  const scanned = scanArgv(argv, Object.values(SERVE_SETTINGS));
  if (scanned.help) return { kind: 'help', text: gatewayHelpText() };
  if (scanned.version) return { kind: 'version' };
  if (scanned.problem !== undefined) throw new ConfigError(scanned.problem);
  const reader = new SettingReader(scanned, env);
  return {
    kind: 'serve',
    config: {
      host: reader.read(SERVE_SETTINGS.host) ?? DEFAULT_GATEWAY_HOST,
      port: reader.read(SERVE_SETTINGS.port) ?? DEFAULT_GATEWAY_PORT,
      allowedHosts: reader.read(SERVE_SETTINGS.allowedHosts) ?? [],
      storage: readStorage(reader),
      logLevel: reader.read(SERVE_SETTINGS.logLevel) ?? 'info',
      agentResponseTimeoutMs: reader.read(SERVE_SETTINGS.agentResponseTimeoutMs) ?? DEFAULT_AGENT_RESPONSE_TIMEOUT_MS,
      agentBatchMarginMs: reader.read(SERVE_SETTINGS.agentBatchMarginMs) ?? DEFAULT_AGENT_BATCH_MARGIN_MS,
      agentIdleTimeoutMs: reader.read(SERVE_SETTINGS.agentIdleTimeoutMs) ?? DEFAULT_AGENT_IDLE_TIMEOUT_MS,
      agentKeepaliveMs: reader.read(SERVE_SETTINGS.agentKeepaliveMs) ?? DEFAULT_AGENT_KEEPALIVE_MS,
      keyRecheckMs: MAX_KEY_RECHECK_MS,
      checkAgent: reader.read(SERVE_SETTINGS.checkAgent) ?? true,
      archive: {
        follow: reader.read(SERVE_SETTINGS.archiveFollow) ?? true,
        retainDays: reader.read(SERVE_SETTINGS.archiveRetainDays) ?? DEFAULT_ARCHIVE_RETAIN_DAYS,
        silenceMs: reader.read(SERVE_SETTINGS.archiveSilenceMs) ?? DEFAULT_ARCHIVE_SILENCE_MS,
        leaseMs: reader.read(SERVE_SETTINGS.archiveLeaseMs) ?? DEFAULT_ARCHIVE_LEASE_MS,
      },
      viewerSecret: reader.read(SERVE_SETTINGS.viewerSecret),
    },
  };
}

function parseCreateKey(argv: readonly string[], env: Record<string, string | undefined>): GatewayCommandLine {
  const scanned = scanArgv(argv, Object.values(CREATE_KEY_SETTINGS), CREATE_KEY_COMMAND);
  if (scanned.help) return { kind: 'help', text: createKeyHelpText() };
  if (scanned.version) return { kind: 'version' };
  if (scanned.problem !== undefined) throw new ConfigError(scanned.problem);
  const reader = new SettingReader(scanned, env);
  const name = reader.read(CREATE_KEY_SETTINGS.name);
  if (name === undefined) throw new ConfigError(`--name: required (${CREATE_KEY_COMMAND} --name <name>)`);
  const options: CreateKeyOptions = { storage: readStorage(reader), name };
  const project = reader.read(CREATE_KEY_SETTINGS.project);
  if (project !== undefined) options.project = project;
  const days = reader.read(CREATE_KEY_SETTINGS.daysToExpire);
  if (days !== undefined) options.daysToExpire = days;
  return { kind: 'create-key', options };
}

function readStorage(reader: SettingReader): StorageConfig {
  const dataDir = reader.source(STORAGE_SETTINGS.dataDir);
  const databaseUrl = reader.source(STORAGE_SETTINGS.databaseUrl);
  if (dataDir && databaseUrl) throw new ConfigError(`${databaseUrl.label} and ${dataDir.label} exclude each other: give one`);
  const url = reader.read(STORAGE_SETTINGS.databaseUrl);
  if (url !== undefined) return { kind: 'postgres', databaseUrl: url };
  return { kind: 'sqlite', dataDir: resolve(reader.read(STORAGE_SETTINGS.dataDir) ?? DEFAULT_DATA_DIR) };
}

/** The command line's defaults and checks for options passed in code; errors name the option. */
export function resolveGatewayConfig(options: GatewayConfigOptions = {}): GatewayConfig {
  const known = new Set([
    'host',
    'port',
    'dataDir',
    'databaseUrl',
    'logLevel',
    'allowedHosts',
    'agentResponseTimeoutMs',
    'agentBatchMarginMs',
    'agentIdleTimeoutMs',
    'agentKeepaliveMs',
    'keyRecheckMs',
    'checkAgent',
    'archiveFollow',
    'archiveRetainDays',
    'archiveSilenceMs',
    'archiveLeaseMs',
    'viewerSecret',
  ]);
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw new ConfigError(`${key}: unknown option`);
  }
  const dataDir = checkValue('dataDir', kinds.nonEmpty, options.dataDir);
  const databaseUrl = checkValue('databaseUrl', kinds.databaseUrl, options.databaseUrl);
  if (dataDir !== undefined && databaseUrl !== undefined) throw new ConfigError('databaseUrl and dataDir exclude each other: give one');
  return {
    host: checkValue('host', hostKind, options.host) ?? DEFAULT_GATEWAY_HOST,
    port: checkValue('port', portKind, options.port) ?? DEFAULT_GATEWAY_PORT,
    allowedHosts: checkValue('allowedHosts', kinds.hostList, options.allowedHosts) ?? [],
    storage: databaseUrl !== undefined ? { kind: 'postgres', databaseUrl } : { kind: 'sqlite', dataDir: resolve(dataDir ?? DEFAULT_DATA_DIR) },
    logLevel: checkValue('logLevel', logLevelKind, options.logLevel) ?? 'info',
    agentResponseTimeoutMs: checkValue('agentResponseTimeoutMs', kinds.timeoutMs, options.agentResponseTimeoutMs) ?? DEFAULT_AGENT_RESPONSE_TIMEOUT_MS,
    agentBatchMarginMs: checkValue('agentBatchMarginMs', kinds.timeoutMs, options.agentBatchMarginMs) ?? DEFAULT_AGENT_BATCH_MARGIN_MS,
    agentIdleTimeoutMs: checkValue('agentIdleTimeoutMs', kinds.timeoutMs, options.agentIdleTimeoutMs) ?? DEFAULT_AGENT_IDLE_TIMEOUT_MS,
    agentKeepaliveMs: checkValue('agentKeepaliveMs', kinds.timeoutMs, options.agentKeepaliveMs) ?? DEFAULT_AGENT_KEEPALIVE_MS,
    keyRecheckMs: checkValue('keyRecheckMs', kinds.keyRecheckMs, options.keyRecheckMs) ?? MAX_KEY_RECHECK_MS,
    checkAgent: checkValue('checkAgent', kinds.onOff, options.checkAgent) ?? true,
    archive: {
      follow: checkValue('archiveFollow', kinds.onOff, options.archiveFollow) ?? true,
      retainDays: checkValue('archiveRetainDays', kinds.retainDays, options.archiveRetainDays) ?? DEFAULT_ARCHIVE_RETAIN_DAYS,
      silenceMs: checkValue('archiveSilenceMs', kinds.silenceMs, options.archiveSilenceMs) ?? DEFAULT_ARCHIVE_SILENCE_MS,
      leaseMs: checkValue('archiveLeaseMs', kinds.leaseMs, options.archiveLeaseMs) ?? DEFAULT_ARCHIVE_LEASE_MS,
    },
    viewerSecret: checkValue('viewerSecret', kinds.viewerSecret, options.viewerSecret),
  };
}

export function gatewayHelpText(): string {
  const intro = [
    'Usage: browser-telemetry-gateway [options]',
    '       browser-telemetry-gateway create-key --name <name> [--project <id|name>] [options]',
    '',
    'Control plane in front of browser-telemetry agents: projects, API keys, bearer auth, the',
    "public browser paths forwarded to each session's agent, and the archive of every session's",
    'telemetry, readable after the session ends. Every option can also be set by its environment',
    'variable; a flag wins over its variable, and an empty variable counts as unset.',
  ];
  return commandHelpText(intro, Object.values(SERVE_SETTINGS), [
    flagHelpLine('-h, --help', "Print this help and exit (create-key --help: that command's)."),
    flagHelpLine('-v, --version', 'Print the version and exit.'),
    '',
    'Invalid values exit with status 2 and one line on stderr.',
  ]);
}

export function createKeyHelpText(): string {
  const intro = [
    'Usage: browser-telemetry-gateway create-key --name <name> [--project <id|name>] [options]',
    '',
    "Creates an API key in the gateway's storage (creating and migrating it when new) and prints",
    'the key on stdout, once: it is stored only as a digest. Details go to stderr.',
  ];
  return commandHelpText(intro, Object.values(CREATE_KEY_SETTINGS), [flagHelpLine('-h, --help', 'Print this help and exit.')]);
}
