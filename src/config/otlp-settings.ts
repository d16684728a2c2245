// The OTLP export's settings (docs/export.md): which of --otlp-*, OTEL_EXPORTER_OTLP_LOGS_* and
// OTEL_EXPORTER_OTLP_* wins, and the `otlp` option of startAgent checked the same way.

import {
  DEFAULT_OTLP_CATEGORIES,
  DEFAULT_OTLP_PROTOCOL,
  DEFAULT_OTLP_QUEUE_BYTES,
  DEFAULT_OTLP_QUEUE_EVENTS,
  logsUrlFromEndpoint,
  otlpKinds,
  type OtlpConfig,
} from '../export/otlp-config.ts';
import { checkValue, ConfigError, rejection, show, type Setting, type SettingReader, type ValueKind } from '../settings.ts';
import { byteSize, OTLP_SETTINGS, positiveInteger } from './settings-table.ts';

/** A variable without a flag of its own (the OTel spec's logs-specific ones); empty counts as unset. */
function readVariable<T>(env: Record<string, string | undefined>, name: string, kind: ValueKind<T>): T | undefined {
  const text = env[name];
  if (text === undefined || text === '') return undefined;
  const value = kind.fromText(text);
  if (value === undefined) throw new ConfigError(`${name} (env): ${rejection(kind, text)}`);
  return value;
}

/**
 * The export is on when an endpoint is configured: `--otlp-endpoint` (a base URL), else
 * OTEL_EXPORTER_OTLP_LOGS_ENDPOINT (the full URL), else OTEL_EXPORTER_OTLP_ENDPOINT (a base URL).
 * A logs-specific variable wins over the generic one, as the OTel spec says; a flag over both.
 */
export function readOtlp(reader: SettingReader, env: Record<string, string | undefined>): OtlpConfig | undefined {
  const flagOnly = <T>(setting: Setting<T>) => reader.read({ ...setting, env: undefined });
  const endpointFlag = flagOnly(OTLP_SETTINGS.otlpEndpoint);
  let url: string | undefined;
  if (endpointFlag !== undefined) url = logsUrlFromEndpoint(endpointFlag);
  else url = readVariable(env, 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT', otlpKinds.url);
  if (url === undefined) {
    const base = reader.read(OTLP_SETTINGS.otlpEndpoint);
    if (base !== undefined) url = logsUrlFromEndpoint(base);
  }
  if (url === undefined) {
    // An OTLP flag without an endpoint is a mistake; a variable is not (OTEL_* may be meant for
    // other programs of the environment).
    for (const setting of Object.values(OTLP_SETTINGS)) {
      if (reader.source({ ...setting, env: undefined })) throw new ConfigError(`--${setting.flag}: needs --otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT)`);
    }
    return undefined;
  }
  return completeOtlp({
    url,
    protocol:
      flagOnly(OTLP_SETTINGS.otlpProtocol) ??
      readVariable(env, 'OTEL_EXPORTER_OTLP_LOGS_PROTOCOL', otlpKinds.protocol) ??
      reader.read(OTLP_SETTINGS.otlpProtocol),
    categories: reader.read(OTLP_SETTINGS.otlpCategories),
    // Merged, the logs-specific ones winning per header, as the OTel SDK merges them.
    headers: {
      ...readVariable(env, 'OTEL_EXPORTER_OTLP_HEADERS', otlpKinds.headers),
      ...readVariable(env, 'OTEL_EXPORTER_OTLP_LOGS_HEADERS', otlpKinds.headers),
    },
    queueEvents: reader.read(OTLP_SETTINGS.otlpQueueEvents),
    queueBytes: reader.read(OTLP_SETTINGS.otlpQueueBytes),
  });
}

const OTLP_OPTION_KINDS: { [K in keyof OtlpConfig]-?: ValueKind<OtlpConfig[K]> } = {
  url: otlpKinds.url,
  protocol: otlpKinds.protocol,
  categories: otlpKinds.categories,
  headers: otlpKinds.headers,
  queueEvents: positiveInteger,
  queueBytes: byteSize,
};

/** startAgent({ otlp }): errors name the option (`otlp.url`, `otlp.categories`). */
export function resolveOtlpOptions(options: unknown): OtlpConfig {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ConfigError(`otlp: expected an object {url, protocol?, categories?, headers?, queueEvents?, queueBytes?}, got ${show(options)}`);
  }
  const checked: Partial<Record<keyof OtlpConfig, unknown>> = {};
  for (const [key, value] of Object.entries(options)) {
    if (!Object.hasOwn(OTLP_OPTION_KINDS, key))
      throw new ConfigError(`otlp.${key}: unknown option (expected one of ${Object.keys(OTLP_OPTION_KINDS).join(', ')})`);
    const accepted = checkValue<unknown>(`otlp.${key}`, OTLP_OPTION_KINDS[key as keyof OtlpConfig], value);
    if (accepted !== undefined) checked[key as keyof OtlpConfig] = accepted;
  }
  if (checked.url === undefined) throw new ConfigError(`otlp.url: missing (${otlpKinds.url.expected})`);
  return completeOtlp(checked as Partial<OtlpConfig> & { url: string });
}

function completeOtlp(values: Partial<OtlpConfig> & { url: string }): OtlpConfig {
  return {
    url: values.url,
    protocol: values.protocol ?? DEFAULT_OTLP_PROTOCOL,
    categories: values.categories ?? [...DEFAULT_OTLP_CATEGORIES],
    headers: values.headers ?? {},
    queueEvents: values.queueEvents ?? DEFAULT_OTLP_QUEUE_EVENTS,
    queueBytes: values.queueBytes ?? DEFAULT_OTLP_QUEUE_BYTES,
  };
}
