import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CONFIG_CATEGORIES, defaultTelemetryConfig } from '../../src/telemetry/telemetry-config.ts';
import { ConfigError, defaultDataDir, helpText, parseCommandLine, parseConfig, resolveConfig, type Config } from '../../src/config.ts';
import { DEFAULT_LIMITS } from '../../src/limits.ts';

const noEnv = {};

/** The ConfigError message of a failing parse; fails the test when it does not throw one. */
function errorOf(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message;
  }
  throw new Error('expected a ConfigError');
}

const parseError = (argv: string[], env: Record<string, string> = {}) => errorOf(() => parseConfig(argv, env));

const tempDir = mkdtempSync(join(tmpdir(), 'bta-config-test-'));
afterAll(() => rmSync(tempDir, { recursive: true, force: true }));
let fileCount = 0;
function tokensFile(content: string): string {
  const path = join(tempDir, `tokens-${fileCount++}.json`);
  writeFileSync(path, content);
  return path;
}

const URL_SAFE_16 = /^[A-Za-z0-9_-]{16,}$/;

describe('defaults', () => {
  const config = parseConfig([], noEnv);

  it('listens on 127.0.0.1:10001', () => {
    expect([config.host, config.port]).toEqual(['127.0.0.1', 10001]);
  });

  it('runs in embedded mode without a cdp url or chrome path', () => {
    expect([config.cdpUrl, config.chromePath]).toEqual([undefined, undefined]);
  });

  it('keeps 16384 events and 64 MiB in the ring', () => {
    expect([config.ringEvents, config.ringBytes]).toEqual([16384, 64 * 1024 * 1024]);
  });

  it('sends keepalives every 15000 ms', () => {
    expect(config.keepaliveMs).toBe(15000);
  });

  it('logs at info', () => {
    expect(config.logLevel).toBe('info');
  });

  it('captures screenshots', () => {
    expect(config.screenshots).toBe(true);
  });

  it('enables telemetry with every category explicit and on', () => {
    expect(config.telemetry).toEqual(defaultTelemetryConfig());
    expect(config.telemetry.enabled).toBe(true);
    for (const category of CONFIG_CATEGORIES) expect(config.telemetry.browser[category].enabled).toBe(true);
  });

  it('uses the limits of section 6.6', () => {
    expect(config.limits).toEqual(DEFAULT_LIMITS);
  });

  it('generates a URL-safe session id of at least 16 characters', () => {
    expect(config.sessionId).toMatch(URL_SAFE_16);
  });

  it('generates a different session id each time', () => {
    expect(parseConfig([], noEnv).sessionId).not.toBe(config.sessionId);
  });

  it('generates one token with every scope', () => {
    expect(config.tokens).toEqual([{ token: expect.any(String), scopes: ['*'] }]);
  });

  it('generates a URL-safe token of at least 16 characters', () => {
    expect(config.tokens[0]!.token).toMatch(URL_SAFE_16);
  });

  it('marks the token as generated', () => {
    expect(config.tokenGenerated).toBe(true);
  });
});

describe('each flag and its environment variable', () => {
  // [flag, env var, text, config reader, expected]
  const cases: Array<[string, string, string, (c: Config) => unknown, unknown]> = [
    ['--cdp-url', 'CDP_URL', 'http://127.0.0.1:9222', (c) => c.cdpUrl, 'http://127.0.0.1:9222'],
    ['--chrome-path', 'CHROME_PATH', '/opt/chromium/chrome', (c) => c.chromePath, '/opt/chromium/chrome'],
    ['--host', 'HOST', '0.0.0.0', (c) => c.host, '0.0.0.0'],
    ['--port', 'PORT', '8080', (c) => c.port, 8080],
    ['--session-id', 'SESSION_ID', 'sess_ABC-123', (c) => c.sessionId, 'sess_ABC-123'],
    ['--token', 'AGENT_TOKEN', 's3cret-token', (c) => c.tokens, [{ token: 's3cret-token', scopes: ['*'] }]],
    ['--telemetry', 'TELEMETRY', 'off', (c) => c.telemetry.enabled, false],
    ['--ring-events', 'RING_EVENTS', '100', (c) => c.ringEvents, 100],
    ['--ring-bytes', 'RING_BYTES', '4096', (c) => c.ringBytes, 4096],
    ['--keepalive-ms', 'KEEPALIVE_MS', '500', (c) => c.keepaliveMs, 500],
    ['--log-level', 'LOG_LEVEL', 'debug', (c) => c.logLevel, 'debug'],
    ['--screenshots', 'SCREENSHOTS', 'off', (c) => c.screenshots, false],
    ['--max-body-bytes', 'MAX_BODY_BYTES', '1000', (c) => c.limits.maxBodyBytes, 1000],
    ['--max-body-fetch-bytes', 'MAX_BODY_FETCH_BYTES', '2000', (c) => c.limits.maxBodyFetchBytes, 2000],
    ['--max-post-data-bytes', 'MAX_POST_DATA_BYTES', '3000', (c) => c.limits.maxPostDataBytes, 3000],
    ['--max-console-text-bytes', 'MAX_CONSOLE_TEXT_BYTES', '4000', (c) => c.limits.maxConsoleTextBytes, 4000],
    ['--max-console-args', 'MAX_CONSOLE_ARGS', '5', (c) => c.limits.maxConsoleArgs, 5],
    ['--max-header-value-bytes', 'MAX_HEADER_VALUE_BYTES', '6000', (c) => c.limits.maxHeaderValueBytes, 6000],
    ['--max-stack-frames', 'MAX_STACK_FRAMES', '7', (c) => c.limits.maxStackFrames, 7],
    ['--max-event-data-bytes', 'MAX_EVENT_DATA_BYTES', '8000', (c) => c.limits.maxEventDataBytes, 8000],
    ['--max-upload-bytes', 'MAX_UPLOAD_BYTES', '9000', (c) => c.limits.maxUploadBytes, 9000],
  ];

  it.each(cases)('%s sets its value', (flag, _env, text, read, expected) => {
    expect(read(parseConfig([flag, text], noEnv))).toEqual(expected);
  });

  it.each(cases)('%s accepts the --flag=value form', (flag, _env, text, read, expected) => {
    expect(read(parseConfig([`${flag}=${text}`], noEnv))).toEqual(expected);
  });

  it.each(cases)('%s can be set by %s', (_flag, env, text, read, expected) => {
    expect(read(parseConfig([], { [env]: text }))).toEqual(expected);
  });

  it('--tokens-file can be set by AGENT_TOKENS_FILE', () => {
    const path = tokensFile('[{"token":"file-token","scopes":["fs"]}]');
    expect(parseConfig([], { AGENT_TOKENS_FILE: path }).tokens).toEqual([{ token: 'file-token', scopes: ['fs'] }]);
  });
});

describe('flags and environment together', () => {
  it('a flag beats its environment variable', () => {
    expect(parseConfig(['--port', '2000'], { PORT: '3000' }).port).toBe(2000);
  });

  it('a flag wins even when its environment variable is invalid', () => {
    expect(parseConfig(['--port', '2000'], { PORT: 'nope' }).port).toBe(2000);
  });

  it('an empty environment variable counts as unset', () => {
    expect(parseConfig([], { PORT: '' }).port).toBe(10001);
  });

  it('unrelated environment variables are ignored', () => {
    expect(parseConfig([], { PATH: '/usr/bin', HOME: '/root' }).port).toBe(10001);
  });

  it('a configured token is not marked as generated', () => {
    expect(parseConfig(['--token', 'abc'], noEnv).tokenGenerated).toBe(false);
  });

  it('--token and --tokens-file combine', () => {
    const path = tokensFile('[{"token":"reader","scopes":["telemetry:read"]}]');
    expect(parseConfig(['--token', 'admin', '--tokens-file', path], noEnv).tokens.map((g) => g.token)).toEqual(['admin', 'reader']);
  });
});

describe('value forms', () => {
  it('--port 0 is accepted to pick a free port', () => {
    expect(parseConfig(['--port', '0'], noEnv).port).toBe(0);
  });

  it('--port 65535 is accepted', () => {
    expect(parseConfig(['--port', '65535'], noEnv).port).toBe(65535);
  });

  it.each([
    ['512KiB', 512 * 1024],
    ['64MiB', 64 * 1024 * 1024],
    ['2GiB', 2 * 1024 * 1024 * 1024],
    ['64mib', 64 * 1024 * 1024],
    ['1 MiB', 1024 * 1024],
  ])('byte sizes accept %s', (text, bytes) => {
    expect(parseConfig(['--ring-bytes', text], noEnv).ringBytes).toBe(bytes);
  });

  it('byte-size limits accept suffixes too', () => {
    expect(parseConfig(['--max-upload-bytes', '1GiB'], noEnv).limits.maxUploadBytes).toBe(1024 ** 3);
  });

  it('--cdp-url accepts a ws:// browser URL with a path', () => {
    const url = 'ws://127.0.0.1:9222/devtools/browser/1b2c3d';
    expect(parseConfig(['--cdp-url', url], noEnv).cdpUrl).toBe(url);
  });

  it('--cdp-url accepts a trailing slash after the port', () => {
    expect(parseConfig(['--cdp-url', 'https://chrome.internal:9222/'], noEnv).cdpUrl).toBe('https://chrome.internal:9222/');
  });

  it('--screenshots accepts true and false', () => {
    expect([parseConfig(['--screenshots', 'false'], noEnv).screenshots, parseConfig(['--screenshots', 'true'], noEnv).screenshots]).toEqual([false, true]);
  });

  it('--log-level is case-insensitive', () => {
    expect(parseConfig(['--log-level', 'WARN'], noEnv).logLevel).toBe('warn');
  });

  it('a value starting with a single dash is taken as the value', () => {
    expect(parseError(['--port', '-1'])).toBe('--port: expected an integer from 0 to 65535, got "-1"');
  });

  it('--flag=value keeps everything after the first =', () => {
    expect(parseConfig(['--token=a=b=='], noEnv).tokens[0]!.token).toBe('a=b==');
  });
});

describe('telemetry', () => {
  it('merges a JSON patch onto the defaults', () => {
    const config = parseConfig(['--telemetry', '{"browser":{"network":{"enabled":false}}}'], noEnv);
    const expected = defaultTelemetryConfig();
    expected.browser.network.enabled = false;
    expect(config.telemetry).toEqual(expected);
  });

  it('"off" disables telemetry and keeps every category explicit', () => {
    expect(parseConfig(['--telemetry', 'off'], noEnv).telemetry).toEqual({ ...defaultTelemetryConfig(), enabled: false });
  });

  it('"on" gives the default config', () => {
    expect(parseConfig(['--telemetry', 'on'], noEnv).telemetry).toEqual(parseConfig([], noEnv).telemetry);
  });

  it('{"enabled":false} disables telemetry', () => {
    expect(parseConfig(['--telemetry', '{"enabled":false}'], noEnv).telemetry.enabled).toBe(false);
  });

  it('an unknown top-level key is rejected with its path', () => {
    expect(parseError(['--telemetry', '{"colour":true}'])).toBe('--telemetry: colour: unknown key');
  });

  it('an unknown category is rejected with its path', () => {
    expect(parseError(['--telemetry', '{"browser":{"dom":{"enabled":true}}}'])).toMatch(/^--telemetry: browser\.dom: unknown category/);
  });

  it('an unknown key inside a category is rejected with its path', () => {
    expect(parseError(['--telemetry', '{"browser":{"console":{"level":"warn"}}}'])).toBe('--telemetry: browser.console.level: unknown key');
  });

  it('a wrong type is rejected with its path', () => {
    expect(parseError(['--telemetry', '{"enabled":"yes"}'])).toBe('--telemetry: enabled: must be a boolean');
  });

  it('bad JSON is rejected naming the flag and the value', () => {
    expect(parseError(['--telemetry', '{enabled'])).toMatch(/^--telemetry: expected a JSON object, "on" or "off", got "\{enabled"/);
  });

  it('a JSON value that is not an object is rejected', () => {
    expect(parseError(['--telemetry', '[]'])).toBe('--telemetry: expected a JSON object, got []');
  });

  it('an error from TELEMETRY names the environment variable', () => {
    expect(parseError([], { TELEMETRY: '{"x":1}' })).toBe('TELEMETRY (env): x: unknown key');
  });
});

describe('tokens file', () => {
  it('loads each entry with its scopes', () => {
    const path = tokensFile('[{"token":"a","scopes":["telemetry:read","telemetry:write"]},{"token":"b","scopes":["*"]}]');
    expect(parseConfig(['--tokens-file', path], noEnv).tokens).toEqual([
      { token: 'a', scopes: ['telemetry:read', 'telemetry:write'] },
      { token: 'b', scopes: ['*'] },
    ]);
  });

  it('a tokens file alone means no token is generated', () => {
    const path = tokensFile('[{"token":"a","scopes":["fs"]}]');
    expect(parseConfig(['--tokens-file', path], noEnv).tokenGenerated).toBe(false);
  });

  it('repeated scopes of one entry are kept once', () => {
    const path = tokensFile('[{"token":"a","scopes":["fs","fs"]}]');
    expect(parseConfig(['--tokens-file', path], noEnv).tokens[0]!.scopes).toEqual(['fs']);
  });

  it('a missing file is an error naming the path', () => {
    const path = join(tempDir, 'absent.json');
    expect(parseError(['--tokens-file', path])).toBe(`--tokens-file: cannot read ${JSON.stringify(path)} (ENOENT)`);
  });

  it('invalid JSON is an error that does not quote the file', () => {
    const path = tokensFile('[{"token":"leaky-secret", oops}]');
    const message = parseError(['--tokens-file', path]);
    expect(message).toMatch(/^--tokens-file: ".*" is not valid JSON/);
    expect(message).not.toContain('leaky-secret');
  });

  it('a JSON value that is not an array is rejected', () => {
    const path = tokensFile('{"token":"a","scopes":["*"]}');
    expect(parseError(['--tokens-file', path])).toMatch(/: \$: expected a JSON array/);
  });

  it('an empty array is rejected', () => {
    const path = tokensFile('[]');
    expect(parseError(['--tokens-file', path])).toMatch(/: \$: expected at least one/);
  });

  it('an unknown scope is named in the error with its path', () => {
    const path = tokensFile('[{"token":"a","scopes":["fs"]},{"token":"b","scopes":["fs","admin"]}]');
    expect(parseError(['--tokens-file', path])).toMatch(/^--tokens-file: ".*": \[1\]\.scopes\[1\]: unknown scope "admin" \(expected one of /);
  });

  it('an empty token is rejected', () => {
    const path = tokensFile('[{"token":"","scopes":["*"]}]');
    expect(parseError(['--tokens-file', path])).toMatch(/\[0\]\.token: expected a non-empty token/);
  });

  it('a token that is not a string is rejected', () => {
    const path = tokensFile('[{"token":42,"scopes":["*"]}]');
    expect(parseError(['--tokens-file', path])).toMatch(/\[0\]\.token: expected a non-empty token/);
  });

  it('an empty scope list is rejected', () => {
    const path = tokensFile('[{"token":"a","scopes":[]}]');
    expect(parseError(['--tokens-file', path])).toMatch(/\[0\]\.scopes: expected a non-empty array of scopes/);
  });

  it('an unknown key in an entry is rejected', () => {
    const path = tokensFile('[{"token":"a","scopes":["*"],"note":"x"}]');
    expect(parseError(['--tokens-file', path])).toMatch(/\[0\]\.note: unknown key/);
  });

  it('a duplicate token in the file is rejected', () => {
    const path = tokensFile('[{"token":"same","scopes":["fs"]},{"token":"same","scopes":["computer"]}]');
    expect(parseError(['--tokens-file', path])).toBe('--tokens-file: [1].token: duplicate token (each token may appear once)');
  });

  it('a file token equal to --token is rejected', () => {
    const path = tokensFile('[{"token":"same","scopes":["fs"]}]');
    expect(parseError(['--token', 'same', '--tokens-file', path])).toMatch(/^--tokens-file: \[0\]\.token: duplicate token/);
  });

  it('an error from AGENT_TOKENS_FILE names the environment variable', () => {
    const path = tokensFile('[]');
    expect(parseError([], { AGENT_TOKENS_FILE: path })).toMatch(/^AGENT_TOKENS_FILE \(env\): /);
  });
});

describe('bad values', () => {
  it.each([
    [['--port', 'abc'], '--port: expected an integer from 0 to 65535, got "abc"'],
    [['--port', '65536'], '--port: expected an integer from 0 to 65535, got "65536"'],
    [['--port', '80.5'], '--port: expected an integer from 0 to 65535, got "80.5"'],
    [['--port', ''], '--port: expected an integer from 0 to 65535, got ""'],
    [['--host', 'my host'], '--host: expected a host name or IP address without spaces, got "my host"'],
    [['--session-id', 'has/slash'], '--session-id: expected 1 to 128 characters of A-Z a-z 0-9 _ -, got "has/slash"'],
    [['--ring-events', '0'], '--ring-events: expected a positive integer, got "0"'],
    [['--keepalive-ms', '5'], '--keepalive-ms: expected an integer from 10 to 3600000, got "5"'],
    [['--log-level', 'verbose'], '--log-level: expected one of fatal, error, warn, info, debug, trace, silent, got "verbose"'],
    [['--screenshots', 'maybe'], '--screenshots: expected on, off, true or false, got "maybe"'],
    [['--max-console-args', '1KiB'], '--max-console-args: expected a positive integer, got "1KiB"'],
    [['--chrome-path', ''], '--chrome-path: expected a non-empty string, got ""'],
  ])('%j is rejected', (argv, message) => {
    expect(parseError(argv)).toBe(message);
  });

  it('a session id longer than 128 characters is rejected', () => {
    expect(parseError(['--session-id', 'a'.repeat(129)])).toMatch(/^--session-id: expected 1 to 128 characters/);
  });

  it.each(['0', '64MB', '1.5MiB', '64 mb', '-1'])('a byte size of %j is rejected', (text) => {
    expect(parseError(['--max-body-bytes', text])).toBe(
      `--max-body-bytes: expected a positive byte count: an integer, optionally with a KiB, MiB or GiB suffix (e.g. 64MiB), got ${JSON.stringify(text)}`,
    );
  });

  it.each(['localhost:9222', 'http://localhost', 'http://localhost:9222/json/version', 'ftp://h:1', 'http://u:p@h:1', 'not a url'])(
    '--cdp-url %j is rejected',
    (text) => {
      expect(parseError(['--cdp-url', text])).toBe(`--cdp-url: expected an http(s)://host:port URL or a ws(s):// browser URL, got ${JSON.stringify(text)}`);
    },
  );

  it('an error from an environment variable names it', () => {
    expect(parseError([], { PORT: 'abc' })).toBe('PORT (env): expected an integer from 0 to 65535, got "abc"');
  });

  it('a bad limit from the environment names its variable', () => {
    expect(parseError([], { MAX_STACK_FRAMES: 'lots' })).toBe('MAX_STACK_FRAMES (env): expected a positive integer, got "lots"');
  });

  it('every error message is one line', () => {
    expect(parseError(['--telemetry', '{"a":1,"b":2,"browser":{"x":{}}}'])).not.toContain('\n');
  });

  it('errors are ConfigError instances', () => {
    expect(() => parseConfig(['--port', 'x'], noEnv)).toThrow(ConfigError);
  });
});

describe('command-line syntax', () => {
  it('an unknown flag is rejected', () => {
    expect(parseError(['--prot', '1'])).toBe('unknown flag "--prot" (see --help)');
  });

  it('an unknown flag in --flag=value form is named without its value', () => {
    expect(parseError(['--tokn=hunter2'])).toBe('unknown flag "--tokn" (see --help)');
  });

  it('an unknown short flag is rejected', () => {
    expect(parseError(['-p', '1'])).toBe('unknown flag "-p" (see --help)');
  });

  it('a positional argument is rejected', () => {
    expect(parseError(['serve'])).toBe('unexpected argument "serve" (this program takes only flags; see --help)');
  });

  it('a missing value at the end is rejected', () => {
    expect(parseError(['--port'])).toBe('--port: missing value (expected an integer from 0 to 65535)');
  });

  it('a flag followed by another flag is a missing value', () => {
    expect(parseError(['--host', '--port', '1'])).toBe('--host: missing value (expected a host name or IP address without spaces)');
  });

  it('a flag given twice is rejected', () => {
    expect(parseError(['--port', '1', '--port=2'])).toBe('--port: given more than once');
  });

  it('--version with a value is rejected', () => {
    expect(parseError(['--version=yes'])).toBe('--version: takes no value');
  });
});

describe('help and version', () => {
  it('--help returns the help text', () => {
    expect(parseCommandLine(['--help'], noEnv)).toEqual({ kind: 'help', text: helpText() });
  });

  it('-h returns the help text', () => {
    expect(parseCommandLine(['-h'], noEnv).kind).toBe('help');
  });

  it('--version returns version', () => {
    expect(parseCommandLine(['--version'], noEnv)).toEqual({ kind: 'version' });
  });

  it('-v returns version', () => {
    expect(parseCommandLine(['-v'], noEnv).kind).toBe('version');
  });

  it('--help wins over other errors on the line', () => {
    expect(parseCommandLine(['--port', 'abc', '--bogus', '--help'], noEnv).kind).toBe('help');
  });

  it('--help ignores invalid environment variables', () => {
    expect(parseCommandLine(['--help'], { PORT: 'abc' }).kind).toBe('help');
  });

  it('without --help or --version the result is a run', () => {
    expect(parseCommandLine(['--port', '1'], noEnv).kind).toBe('run');
  });

  it('parseConfig throws on --help', () => {
    expect(() => parseConfig(['--help'], noEnv)).toThrow(ConfigError);
  });

  const everyFlag = [
    ['--cdp-url', 'CDP_URL'],
    ['--chrome-path', 'CHROME_PATH'],
    ['--host', 'HOST'],
    ['--port', 'PORT'],
    ['--session-id', 'SESSION_ID'],
    ['--token', 'AGENT_TOKEN'],
    ['--tokens-file', 'AGENT_TOKENS_FILE'],
    ['--telemetry', 'TELEMETRY'],
    ['--ring-events', 'RING_EVENTS'],
    ['--ring-bytes', 'RING_BYTES'],
    ['--keepalive-ms', 'KEEPALIVE_MS'],
    ['--log-level', 'LOG_LEVEL'],
    ['--screenshots', 'SCREENSHOTS'],
    ['--max-body-bytes', 'MAX_BODY_BYTES'],
    ['--max-body-fetch-bytes', 'MAX_BODY_FETCH_BYTES'],
    ['--max-post-data-bytes', 'MAX_POST_DATA_BYTES'],
    ['--max-console-text-bytes', 'MAX_CONSOLE_TEXT_BYTES'],
    ['--max-console-args', 'MAX_CONSOLE_ARGS'],
    ['--max-header-value-bytes', 'MAX_HEADER_VALUE_BYTES'],
    ['--max-stack-frames', 'MAX_STACK_FRAMES'],
    ['--max-event-data-bytes', 'MAX_EVENT_DATA_BYTES'],
    ['--max-upload-bytes', 'MAX_UPLOAD_BYTES'],
    ['--help', '-h'],
    ['--version', '-v'],
  ];

  it.each(everyFlag)('the help text lists %s with %s', (flag, env) => {
    const text = helpText();
    expect(text).toMatch(new RegExp(`${flag}\\b`));
    expect(text).toContain(env);
  });

  it('the help text shows the default port', () => {
    expect(helpText()).toMatch(/--port <port>\s+env PORT, default: 10001/);
  });

  it('the help text documents the byte-size suffixes', () => {
    expect(helpText()).toContain('KiB, MiB or GiB');
  });

  it('the help text shows the default of each limit', () => {
    expect(helpText()).toMatch(/--max-upload-bytes <size>\s+env MAX_UPLOAD_BYTES, default: 512MiB/);
  });
});

describe('token values never appear in errors', () => {
  const secret = 'p@ss word';

  it('a bad --token is described without its value', () => {
    const message = parseError(['--token', secret]);
    expect(message).toBe('--token: expected a non-empty token of printable ASCII without spaces, at most 4096 characters (the value is not shown)');
  });

  it('a bad AGENT_TOKEN is described without its value', () => {
    expect(parseError([], { AGENT_TOKEN: secret })).not.toContain(secret);
  });

  it('an empty --token is rejected', () => {
    expect(parseError(['--token', ''])).toMatch(/^--token: expected a non-empty token/);
  });

  it('a word following a token value is not echoed', () => {
    expect(parseError(['--token', 'half', 'other-half'])).toBe('unexpected argument after --token (this program takes only flags)');
  });

  it('a bad token in the tokens file is described without its value', () => {
    const path = tokensFile(JSON.stringify([{ token: 'file secret', scopes: ['*'] }]));
    expect(parseError(['--tokens-file', path])).not.toContain('file secret');
  });

  it('a duplicate token is reported without its value', () => {
    const path = tokensFile('[{"token":"dup-secret","scopes":["fs"]},{"token":"dup-secret","scopes":["fs"]}]');
    expect(parseError(['--tokens-file', path])).not.toContain('dup-secret');
  });

  it('an error elsewhere does not mention a valid token', () => {
    expect(parseError(['--token', 'valid-secret', '--port', 'x'])).not.toContain('valid-secret');
  });
});

describe('resolveConfig', () => {
  it('applies the same defaults as the command line, but for the data directory (RAM only in code)', () => {
    const { sessionId: _a, tokens: _b, ...fromCode } = resolveConfig({});
    const { sessionId: _c, tokens: _d, dataDir, ...fromCli } = parseConfig([], noEnv);
    expect(fromCode).toEqual(fromCli);
    expect(dataDir).toBe(defaultDataDir(noEnv));
    expect(resolveConfig({}).dataDir).toBeUndefined();
  });

  it('takes --data-dir none as RAM only, and an absolute directory as given', () => {
    expect(parseConfig(['--data-dir', 'none'], noEnv).dataDir).toBeUndefined();
    expect(parseConfig(['--data-dir', '/srv/bta/../data'], noEnv).dataDir).toBe('/srv/data');
    expect(parseConfig([], { DATA_DIR: '/srv/x' }).dataDir).toBe('/srv/x');
    expect(() => parseConfig(['--data-dir', 'relative/dir'], noEnv)).toThrow(/--data-dir/);
    expect([parseConfig(['--retain-bytes', '2GiB', '--retain-hours', '24'], noEnv)].map((c) => [c.retainBytes, c.retainHours])).toEqual([[2 * 1024 ** 3, 24]]);
  });

  it('keeps given values', () => {
    const config = resolveConfig({ port: 0, host: '::1', sessionId: 'abc', logLevel: 'silent', screenshots: false });
    expect([config.port, config.host, config.sessionId, config.logLevel, config.screenshots]).toEqual([0, '::1', 'abc', 'silent', false]);
  });

  it('a token option becomes a grant with every scope', () => {
    expect(resolveConfig({ token: 't0k' }).tokens).toEqual([{ token: 't0k', scopes: ['*'] }]);
  });

  it('given grants are kept and no token is generated', () => {
    const config = resolveConfig({ tokens: [{ token: 'r', scopes: ['telemetry:read'] }] });
    expect([config.tokens, config.tokenGenerated]).toEqual([[{ token: 'r', scopes: ['telemetry:read'] }], false]);
  });

  it('generates a token when none is given', () => {
    const config = resolveConfig({});
    expect([config.tokenGenerated, config.tokens[0]!.token]).toEqual([true, expect.stringMatching(URL_SAFE_16)]);
  });

  it('takes no tokenGenerated: a Config the command line resolved goes to startAgentWithConfig as it is', () => {
    expect(() => resolveConfig({ tokenGenerated: true } as never)).toThrow('tokenGenerated: unknown option');
  });

  it('merges partial limits onto the defaults', () => {
    expect(resolveConfig({ limits: { maxStackFrames: 3 } }).limits).toEqual({ ...DEFAULT_LIMITS, maxStackFrames: 3 });
  });

  it('merges a telemetry patch onto the defaults', () => {
    expect(resolveConfig({ telemetry: { browser: { page: { enabled: false } } } }).telemetry.browser.page.enabled).toBe(false);
  });

  it('rejects an out-of-range port naming the option', () => {
    expect(errorOf(() => resolveConfig({ port: 70000 }))).toBe('port: expected an integer from 0 to 65535, got 70000');
  });

  it('rejects a port given as a string', () => {
    expect(errorOf(() => resolveConfig({ port: '80' as unknown as number }))).toBe('port: expected an integer from 0 to 65535, got "80"');
  });

  it('rejects a bad limit naming its path', () => {
    expect(errorOf(() => resolveConfig({ limits: { maxConsoleArgs: 0 } }))).toBe('limits.maxConsoleArgs: expected a positive integer, got 0');
  });

  it('rejects an unknown limit', () => {
    expect(errorOf(() => resolveConfig({ limits: { maxFoo: 1 } as never }))).toMatch(/^limits\.maxFoo: unknown limit/);
  });

  it('rejects an unknown option', () => {
    expect(errorOf(() => resolveConfig({ prot: 1 } as never))).toBe('prot: unknown option');
  });

  it('rejects an unknown telemetry key naming its path', () => {
    expect(errorOf(() => resolveConfig({ telemetry: { browser: { console: { on: true } } } as never }))).toBe('telemetry: browser.console.on: unknown key');
  });

  it('rejects an unknown scope naming its path', () => {
    expect(errorOf(() => resolveConfig({ tokens: [{ token: 'a', scopes: ['root' as never] }] }))).toMatch(/^tokens\[0\]\.scopes\[0\]: unknown scope "root"/);
  });

  it('rejects a bad token without echoing it', () => {
    expect(errorOf(() => resolveConfig({ token: 'with space' }))).not.toContain('with space');
  });

  it('rejects a duplicate between token and tokens', () => {
    expect(errorOf(() => resolveConfig({ token: 'x', tokens: [{ token: 'x', scopes: ['fs'] }] }))).toMatch(/^tokens\[0\]\.token: duplicate token/);
  });

  it('rejects a bad cdp url', () => {
    expect(errorOf(() => resolveConfig({ cdpUrl: 'localhost:9222' }))).toMatch(/^cdpUrl: expected an http\(s\):\/\/host:port URL/);
  });
});
