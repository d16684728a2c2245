import { describe, expect, it } from 'vitest';
import { parseBrowserPatch } from '../../src/http/browser-routes.ts';
import { BodyMatcher, DEFAULT_BODY_MIME_TYPES, defaultBodyPolicy } from '../../src/telemetry/body-policy.ts';
import {
  defaultTelemetryConfig,
  isCategoryOn,
  isScreenshotOn,
  mergeTelemetryConfig,
  validateTelemetryPatch,
  withStartFlags,
} from '../../src/telemetry/telemetry-config.ts';

const DEFAULT_BODIES = {
  enabled: true,
  resource_types: ['Document', 'XHR', 'Fetch', 'EventSource', 'Other'],
  mime_types: [...DEFAULT_BODY_MIME_TYPES],
  max_bytes: 65536,
};

describe('telemetry config merge', () => {
  it("defaults to enabled with every category (the official client's and snapshot) explicit and on", () => {
    const on = { enabled: true };
    expect(defaultTelemetryConfig()).toEqual({
      enabled: true,
      browser: {
        console: on,
        network: { enabled: true, bodies: DEFAULT_BODIES },
        page: on,
        interaction: on,
        snapshot: on,
        screenshot: on,
        control: { enabled: true, include_urls: false },
        connection: on,
        system: on,
        captcha: on,
      },
    });
  });

  it('keeps the categories this agent has no events for, as sent, and control.include_urls', () => {
    const merged = mergeTelemetryConfig(defaultTelemetryConfig(), { browser: { control: { enabled: false }, captcha: { enabled: false } } });
    expect(merged.browser.control).toEqual({ enabled: false, include_urls: false });
    expect(mergeTelemetryConfig(merged, { browser: { control: { include_urls: true } } }).browser.control).toEqual({ enabled: false, include_urls: true });
    expect(merged.browser.captcha).toEqual({ enabled: false });
    expect(merged.browser.system).toEqual({ enabled: true });
  });

  it('switches screenshots with the screenshot category', () => {
    const off = mergeTelemetryConfig(defaultTelemetryConfig(), { browser: { screenshot: { enabled: false } } });
    expect(isScreenshotOn(off)).toBe(false);
    expect(isScreenshotOn(mergeTelemetryConfig(off, { browser: { screenshot: { enabled: true } } }))).toBe(true);
    expect(isScreenshotOn(mergeTelemetryConfig(defaultTelemetryConfig(), { enabled: false }))).toBe(false);
  });

  it('merges body policy fields one by one and replaces lists whole', () => {
    const merged = mergeTelemetryConfig(defaultTelemetryConfig(), { browser: { network: { bodies: { resource_types: ['Fetch'], max_bytes: 100 } } } });
    expect(merged.browser.network).toEqual({ enabled: true, bodies: { ...DEFAULT_BODIES, resource_types: ['Fetch'], max_bytes: 100 } });
    const again = mergeTelemetryConfig(merged, { browser: { network: { enabled: false } } });
    expect(again.browser.network.bodies.resource_types).toEqual(['Fetch']);
  });

  it('takes true and false as shorthand for the body policy enabled flag', () => {
    const off = mergeTelemetryConfig(defaultTelemetryConfig(), { browser: { network: { bodies: false } } });
    expect(off.browser.network.bodies).toEqual({ ...DEFAULT_BODIES, enabled: false });
    expect(mergeTelemetryConfig(off, { browser: { network: { bodies: true } } }).browser.network.bodies).toEqual(DEFAULT_BODIES);
  });

  it('starts with --screenshots off as the screenshot category off, and --max-body-bytes as max_bytes', () => {
    const config = withStartFlags(defaultTelemetryConfig(), { screenshots: false, maxBodyBytes: 1000 });
    expect(config.browser.screenshot.enabled).toBe(false);
    expect(config.browser.network.bodies.max_bytes).toBe(1000);
    const given = mergeTelemetryConfig(defaultTelemetryConfig(), { browser: { network: { bodies: { max_bytes: 10 } } } });
    expect(withStartFlags(given, { maxBodyBytes: 1000 }).browser.network.bodies.max_bytes).toBe(10);
    expect(withStartFlags(defaultTelemetryConfig(), { screenshots: true }).browser.screenshot.enabled).toBe(true);
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

  it('accepts the categories of the official client', () => {
    const on = { enabled: true };
    expect(validateTelemetryPatch({ browser: { screenshot: on, control: on, connection: on, system: on, captcha: on } })).toEqual([]);
  });

  it('accepts a body policy and names each bad field of one', () => {
    expect(
      validateTelemetryPatch({
        browser: { network: { bodies: { enabled: true, resource_types: ['Script'], mime_types: ['text/*', '+json', 'Application/JSON'], max_bytes: 0 } } },
      }),
    ).toEqual([]);
    expect(validateTelemetryPatch({ browser: { network: { bodies: false } } })).toEqual([]);
    const problems = validateTelemetryPatch({
      browser: { network: { bodies: { resource_types: ['xhr', 3], mime_types: ['json', 'text/*'], max_bytes: -1, size: 1 } }, page: { bodies: {} } },
    });
    expect(problems.map((p) => p.field).sort()).toEqual([
      'browser.network.bodies.max_bytes',
      'browser.network.bodies.mime_types[0]',
      'browser.network.bodies.resource_types[0]',
      'browser.network.bodies.resource_types[1]',
      'browser.network.bodies.size',
      'browser.page.bodies',
    ]);
    expect(validateTelemetryPatch({ browser: { network: { bodies: 'all' } } }).map((p) => p.field)).toEqual(['browser.network.bodies']);
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
    expect(() => parseBrowserPatch({ telemetry: { browser: { console: { on: true } } } })).toThrow(
      expect.objectContaining({ details: [expect.objectContaining({ field: 'telemetry.browser.console.on' })] }),
    );
  });
});

describe('body policy matching', () => {
  const matcher = new BodyMatcher(defaultBodyPolicy());

  it('wants textual documents, XHR, fetch, event streams and unclassified requests by default', () => {
    expect(matcher.wants('Document', 'text/html')).toBe(true);
    expect(matcher.wants('XHR', 'application/json; charset=utf-8')).toBe(true);
    expect(matcher.wants('Fetch', 'application/vnd.api+json')).toBe(true);
    expect(matcher.wants('EventSource', 'text/event-stream')).toBe(true);
    expect(matcher.wants(undefined, 'text/plain')).toBe(true);
  });

  it('leaves out stylesheets, scripts and non-textual types by default', () => {
    expect(matcher.wants('Stylesheet', 'text/css')).toBe(false);
    expect(matcher.wants('Script', 'application/javascript')).toBe(false);
    expect(matcher.wants('Fetch', 'image/png')).toBe(false);
    expect(matcher.wants('Fetch', 'application/octet-stream')).toBe(false);
    expect(matcher.wants('Fetch', '')).toBe(false);
  });

  it('matches exact types, type wildcards and suffixes case-insensitively', () => {
    const custom = new BodyMatcher({ ...defaultBodyPolicy(), resource_types: ['Script', 'Image'], mime_types: ['image/*', 'application/javascript', '+xml'] });
    expect(custom.wants('Image', 'IMAGE/PNG')).toBe(true);
    expect(custom.wants('Script', 'application/javascript')).toBe(true);
    expect(custom.wants('Image', 'image/svg+xml')).toBe(true);
    expect(custom.wants('Script', 'text/javascript')).toBe(false);
    expect(custom.wants('Document', 'image/png')).toBe(false);
  });

  it('wants nothing when off', () => {
    expect(new BodyMatcher({ ...defaultBodyPolicy(), enabled: false }).wants('Document', 'text/html')).toBe(false);
  });
});

describe('telemetry config at start', () => {
  it('takes a body policy and the official client categories in --telemetry', async () => {
    const { parseConfig } = await import('../../src/config.ts');
    const telemetry = JSON.stringify({ browser: { network: { bodies: { resource_types: ['Fetch'], max_bytes: 10 } }, captcha: { enabled: false } } });
    const config = parseConfig(['--telemetry', telemetry, '--token', 't'], {});
    expect(config.telemetry.browser.network.bodies).toMatchObject({ enabled: true, resource_types: ['Fetch'], max_bytes: 10 });
    expect(config.telemetry.browser.captcha.enabled).toBe(false);
  });

  it('refuses a bad body policy in --telemetry, naming the field', async () => {
    const { parseConfig } = await import('../../src/config.ts');
    expect(() => parseConfig(['--telemetry', '{"browser":{"network":{"bodies":{"resource_types":["Scripts"]}}}}', '--token', 't'], {})).toThrow(
      /browser\.network\.bodies\.resource_types\[0\]/,
    );
  });

  it('starts the screenshot category off with --screenshots off, and max_bytes at --max-body-bytes', async () => {
    const { parseConfig } = await import('../../src/config.ts');
    const config = parseConfig(['--screenshots', 'off', '--max-body-bytes', '1KiB', '--token', 't'], {});
    expect(config.telemetry.browser.screenshot.enabled).toBe(false);
    expect(config.telemetry.browser.network.bodies.max_bytes).toBe(1024);
  });
});
