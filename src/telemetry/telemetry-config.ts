// Telemetry configuration (SPEC §7): which categories produce events.

import { CATEGORIES, type Category } from '../../injected/schema.ts';

export interface TelemetryConfig {
  enabled: boolean;
  browser: Record<Category, { enabled: boolean }>;
}

/** The partial shape accepted by `--telemetry` and PATCH (every field optional). */
export interface TelemetryConfigPatch {
  enabled?: boolean;
  browser?: Partial<Record<Category, { enabled?: boolean }>>;
}

export function defaultTelemetryConfig(): TelemetryConfig {
  const browser = {} as TelemetryConfig['browser'];
  for (const category of CATEGORIES) browser[category] = { enabled: true };
  return { enabled: true, browser };
}

/** Merge a patch into a config: fields not sent stay as they were. Returns a new object. */
export function mergeTelemetryConfig(base: TelemetryConfig, patch: TelemetryConfigPatch): TelemetryConfig {
  const merged: TelemetryConfig = { enabled: patch.enabled ?? base.enabled, browser: { ...base.browser } };
  for (const category of CATEGORIES) {
    const enabled = patch.browser?.[category]?.enabled;
    merged.browser[category] = { enabled: enabled ?? base.browser[category].enabled };
  }
  return merged;
}

/**
 * Validate an untrusted value as a TelemetryConfigPatch. Returns a list of problems, each with a
 * JSON path (`browser.console.enabled`); empty when valid. Unknown keys are problems.
 */
export function validateTelemetryPatch(value: unknown, path = ''): Array<{ field: string; message: string }> {
  const problems: Array<{ field: string; message: string }> = [];
  const at = (key: string) => (path ? `${path}.${key}` : key);
  if (!isPlainObject(value)) {
    problems.push({ field: path || '$', message: 'must be an object' });
    return problems;
  }
  for (const [key, v] of Object.entries(value)) {
    if (key === 'enabled') {
      if (typeof v !== 'boolean') problems.push({ field: at(key), message: 'must be a boolean' });
    } else if (key === 'browser') {
      if (!isPlainObject(v)) {
        problems.push({ field: at(key), message: 'must be an object' });
        continue;
      }
      for (const [category, c] of Object.entries(v)) {
        const cpath = `${at(key)}.${category}`;
        if (!(CATEGORIES as readonly string[]).includes(category)) {
          problems.push({ field: cpath, message: `unknown category (expected one of ${CATEGORIES.join(', ')})` });
          continue;
        }
        if (!isPlainObject(c)) {
          problems.push({ field: cpath, message: 'must be an object' });
          continue;
        }
        for (const [ck, cv] of Object.entries(c)) {
          if (ck !== 'enabled') problems.push({ field: `${cpath}.${ck}`, message: 'unknown key' });
          else if (typeof cv !== 'boolean') problems.push({ field: `${cpath}.${ck}`, message: 'must be a boolean' });
        }
      }
    } else {
      problems.push({ field: at(key), message: 'unknown key' });
    }
  }
  return problems;
}

export function isCategoryOn(config: TelemetryConfig, category: Category): boolean {
  return config.enabled && config.browser[category].enabled;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
