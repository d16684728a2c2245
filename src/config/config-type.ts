// The agent's resolved configuration, and the one step the command line and the options share:
// defaults filled in, the session id and (when none was configured) a token generated.

import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { OtlpConfig, OtlpOptions } from '../export/otlp-config.ts';
import { DEFAULT_LIMITS, type Limits } from '../limits.ts';
import { withDefaults, type GivenValues, type SettingValues } from '../settings.ts';
import { defaultTelemetryConfig, withStartFlags, type TelemetryConfig, type TelemetryConfigPatch } from '../telemetry/telemetry-config.ts';
import { SETTINGS } from './settings-table.ts';
import type { TokenGrant } from './scopes.ts';

/**
 * The settings read from the table (src/config/settings-table.ts) are typed by it: a row with a default is a
 * required field, one without is optional (cdpUrl, chromePath, fsAllow, dataDir). The rest are
 * read by hand.
 */
type TableConfig = SettingValues<typeof SETTINGS>;

export interface Config extends TableConfig {
  /** Grants from `--token` (all scopes) and `--tokens-file`. */
  tokens: TokenGrant[];
  /** True when no token was configured and one was generated (it is then printed). */
  tokenGenerated: boolean;
  telemetry: TelemetryConfig;
  limits: Limits;
  /** OTLP logs export (docs/export.md); undefined = off. */
  otlp?: OtlpConfig;
}

/** Options of the programmatic entry: every Config field optional, plus `token` like `--token`. */
export interface ConfigOptions extends Partial<Omit<Config, 'limits' | 'telemetry' | 'otlp' | 'tokenGenerated'>> {
  /** Same as `--token`: a bearer token with every scope, added to `tokens`. */
  token?: string;
  limits?: Partial<Limits>;
  telemetry?: TelemetryConfigPatch;
  /** OTLP export: `url` is the full logs URL (like OTEL_EXPORTER_OTLP_LOGS_ENDPOINT). */
  otlp?: OtlpOptions;
}

/** What the table does not read: tokens, telemetry JSON, limits, OTLP. */
export interface CustomValues {
  grants: TokenGrant[];
  telemetry: TelemetryConfig | undefined;
  limits: Partial<Limits>;
  otlp: OtlpConfig | undefined;
}

/** Fill in defaults; generate the session id and, when none was configured, a token. */
export function completeConfig(given: GivenValues<typeof SETTINGS>, values: CustomValues): Config {
  const generate = values.grants.length === 0;
  const config: Config = {
    ...withDefaults(SETTINGS, given),
    // 24 random bytes → 32 base64url characters.
    tokens: generate ? [{ token: randomBytes(24).toString('base64url'), scopes: ['*'] }] : values.grants,
    tokenGenerated: generate,
    telemetry: withStartFlags(values.telemetry ?? defaultTelemetryConfig(), { screenshots: given.screenshots, maxBodyBytes: values.limits.maxBodyBytes }),
    limits: { ...DEFAULT_LIMITS, ...values.limits },
  };
  // `none` is RAM only, as is no directory at all (startAgent without dataDir).
  if (config.dataDir === 'none') delete config.dataDir;
  else if (config.dataDir !== undefined) config.dataDir = path.posix.resolve(config.dataDir);
  if (values.otlp !== undefined) config.otlp = values.otlp;
  return config;
}
