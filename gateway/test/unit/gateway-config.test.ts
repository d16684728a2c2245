// The gateway's flags and environment (docs/gateway.md, in the agent's style of docs/configuration.md): defaults,
// flag over env, storage selection, the create-key command, and one clear error per bad value.

import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_KEEPALIVE_MS } from '../../../src/config.ts';
import {
  DEFAULT_AGENT_KEEPALIVE_MS,
  DEFAULT_GATEWAY_PORT,
  gatewayHelpText,
  parseGatewayCommandLine,
  resolveGatewayConfig,
  type GatewayCommandLine,
} from '../../src/config.ts';
import { ConfigError } from '../../../src/settings.ts';

const noEnv = {};

function serve(argv: string[], env: Record<string, string> = {}) {
  const command = parseGatewayCommandLine(argv, env);
  if (command.kind !== 'serve') throw new Error(`expected serve, got ${command.kind}`);
  return command.config;
}

function createKey(argv: string[], env: Record<string, string> = {}) {
  const command = parseGatewayCommandLine(['create-key', ...argv], env);
  if (command.kind !== 'create-key') throw new Error(`expected create-key, got ${command.kind}`);
  return command.options;
}

function errorOf(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('defaults', () => {
  const config = serve([], noEnv);

  it('listens on 127.0.0.1:10000', () => {
    expect([config.host, config.port, DEFAULT_GATEWAY_PORT]).toEqual(['127.0.0.1', 10000, 10000]);
  });

  it('stores in SQLite under ./gateway-data', () => {
    expect(config.storage).toEqual({ kind: 'sqlite', dataDir: resolve('gateway-data') });
  });

  it('logs at info', () => {
    expect(config.logLevel).toBe('info');
  });

  it('answers no extra host names', () => {
    expect(config.allowedHosts).toEqual([]);
  });

  it("waits 10 s for a read's response head, a batch's waits + 10 s, 30 s for a silent body, 3 × 15 s for a silent stream", () => {
    expect([config.agentResponseTimeoutMs, config.agentBatchMarginMs, config.agentIdleTimeoutMs, config.agentKeepaliveMs]).toEqual([
      10_000, 10_000, 30_000, 15_000,
    ]);
  });

  it("assumes the agent's own default keepalive period", () => {
    expect(DEFAULT_AGENT_KEEPALIVE_MS).toBe(DEFAULT_KEEPALIVE_MS);
  });

  it('re-checks the keys of open streams every 30 s', () => {
    expect(config.keyRecheckMs).toBe(30_000);
  });
});

describe('--allowed-hosts', () => {
  it('takes a comma-separated list, canonical (lower case, no trailing dot, IPv6 without brackets)', () => {
    expect(serve(['--allowed-hosts', 'Gateway.Example., gw.internal,[::1],10.0.0.5']).allowedHosts).toEqual([
      'gateway.example',
      'gw.internal',
      '::1',
      '10.0.0.5',
    ]);
  });

  it('GATEWAY_ALLOWED_HOSTS sets it (every gateway variable has the GATEWAY_ prefix)', () => {
    expect(serve([], { GATEWAY_ALLOWED_HOSTS: 'gw.example' }).allowedHosts).toEqual(['gw.example']);
  });

  it("the agent's ALLOWED_HOSTS does not", () => {
    expect(serve([], { ALLOWED_HOSTS: 'agent.example' }).allowedHosts).toEqual([]);
  });

  it.each(['gw.example:443', 'user@gw.example', 'gw.example,', 'http://gw.example'])('%j is rejected naming the flag', (value) => {
    expect(errorOf(() => serve(['--allowed-hosts', value]))).toBe(
      `--allowed-hosts: expected a comma-separated list of host names or IP addresses, without ports, got ${JSON.stringify(value)}`,
    );
  });
});

describe('agent timeouts', () => {
  it.each([
    ['--agent-response-timeout-ms', 'GATEWAY_AGENT_RESPONSE_TIMEOUT_MS', 'agentResponseTimeoutMs'],
    ['--agent-idle-timeout-ms', 'GATEWAY_AGENT_IDLE_TIMEOUT_MS', 'agentIdleTimeoutMs'],
    ['--agent-keepalive-ms', 'GATEWAY_AGENT_KEEPALIVE_MS', 'agentKeepaliveMs'],
  ] as const)('%s and %s set %s', (flag, env, field) => {
    expect([serve([flag, '250'])[field], serve([], { [env]: '260' })[field]]).toEqual([250, 260]);
  });

  it.each(['0', '9', '3600001', 'soon'])('--agent-idle-timeout-ms %s is rejected', (value) => {
    expect(errorOf(() => serve(['--agent-idle-timeout-ms', value]))).toBe(
      `--agent-idle-timeout-ms: expected an integer from 10 to 3600000, got ${JSON.stringify(value)}`,
    );
  });
});

describe('flags and environment', () => {
  it('--port sets the port', () => {
    expect(serve(['--port', '0']).port).toBe(0);
  });

  it('GATEWAY_PORT sets the port', () => {
    expect(serve([], { GATEWAY_PORT: '1234' }).port).toBe(1234);
  });

  it('a flag wins over its variable', () => {
    expect(serve(['--port=5'], { GATEWAY_PORT: '1234' }).port).toBe(5);
  });

  it('an empty variable counts as unset', () => {
    expect(serve([], { GATEWAY_PORT: '' }).port).toBe(10000);
  });

  it('--data-dir is resolved to an absolute path', () => {
    expect(serve(['--data-dir', 'some/dir']).storage).toEqual({ kind: 'sqlite', dataDir: resolve('some/dir') });
  });

  it('--database-url selects PostgreSQL', () => {
    expect(serve(['--database-url', 'postgres://u:p@db:5432/gw']).storage).toEqual({ kind: 'postgres', databaseUrl: 'postgres://u:p@db:5432/gw' });
  });

  it('GATEWAY_DATABASE_URL selects PostgreSQL', () => {
    expect(serve([], { GATEWAY_DATABASE_URL: 'postgresql://db/gw' }).storage.kind).toBe('postgres');
  });

  it('--log-level sets the level', () => {
    expect(serve(['--log-level', 'silent']).logLevel).toBe('silent');
  });

  it('--host sets the listen address', () => {
    expect(serve(['--host', '0.0.0.0']).host).toBe('0.0.0.0');
  });
});

describe('errors', () => {
  it('a bad port names the flag and the value', () => {
    expect(errorOf(() => serve(['--port', '70000']))).toBe('--port: expected an integer from 0 to 65535, got "70000"');
  });

  it('a bad GATEWAY_PORT names the variable', () => {
    expect(errorOf(() => serve([], { GATEWAY_PORT: 'x' }))).toMatch(/^GATEWAY_PORT \(env\): /);
  });

  it('--data-dir and --database-url exclude each other', () => {
    expect(errorOf(() => serve(['--data-dir', 'd', '--database-url', 'postgres://h/db']))).toBe('--database-url and --data-dir exclude each other: give one');
  });

  it('a database URL that is not postgres is rejected without showing it', () => {
    expect(errorOf(() => serve(['--database-url', 'mysql://u:secret@h/db']))).toBe(
      '--database-url: expected a postgres:// or postgresql:// URL with a host (the value is not shown)',
    );
  });

  it('an unknown flag is rejected', () => {
    expect(errorOf(() => serve(['--prot', '1']))).toBe('unknown flag "--prot" (see --help)');
  });

  it('a positional word is rejected', () => {
    expect(errorOf(() => serve(['serve']))).toBe('unexpected argument "serve" (this program takes only flags; see --help)');
  });
});

describe('create-key', () => {
  it('takes the name', () => {
    expect(createKey(['--name', 'admin']).name).toBe('admin');
  });

  it('is organization-wide without --project', () => {
    expect(createKey(['--name', 'admin']).project).toBeUndefined();
  });

  it('takes a project id or name', () => {
    expect(createKey(['--name', 'n', '--project', 'staging']).project).toBe('staging');
  });

  it('never expires without --days-to-expire', () => {
    expect(createKey(['--name', 'n']).daysToExpire).toBeUndefined();
  });

  it('takes --days-to-expire', () => {
    expect(createKey(['--name', 'n', '--days-to-expire', '30']).daysToExpire).toBe(30);
  });

  it('uses the same storage flags as serving', () => {
    expect(createKey(['--name', 'n', '--database-url', 'postgres://h/db']).storage).toEqual({ kind: 'postgres', databaseUrl: 'postgres://h/db' });
  });

  it('reads the storage from the environment too', () => {
    expect(createKey(['--name', 'n'], { GATEWAY_DATA_DIR: '/var/lib/gw' }).storage).toEqual({ kind: 'sqlite', dataDir: '/var/lib/gw' });
  });

  it('requires --name', () => {
    expect(errorOf(() => createKey([]))).toBe('--name: required (create-key --name <name>)');
  });

  it('rejects a name over 255 characters', () => {
    expect(errorOf(() => createKey(['--name', 'x'.repeat(256)]))).toMatch(/^--name: expected 1 to 255 characters/);
  });

  it('rejects --days-to-expire over 3650', () => {
    expect(errorOf(() => createKey(['--name', 'n', '--days-to-expire', '3651']))).toMatch(/^--days-to-expire: expected an integer from 1 to 3650/);
  });

  it('rejects the serving flags it does not take', () => {
    expect(errorOf(() => createKey(['--name', 'n', '--port', '1']))).toBe('unknown flag "--port" (see --help)');
  });
});

describe('help and version', () => {
  const kind = (argv: string[]): GatewayCommandLine['kind'] => parseGatewayCommandLine(argv, noEnv).kind;

  it('--help wins over errors', () => {
    expect(kind(['--port', 'x', '--help'])).toBe('help');
  });

  it('create-key --help is the help of create-key', () => {
    const command = parseGatewayCommandLine(['create-key', '--help'], noEnv);
    expect(command.kind === 'help' && command.text.startsWith('Usage: browser-telemetry-gateway create-key')).toBe(true);
  });

  it('--version is version', () => {
    expect(kind(['--version'])).toBe('version');
  });

  it.each([
    '--host',
    '--port',
    '--allowed-hosts',
    '--data-dir',
    '--database-url',
    '--log-level',
    '--agent-response-timeout-ms',
    '--agent-idle-timeout-ms',
    '--agent-keepalive-ms',
  ])('the help lists %s', (flag) => {
    expect(gatewayHelpText()).toContain(flag);
  });

  it('the help shows the default port', () => {
    expect(gatewayHelpText()).toMatch(/--port <port>\s+env GATEWAY_PORT, default: 10000/);
  });
});

describe('resolveGatewayConfig', () => {
  it('applies the command line defaults', () => {
    expect(resolveGatewayConfig({})).toEqual(serve([], noEnv));
  });

  it('rejects an unknown option', () => {
    expect(errorOf(() => resolveGatewayConfig({ prot: 1 } as object))).toBe('prot: unknown option');
  });

  it('rejects dataDir with databaseUrl', () => {
    expect(errorOf(() => resolveGatewayConfig({ dataDir: 'd', databaseUrl: 'postgres://h/db' }))).toBe('databaseUrl and dataDir exclude each other: give one');
  });

  it('rejects a bad port naming the option', () => {
    expect(errorOf(() => resolveGatewayConfig({ port: -1 }))).toBe('port: expected an integer from 0 to 65535, got -1');
  });

  it('takes allowedHosts as an array, canonical', () => {
    expect(resolveGatewayConfig({ allowedHosts: ['GW.Example'] }).allowedHosts).toEqual(['gw.example']);
  });

  it('takes the timeouts and the key re-check period', () => {
    const config = resolveGatewayConfig({ agentResponseTimeoutMs: 300, agentIdleTimeoutMs: 200, agentKeepaliveMs: 100, keyRecheckMs: 50 });
    expect([config.agentResponseTimeoutMs, config.agentIdleTimeoutMs, config.agentKeepaliveMs, config.keyRecheckMs]).toEqual([300, 200, 100, 50]);
  });

  it('refuses a key re-check period over 30 s', () => {
    expect(errorOf(() => resolveGatewayConfig({ keyRecheckMs: 60_000 }))).toBe('keyRecheckMs: expected an integer from 10 to 30000, got 60000');
  });
});

describe('the archive (docs/gateway.md)', () => {
  it('follows sessions, keeps 30 days, ends a session after 5 minutes of silence, leases for 15 s by default', () => {
    expect(serve([], noEnv).archive).toEqual({ follow: true, retainDays: 30, silenceMs: 300_000, leaseMs: 15_000 });
  });

  it.each([
    ['--archive-retain-days', 'GATEWAY_ARCHIVE_RETAIN_DAYS', 'retainDays', '7', 7],
    ['--archive-silence-ms', 'GATEWAY_ARCHIVE_SILENCE_MS', 'silenceMs', '60000', 60_000],
    ['--archive-lease-ms', 'GATEWAY_ARCHIVE_LEASE_MS', 'leaseMs', '3000', 3000],
    ['--archive-follow', 'GATEWAY_ARCHIVE_FOLLOW', 'follow', 'off', false],
  ] as const)('%s and %s set %s', (flag, env, field, text, value) => {
    expect([serve([flag, text]).archive[field], serve([], { [env]: text }).archive[field]]).toEqual([value, value]);
  });

  it.each([
    ['--archive-retain-days', '0', 'an integer from 1 to 3650'],
    ['--archive-retain-days', '3651', 'an integer from 1 to 3650'],
    ['--archive-silence-ms', '999', 'an integer from 1000 to 86400000'],
    ['--archive-lease-ms', '22501', 'an integer from 100 to 22500'],
    ['--archive-follow', 'maybe', 'on, off, true or false'],
  ])('%s %s is rejected naming the flag', (flag, value, expected) => {
    expect(errorOf(() => serve([flag, value]))).toBe(`${flag}: expected ${expected}, got ${JSON.stringify(value)}`);
  });

  it('the longest lease still has a dead instance taken over within 30 s (a lease and a renewal period)', () => {
    const longest = 22_500;
    expect(longest + longest / 3).toBeLessThanOrEqual(30_000);
  });

  it('takes the archive options in code, checked like the flags', () => {
    const config = resolveGatewayConfig({ archiveFollow: false, archiveRetainDays: 2, archiveSilenceMs: 5000, archiveLeaseMs: 500 });
    expect([config.archive, errorOf(() => resolveGatewayConfig({ archiveRetainDays: 0 }))]).toEqual([
      { follow: false, retainDays: 2, silenceMs: 5000, leaseMs: 500 },
      'archiveRetainDays: expected an integer from 1 to 3650, got 0',
    ]);
  });

  it.each(['--archive-follow', '--archive-retain-days', '--archive-silence-ms', '--archive-lease-ms'])('the help lists %s', (flag) => {
    expect(gatewayHelpText()).toContain(flag);
  });
});
