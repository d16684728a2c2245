// Flags + environment → the gateway's validated configuration, in the agent's style (shared
// parsing in src/settings.ts): flags win over env vars, an empty variable counts as unset, a bad
// value is one ConfigError line naming the flag (main.ts prints it and exits 2). Two commands:
// serving (the default) and `create-key`, which prints a new API key (the bootstrap).

import { resolve } from 'node:path';
import {
  ConfigError,
  hostKind,
  integerKind,
  logLevelKind,
  LOG_LEVELS,
  optionHelpLines,
  rejection,
  scanArgv,
  SettingReader,
  stringKind,
  type LogLevel,
  type Setting,
  type ValueKind,
  portKind,
} from '../settings.ts';
import { MAX_DAYS_TO_EXPIRE } from './api-key.ts';
import type { StorageConfig } from './storage/open-store.ts';

export const DEFAULT_GATEWAY_HOST = '127.0.0.1';
export const DEFAULT_GATEWAY_PORT = 10000;
/** Relative to the working directory. */
export const DEFAULT_DATA_DIR = 'gateway-data';

export interface GatewayConfig {
  host: string;
  port: number;
  storage: StorageConfig;
  logLevel: LogLevel;
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
  | { kind: 'serve'; config: GatewayConfig }
  | { kind: 'create-key'; options: CreateKeyOptions }
  | { kind: 'help'; text: string }
  | { kind: 'version' };

/** Options of startGateway(): every field optional, defaults as on the command line. */
export interface GatewayConfigOptions {
  host?: string;
  port?: number;
  /** SQLite under this directory (the default backend). */
  dataDir?: string;
  /** PostgreSQL; excludes dataDir. */
  databaseUrl?: string;
  logLevel?: LogLevel;
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
  // The URL usually carries a password: never echoed.
  databaseUrl: stringKind('a postgres:// or postgresql:// URL with a host', isPostgresUrl, true),
  keyName: stringKind('1 to 255 characters', (s) => s.length > 0 && [...s].length <= 255),
  days: integerKind(1, MAX_DAYS_TO_EXPIRE, `an integer from 1 to ${MAX_DAYS_TO_EXPIRE}`),
};

const STORAGE_SETTINGS = {
  dataDir: {
    flag: 'data-dir', env: 'GATEWAY_DATA_DIR', arg: '<dir>', default: `./${DEFAULT_DATA_DIR}`,
    meaning: 'SQLite storage: the directory of gateway.sqlite3, created and migrated on start. The embedded default; needs no database server.',
    kind: kinds.nonEmpty,
  },
  databaseUrl: {
    flag: 'database-url', env: 'GATEWAY_DATABASE_URL', arg: '<url>', default: 'none (SQLite)',
    meaning: 'PostgreSQL storage instead of SQLite: postgres://user:password@host:port/database, migrated on start. For several gateway instances sharing one state. Excludes --data-dir.',
    kind: kinds.databaseUrl,
  },
} satisfies Record<string, Setting<unknown>>;

const SERVE_SETTINGS = {
  host: {
    flag: 'host', env: 'GATEWAY_HOST', arg: '<address>', default: DEFAULT_GATEWAY_HOST,
    meaning: 'Listen address.',
    kind: hostKind,
  },
  port: {
    flag: 'port', env: 'GATEWAY_PORT', arg: '<port>', default: String(DEFAULT_GATEWAY_PORT),
    meaning: 'Listen port, 0 to 65535; 0 picks a free one.',
    kind: portKind,
  },
  ...STORAGE_SETTINGS,
  logLevel: {
    flag: 'log-level', env: 'GATEWAY_LOG_LEVEL', arg: '<level>', default: 'info',
    meaning: `pino level: ${LOG_LEVELS.join(', ')}. Logs are JSON lines on stdout.`,
    kind: logLevelKind,
  },
} satisfies Record<string, Setting<unknown>>;

const CREATE_KEY_SETTINGS = {
  name: {
    flag: 'name', arg: '<name>', default: 'required',
    meaning: 'Label of the new key (1 to 255 characters).',
    kind: kinds.keyName,
  },
  project: {
    flag: 'project', arg: '<id|name>', default: 'none (organization-wide)',
    meaning: 'Scope the key to this project (its id or name); without it the key is organization-wide.',
    kind: kinds.nonEmpty,
  },
  daysToExpire: {
    flag: 'days-to-expire', arg: '<days>', default: 'never',
    meaning: `Days until the key expires, 1 to ${MAX_DAYS_TO_EXPIRE}.`,
    kind: kinds.days,
  },
  ...STORAGE_SETTINGS,
} satisfies Record<string, Setting<unknown>>;

export const CREATE_KEY_COMMAND = 'create-key';

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
      storage: readStorage(reader),
      logLevel: reader.read(SERVE_SETTINGS.logLevel) ?? 'info',
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
  const known = new Set(['host', 'port', 'dataDir', 'databaseUrl', 'logLevel']);
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw new ConfigError(`${key}: unknown option`);
  }
  const check = <T>(label: string, kind: ValueKind<T>, value: unknown): T | undefined => {
    if (value === undefined) return undefined;
    const checked = kind.fromValue(value);
    if (checked === undefined) throw new ConfigError(`${label}: ${rejection(kind, value)}`);
    return checked;
  };
  const dataDir = check('dataDir', kinds.nonEmpty, options.dataDir);
  const databaseUrl = check('databaseUrl', kinds.databaseUrl, options.databaseUrl);
  if (dataDir !== undefined && databaseUrl !== undefined) throw new ConfigError('databaseUrl and dataDir exclude each other: give one');
  return {
    host: check('host', hostKind, options.host) ?? DEFAULT_GATEWAY_HOST,
    port: check('port', portKind, options.port) ?? DEFAULT_GATEWAY_PORT,
    storage: databaseUrl !== undefined ? { kind: 'postgres', databaseUrl } : { kind: 'sqlite', dataDir: resolve(dataDir ?? DEFAULT_DATA_DIR) },
    logLevel: check('logLevel', logLevelKind, options.logLevel) ?? 'info',
  };
}

export function gatewayHelpText(): string {
  return [
    'Usage: browser-telemetry-gateway [options]',
    '       browser-telemetry-gateway create-key --name <name> [--project <id|name>] [options]',
    '',
    'Control plane in front of browser-telemetry agents: projects, API keys, bearer auth, and the',
    'public browser paths forwarded to each session\'s agent. Every option can also be set by its',
    'environment variable; a flag wins over its variable, and an empty variable counts as unset.',
    '',
    'Options:',
    ...optionHelpLines(Object.values(SERVE_SETTINGS)),
    `  -h, --help`.padEnd(34) + '  Print this help and exit (create-key --help: that command\'s).',
    `  -v, --version`.padEnd(34) + '  Print the version and exit.',
    '',
    'Invalid values exit with status 2 and one line on stderr.',
  ].join('\n') + '\n';
}

export function createKeyHelpText(): string {
  return [
    'Usage: browser-telemetry-gateway create-key --name <name> [--project <id|name>] [options]',
    '',
    'Creates an API key in the gateway\'s storage (creating and migrating it when new) and prints',
    'the key on stdout, once: it is stored only as a digest. Details go to stderr.',
    '',
    'Options:',
    ...optionHelpLines(Object.values(CREATE_KEY_SETTINGS)),
    `  -h, --help`.padEnd(34) + '  Print this help and exit.',
  ].join('\n') + '\n';
}
