// The OTLP export's settings (docs/export.md "Flags"): flags, the standard OTEL_EXPORTER_OTLP_*
// variables and their precedence, startAgent's `otlp` option.

import { describe, expect, it } from 'vitest';
import { ConfigError, helpText, parseConfig, resolveConfig } from '../../src/config.ts';

// RAM only: the command line's default data directory would be created otherwise.
const parse = (argv: string[], env: Record<string, string> = {}) => parseConfig(['--data-dir', 'none', ...argv], env);

function errorOf(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message;
  }
  throw new Error('expected a ConfigError');
}

describe('OTLP export settings', () => {
  it('is off without an endpoint, whatever other OTEL_* variables say', () => {
    expect(parse([]).otlp).toBeUndefined();
    expect(parse([], { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_HEADERS: 'a=b' }).otlp).toBeUndefined();
  });

  it('appends /v1/logs to --otlp-endpoint and fills in the defaults', () => {
    expect(parse(['--otlp-endpoint', 'http://collector:4318']).otlp).toEqual({
      url: 'http://collector:4318/v1/logs',
      protocol: 'http/protobuf',
      categories: ['console', 'network', 'page', 'interaction', 'monitor', 'control', 'connection', 'system', 'captcha'],
      headers: {},
      queueEvents: 8192,
      queueBytes: 16 * 1024 * 1024,
    });
    expect(parse(['--otlp-endpoint', 'https://otlp.example/base/']).otlp?.url).toBe('https://otlp.example/base/v1/logs');
  });

  it('takes OTEL_EXPORTER_OTLP_LOGS_ENDPOINT as is, over OTEL_EXPORTER_OTLP_ENDPOINT; the flag wins over both', () => {
    expect(parse([], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318' }).otlp?.url).toBe('http://a:4318/v1/logs');
    const both = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'http://b:4318/custom/logs' };
    expect(parse([], both).otlp?.url).toBe('http://b:4318/custom/logs');
    expect(parse(['--otlp-endpoint=http://c:4318'], both).otlp?.url).toBe('http://c:4318/v1/logs');
  });

  it('reads the protocol from the flag, else OTEL_EXPORTER_OTLP_LOGS_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL', () => {
    const on = ['--otlp-endpoint', 'http://a:4318'];
    expect(parse([...on], { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).otlp?.protocol).toBe('http/json');
    expect(parse([...on], { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: 'http/protobuf' }).otlp?.protocol).toBe(
      'http/protobuf',
    );
    expect(parse([...on, '--otlp-protocol', 'http/json'], { OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: 'http/protobuf' }).otlp?.protocol).toBe('http/json');
  });

  it('refuses grpc, naming what it takes', () => {
    expect(errorOf(() => parse(['--otlp-endpoint', 'http://a:4318', '--otlp-protocol', 'grpc']))).toBe(
      '--otlp-protocol: expected http/protobuf or http/json (grpc is not supported), got "grpc"',
    );
  });

  it('merges OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_LOGS_HEADERS, percent-decoded, the logs ones winning', () => {
    const config = parse(['--otlp-endpoint', 'http://a:4318'], {
      OTEL_EXPORTER_OTLP_HEADERS: 'api-key=s3cret%20one, x-team=web',
      OTEL_EXPORTER_OTLP_LOGS_HEADERS: 'api-key=logs-key',
    });
    expect(config.otlp?.headers).toEqual({ 'api-key': 'logs-key', 'x-team': 'web' });
  });

  it('refuses a malformed header list without echoing it (it holds credentials)', () => {
    const message = errorOf(() => parse(['--otlp-endpoint', 'http://a:4318'], { OTEL_EXPORTER_OTLP_HEADERS: 'api-key secret-value' }));
    expect(message).toMatch(/^OTEL_EXPORTER_OTLP_HEADERS \(env\): expected key=value pairs/);
    expect(message).not.toContain('secret-value');
  });

  it('takes a category list or all, and names the categories when one is unknown', () => {
    const on = ['--otlp-endpoint', 'http://a:4318'];
    expect(parse([...on, '--otlp-categories', 'console, network']).otlp?.categories).toEqual(['console', 'network']);
    expect(parse([...on, '--otlp-categories', 'all']).otlp?.categories).toContain('screenshot');
    expect(errorOf(() => parse([...on, '--otlp-categories', 'console,logs']))).toMatch(
      /^--otlp-categories: expected a comma-separated list of console, network, page, interaction, snapshot, monitor, screenshot, control, connection, system, captcha, or all/,
    );
  });

  it('takes queue bounds as a count and a byte size', () => {
    const config = parse(['--otlp-endpoint', 'http://a:4318', '--otlp-queue-events', '100', '--otlp-queue-bytes', '2MiB']);
    expect([config.otlp?.queueEvents, config.otlp?.queueBytes]).toEqual([100, 2 * 1024 * 1024]);
  });

  it('refuses an OTLP flag without an endpoint, and an endpoint that is not http(s)', () => {
    expect(errorOf(() => parse(['--otlp-protocol', 'http/json']))).toBe('--otlp-protocol: needs --otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT)');
    expect(errorOf(() => parse(['--otlp-endpoint', 'collector:4318']))).toMatch(/^--otlp-endpoint: expected an http\(s\):\/\/ base URL/);
    expect(errorOf(() => parse([], { OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'grpc://a:4317' }))).toMatch(
      /^OTEL_EXPORTER_OTLP_LOGS_ENDPOINT \(env\): expected the full http\(s\):\/\/ URL/,
    );
  });

  it('lists the flags in --help', () => {
    for (const flag of ['--otlp-endpoint', '--otlp-protocol', '--otlp-categories', '--otlp-queue-events', '--otlp-queue-bytes'])
      expect(helpText()).toContain(flag);
    expect(helpText()).toContain('OTEL_EXPORTER_OTLP_HEADERS');
  });
});

describe('startAgent({ otlp })', () => {
  it('takes the full logs URL and fills in the defaults', () => {
    expect(resolveConfig({ otlp: { url: 'http://127.0.0.1:4318/v1/logs', categories: ['console'] } }).otlp).toMatchObject({
      url: 'http://127.0.0.1:4318/v1/logs',
      protocol: 'http/protobuf',
      categories: ['console'],
      queueEvents: 8192,
    });
  });

  it('accepts a resolved configuration back (main.ts passes it to startAgent)', () => {
    const config = parse(['--otlp-endpoint', 'http://a:4318'], { OTEL_EXPORTER_OTLP_HEADERS: 'k=v' });
    expect(resolveConfig({ otlp: config.otlp }).otlp).toEqual(config.otlp);
  });

  it('names the option in errors', () => {
    expect(errorOf(() => resolveConfig({ otlp: { url: 'http://a:4318/v1/logs', queueEvents: 0 } }))).toBe(
      'otlp.queueEvents: expected a positive integer, got 0',
    );
    expect(errorOf(() => resolveConfig({ otlp: { url: 'http://a/v1/logs', endpoint: 'x' } as never }))).toMatch(/^otlp\.endpoint: unknown option/);
    expect(errorOf(() => resolveConfig({ otlp: {} as never }))).toMatch(/^otlp\.url: missing/);
  });
});
