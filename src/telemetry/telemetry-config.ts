// Telemetry configuration (docs/events.md#telemetry-config-lifecycle-and-monitor-events): which categories produce events, and which response bodies
// the network category captures.
//
// The categories are the ones the official client names (`@onkernel/sdk`
// BrowserTelemetryCategoriesConfig): the four CDP categories, `screenshot` (monitor_screenshot),
// and the operational ones (`control`, `connection`, `system`, `captcha`): `control` and
// `connection` gate the cause side (docs/events.md "Control events"), `system` and `connection`
// the failure signals and live view events (docs/events.md "Failure signals"); `captcha` is
// accepted, kept and shown but has no events from this agent (README "Telemetry config"; the body
// policy: docs/network.md "Response bodies").

import { CATEGORIES, OPERATIONAL_CATEGORIES, type Category, type OperationalCategory } from '../../injected/schema.ts';
import { DEFAULT_BODY_MAX_BYTES, defaultBodyPolicy, mergeBodyPolicy, validateBodyPolicyPatch, type BodyPolicy, type BodyPolicyPatch } from './body-policy.ts';

/** Categories of the hosted service that produce no event from this agent. */
export const SILENT_CATEGORIES = ['captcha'] as const satisfies readonly OperationalCategory[];
/** Every category the config accepts, in the order GET shows them. */
export const CONFIG_CATEGORIES = [...CATEGORIES, 'screenshot', ...OPERATIONAL_CATEGORIES] as const;
/** A category that gates events at event time. */
export type GatingCategory = Category | OperationalCategory;
export type ConfigCategory = (typeof CONFIG_CATEGORIES)[number];

export interface CategoryConfig {
  enabled: boolean;
}

export interface NetworkCategoryConfig extends CategoryConfig {
  /** Which response bodies are fetched (docs/network.md "Response bodies"). */
  bodies: BodyPolicy;
}

/** `control` (docs/events.md "Control events"): `include_urls` puts a navigation's URL into cdp_command. */
export interface ControlCategoryConfig extends CategoryConfig {
  include_urls: boolean;
}

export type BrowserCategories = Record<Exclude<ConfigCategory, 'network' | 'control'>, CategoryConfig> & {
  network: NetworkCategoryConfig;
  control: ControlCategoryConfig;
};

export interface TelemetryConfig {
  enabled: boolean;
  browser: BrowserCategories;
}

/** The partial shape accepted by `--telemetry` and PATCH (every field optional). */
export interface TelemetryConfigPatch {
  enabled?: boolean;
  browser?: Partial<Record<Exclude<ConfigCategory, 'network' | 'control'>, { enabled?: boolean }>> & {
    network?: { enabled?: boolean; bodies?: BodyPolicyPatch };
    control?: { enabled?: boolean; include_urls?: boolean };
  };
}

/** Values of other settings that are defaults of the config (flags of the command line). */
export interface TelemetryDefaults {
  /** `--screenshots`: the default of the `screenshot` category. */
  screenshots?: boolean;
  /** `--max-body-bytes`: the default of `network.bodies.max_bytes`. */
  maxBodyBytes?: number;
}

export function defaultTelemetryConfig(defaults: TelemetryDefaults = {}): TelemetryConfig {
  const browser = {} as BrowserCategories;
  for (const category of CONFIG_CATEGORIES) {
    if (category === 'network') browser.network = { enabled: true, bodies: defaultBodyPolicy(defaults.maxBodyBytes) };
    else if (category === 'control') browser.control = { enabled: true, include_urls: false };
    else browser[category] = { enabled: category === 'screenshot' ? (defaults.screenshots ?? true) : true };
  }
  return { enabled: true, browser };
}

/**
 * The start config with the flags that predate the config applied: `--screenshots off` turns the
 * `screenshot` category off, and `--max-body-bytes` is the start value of
 * `network.bodies.max_bytes` unless `--telemetry` gave one. Returns a new object.
 */
export function withStartFlags(config: TelemetryConfig, flags: TelemetryDefaults): TelemetryConfig {
  const browser = { ...config.browser };
  if (flags.screenshots === false) browser.screenshot = { enabled: false };
  const bodies = browser.network.bodies;
  if (flags.maxBodyBytes !== undefined && bodies.max_bytes === DEFAULT_BODY_MAX_BYTES) {
    browser.network = { ...browser.network, bodies: { ...bodies, max_bytes: flags.maxBodyBytes } };
  }
  return { ...config, browser };
}

/** Merge a patch into a config: fields not sent stay as they were. Returns a new object. */
export function mergeTelemetryConfig(base: TelemetryConfig, patch: TelemetryConfigPatch): TelemetryConfig {
  const browser = { ...base.browser };
  const sent = patch.browser;
  for (const category of CONFIG_CATEGORIES) {
    const enabled = sent?.[category]?.enabled ?? base.browser[category].enabled;
    if (category === 'network') browser.network = { enabled, bodies: mergeBodyPolicy(base.browser.network.bodies, sent?.network?.bodies) };
    else if (category === 'control') browser.control = { enabled, include_urls: sent?.control?.include_urls ?? base.browser.control.include_urls };
    else browser[category] = { enabled };
  }
  return { enabled: patch.enabled ?? base.enabled, browser };
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
        if (!(CONFIG_CATEGORIES as readonly string[]).includes(category)) {
          problems.push({ field: cpath, message: `unknown category (expected one of ${CONFIG_CATEGORIES.join(', ')})` });
          continue;
        }
        if (!isPlainObject(c)) {
          problems.push({ field: cpath, message: 'must be an object' });
          continue;
        }
        for (const [ck, cv] of Object.entries(c)) {
          if (ck === 'enabled') {
            if (typeof cv !== 'boolean') problems.push({ field: `${cpath}.${ck}`, message: 'must be a boolean' });
          } else if (ck === 'include_urls' && category === 'control') {
            if (typeof cv !== 'boolean') problems.push({ field: `${cpath}.${ck}`, message: 'must be a boolean' });
          } else if (ck === 'bodies' && category === 'network') {
            problems.push(...validateBodyPolicyPatch(cv, `${cpath}.${ck}`));
          } else {
            problems.push({ field: `${cpath}.${ck}`, message: 'unknown key' });
          }
        }
      }
    } else {
      problems.push({ field: at(key), message: 'unknown key' });
    }
  }
  return problems;
}

/** Whether a category produces events. */
export function isCategoryOn(config: TelemetryConfig, category: GatingCategory): boolean {
  return config.enabled && config.browser[category].enabled;
}

/** Whether monitor_screenshot is captured (the `screenshot` category, `--screenshots`). */
export function isScreenshotOn(config: TelemetryConfig): boolean {
  return config.enabled && config.browser.screenshot.enabled;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
