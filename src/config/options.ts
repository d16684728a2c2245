// The programmatic entry's options (startAgent): the same defaults and checks as the command
// line, errors naming the option.

import type { Limits } from '../limits.ts';
import { checkSettings, checkValue, ConfigError, show, withLabel } from '../settings.ts';
import { completeConfig, type Config, type ConfigOptions } from './config-type.ts';
import { resolveOtlpOptions } from './otlp-settings.ts';
import { kinds, LIMIT_KEYS, LIMIT_SETTINGS, SETTINGS } from './settings-table.ts';
import { telemetryFromPatch } from './telemetry-setting.ts';
import { addGrants, validateGrants, type TokenGrant } from './tokens.ts';

const OPTION_KEYS = new Set<string>([...Object.keys(SETTINGS).filter((k) => k !== 'tokensFile'), 'tokens', 'limits', 'otlp']);

/**
 * Apply the defaults and checks of the command line to options passed in code (startAgent).
 * Errors name the option (`port`, `limits.maxBodyBytes`, `tokens[1].scopes[0]`).
 */
export function resolveConfig(options: ConfigOptions = {}): Config {
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) throw new ConfigError(`${key}: unknown option`);
  }
  const grants: TokenGrant[] = [];
  const token = checkValue('token', kinds.token, options.token);
  if (token !== undefined) grants.push({ token, scopes: ['*'] });
  if (options.tokens !== undefined && !(Array.isArray(options.tokens) && options.tokens.length === 0)) {
    const listed = withLabel('', () => validateGrants(options.tokens, 'tokens'));
    withLabel('', () => addGrants(grants, listed, 'tokens'));
  }

  const telemetry = options.telemetry === undefined ? undefined : withLabel('telemetry', () => telemetryFromPatch(options.telemetry, ''));

  const limits: Partial<Limits> = {};
  if (options.limits !== undefined) {
    if (typeof options.limits !== 'object' || options.limits === null) throw new ConfigError(`limits: expected an object, got ${show(options.limits)}`);
    for (const [key, value] of Object.entries(options.limits)) {
      if (!Object.hasOwn(LIMIT_SETTINGS, key)) throw new ConfigError(`limits.${key}: unknown limit (expected one of ${LIMIT_KEYS.join(', ')})`);
      const checked = checkValue(`limits.${key}`, LIMIT_SETTINGS[key as keyof Limits].kind, value);
      if (checked !== undefined) limits[key as keyof Limits] = checked;
    }
  }

  const given = checkSettings(SETTINGS, options as Record<string, unknown>);
  const otlp = options.otlp === undefined ? undefined : resolveOtlpOptions(options.otlp);
  return completeConfig(given, { grants, telemetry, limits, otlp });
}
