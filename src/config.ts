// Flags + environment → one validated, typed Config (docs/configuration.md). Flags win over env vars.
// Every bad value produces one clear line (ConfigError); main.ts prints it and exits 2.
// The programmatic entry (startAgent) goes through resolveConfig: same defaults, same checks.
// The jobs live in src/config/: the settings table (settings-table.ts), tokens (tokens.ts), the
// OTLP variables' precedence (otlp-settings.ts), the options check (options.ts), --help (help.ts).
// Parsing has no side effects: it reads the environment, argv and the files named there only.

import type { Limits } from './limits.ts';
import { ConfigError, readSettings, scanArgv, SettingReader, withLabel, type Setting } from './settings.ts';
import { completeConfig, type Config } from './config/config-type.ts';
import { helpText } from './config/help.ts';
import { readOtlp } from './config/otlp-settings.ts';
import { ALL_SETTINGS, defaultDataDir, LIMIT_KEYS, LIMIT_SETTINGS, SETTINGS } from './config/settings-table.ts';
import { parseTelemetryText } from './config/telemetry-setting.ts';
import { addGrants, loadTokensFile, type TokenGrant } from './config/tokens.ts';

export { ConfigError, LOG_LEVELS, type LogLevel } from './settings.ts';
export type { Config, ConfigOptions } from './config/config-type.ts';
export { helpText } from './config/help.ts';
export { resolveConfig } from './config/options.ts';
export {
  AGENT_ENV_VARS,
  AGENT_SETTING_TABLES,
  DEFAULT_HOST,
  DEFAULT_KEEPALIVE_MS,
  DEFAULT_LOAD_CDP_READ_MS,
  DEFAULT_PORT,
  DEFAULT_RETAIN_BYTES,
  DEFAULT_RETAIN_HOURS,
  DEFAULT_RING_BYTES,
  DEFAULT_RING_EVENTS,
  DEFAULT_STREAM_LOAD_PACE_MS,
  DEFAULT_STREAM_PACE_MS,
  defaultDataDir,
  KEEPALIVE_MS_MAX,
  KEEPALIVE_MS_MIN,
  STREAM_PACE_MS_MAX,
  SYSTEM_DATA_DIR,
  UPLOAD_IDLE_MS_MAX,
} from './config/settings-table.ts';
export { SCOPES, type Scope, type TokenGrant } from './config/tokens.ts';

export type CommandLine = { kind: 'run'; config: Config } | { kind: 'help'; text: string } | { kind: 'version' };

// ---------------------------------------------------------------------------------------------
// Command line

/**
 * Parse argv (without node and script) and env. `--help` and `--version` win over everything
 * else on the line, even over errors, and do not read env. Throws ConfigError otherwise.
 */
export function parseCommandLine(argv: readonly string[], env: Record<string, string | undefined>): CommandLine {
  const scanned = scanArgv(argv, ALL_SETTINGS);
  if (scanned.help) return { kind: 'help', text: helpText() };
  if (scanned.version) return { kind: 'version' };
  if (scanned.problem !== undefined) throw new ConfigError(scanned.problem);

  const reader = new SettingReader(scanned, env);
  const source = (setting: Setting<unknown>) => reader.source(setting);

  const grants: TokenGrant[] = [];
  const token = reader.read(SETTINGS.token);
  if (token !== undefined) grants.push({ token, scopes: ['*'] });
  const tokensFile = source(SETTINGS.tokensFile);
  if (tokensFile) {
    const fileGrants = withLabel(tokensFile.label, () => loadTokensFile(tokensFile.text));
    withLabel(tokensFile.label, () => addGrants(grants, fileGrants, ''));
  }

  const telemetryText = source(SETTINGS.telemetry);
  const telemetry = telemetryText ? withLabel(telemetryText.label, () => parseTelemetryText(telemetryText.text)) : undefined;

  const limits: Partial<Limits> = {};
  for (const key of LIMIT_KEYS) {
    const value = reader.read(LIMIT_SETTINGS[key]);
    if (value !== undefined) limits[key] = value;
  }

  const given = readSettings(SETTINGS, reader);
  given.dataDir ??= defaultDataDir(env);
  return { kind: 'run', config: completeConfig(given, { grants, telemetry, limits, otlp: readOtlp(reader, env) }) };
}

/** The `run` path of parseCommandLine; throws ConfigError when `--help` or `--version` is given. */
export function parseConfig(argv: readonly string[], env: Record<string, string | undefined>): Config {
  const result = parseCommandLine(argv, env);
  if (result.kind !== 'run') throw new ConfigError(`--${result.kind} does not produce a configuration`);
  return result.config;
}
