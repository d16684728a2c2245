// --telemetry and the `telemetry` option: "on", "off" or a JSON patch of the telemetry config
// (docs/configuration.md), checked as PATCH checks it.

import { BadValue, show } from '../settings.ts';
import {
  defaultTelemetryConfig,
  mergeTelemetryConfig,
  validateTelemetryPatch,
  type TelemetryConfig,
  type TelemetryConfigPatch,
} from '../telemetry/telemetry-config.ts';

export function parseTelemetryText(text: string): TelemetryConfig {
  const word = text.trim().toLowerCase();
  if (word === 'off') return { ...defaultTelemetryConfig(), enabled: false };
  if (word === 'on') return defaultTelemetryConfig();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new BadValue(`expected a JSON object, "on" or "off", got ${show(text)} (${(err as Error).message.split('\n')[0]})`, { cause: err });
  }
  return telemetryFromPatch(json, '');
}

export function telemetryFromPatch(value: unknown, prefix: string): TelemetryConfig {
  const problems = validateTelemetryPatch(value, prefix);
  if (problems.length > 0) {
    throw new BadValue(problems.map((p) => (p.field === '$' ? `expected a JSON object, got ${show(value)}` : `${p.field}: ${p.message}`)).join('; '));
  }
  return mergeTelemetryConfig(defaultTelemetryConfig(), value as TelemetryConfigPatch);
}
