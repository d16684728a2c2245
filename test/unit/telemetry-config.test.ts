import { describe, expect, it } from 'vitest';
import { parseBrowserPatch } from '../../src/http/browser-routes.ts';
import { defaultTelemetryConfig, isCategoryOn, mergeTelemetryConfig, validateTelemetryPatch } from '../../src/telemetry/telemetry-config.ts';

describe('telemetry config merge', () => {
  it('defaults to enabled with every category explicit and on', () => {
    expect(defaultTelemetryConfig()).toEqual({
      enabled: true,
      browser: { console: { enabled: true }, network: { enabled: true }, page: { enabled: true }, interaction: { enabled: true } },
    });
  });

  it('keeps the fields a patch does not send', () => {
    const off = mergeTelemetryConfig(defaultTelemetryConfig(), { browser: { console: { enabled: false } } });
    const merged = mergeTelemetryConfig(off, { browser: { network: { enabled: false } } });
    expect(merged.browser.console.enabled).toBe(false);
    expect(merged.browser.network.enabled).toBe(false);
    expect(merged.browser.page.enabled).toBe(true);
    expect(merged.enabled).toBe(true);
  });

  it('turns everything off with enabled false while remembering the categories', () => {
    const merged = mergeTelemetryConfig(defaultTelemetryConfig(), { enabled: false });
    expect(isCategoryOn(merged, 'console')).toBe(false);
    expect(merged.browser.console.enabled).toBe(true);
    expect(isCategoryOn(mergeTelemetryConfig(merged, { enabled: true }), 'console')).toBe(true);
  });

  it('does not modify the config it merges into', () => {
    const base = defaultTelemetryConfig();
    mergeTelemetryConfig(base, { enabled: false, browser: { page: { enabled: false } } });
    expect(base).toEqual(defaultTelemetryConfig());
  });

  it('treats an empty patch as no change', () => {
    expect(mergeTelemetryConfig(defaultTelemetryConfig(), {})).toEqual(defaultTelemetryConfig());
  });
});

describe('telemetry patch validation', () => {
  it('accepts every known field', () => {
    expect(validateTelemetryPatch({ enabled: false, browser: { console: { enabled: true }, interaction: {} } })).toEqual([]);
  });

  it('names unknown keys at every level with their path', () => {
    const problems = validateTelemetryPatch({ nope: 1, browser: { dom: {}, page: { enabled: true, level: 'x' } } });
    expect(problems.map((p) => p.field).sort()).toEqual(['browser.dom', 'browser.page.level', 'nope']);
  });

  it('rejects wrong types', () => {
    const problems = validateTelemetryPatch({ enabled: 'yes', browser: { console: { enabled: 1 }, network: [] } });
    expect(problems.map((p) => p.field).sort()).toEqual(['browser.console.enabled', 'browser.network', 'enabled']);
  });
});

describe('PATCH /browsers/{id} body', () => {
  it('returns the telemetry patch of a valid body', () => {
    expect(parseBrowserPatch({ telemetry: { browser: { console: { enabled: false } } } })).toEqual({ browser: { console: { enabled: false } } });
  });

  it('rejects unknown top-level keys and a missing telemetry field, one detail each', () => {
    try {
      parseBrowserPatch({ jwt: 'x' });
      expect.unreachable();
    } catch (err) {
      expect((err as { code: string }).code).toBe('invalid_input');
      expect((err as { details: Array<{ field: string }> }).details.map((d) => d.field).sort()).toEqual(['jwt', 'telemetry']);
    }
  });

  it('prefixes telemetry problems with their full path', () => {
    expect(() => parseBrowserPatch({ telemetry: { browser: { console: { on: true } } } })).toThrowError(
      expect.objectContaining({ details: [expect.objectContaining({ field: 'telemetry.browser.console.on' })] }),
    );
  });
});
