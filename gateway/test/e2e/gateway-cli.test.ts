// The gateway's command line as a user runs it (docs/gateway.md): `create-key` prints a key that a
// served gateway accepts, on SQLite and on PostgreSQL, and makes a SQLite directory readable by
// others private (saying so); flag errors exit 2 with one line; a storage that cannot be opened
// exits 1; SIGTERM stops the gateway with status 0.

import { build } from 'esbuild';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type StorageConfig } from '../../src/storage/open-store.ts';
import { BACKENDS, TestStorages, uniqueName, type Backend } from './support/gateway-harness.ts';
import { agentSourcePlugin } from './support/gateway-processes.ts';

const ROOT = resolve(import.meta.dirname, '../..');
// Bundled like build.mjs does, but into a directory of its own: other test files rebuild dist/.
// Inside the gateway package, so the external packages resolve from the workspace's node_modules.
const BUNDLE = join(ROOT, '.tmp', `gateway-cli-test-${process.pid}`, 'gateway.js');

const storages = new TestStorages();
const scratch = mkdtempSync(join(tmpdir(), 'gateway-cli-'));

beforeAll(async () => {
  await build({
    entryPoints: ['src/main.ts'],
    absWorkingDir: ROOT,
    outfile: BUNDLE,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    packages: 'external',
    plugins: [agentSourcePlugin()],
    logLevel: 'silent',
  });
}, 60_000);
afterAll(async () => {
  rmSync(join(BUNDLE, '..'), { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
  await storages.close();
});

/** The environment without the gateway's own variables, so only the test's flags count. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('GATEWAY_')));
  return { ...env, ...extra };
}

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], env: Record<string, string> = {}): Run {
  const result = spawnSync(process.execPath, [BUNDLE, ...args], { cwd: scratch, env: cleanEnv(env), encoding: 'utf8', timeout: 20_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function storageFlags(storage: { dataDir: string } | { databaseUrl: string }): string[] {
  return 'dataDir' in storage ? ['--data-dir', storage.dataDir] : ['--database-url', storage.databaseUrl];
}

function storageConfig(storage: { dataDir: string } | { databaseUrl: string }): StorageConfig {
  return 'dataDir' in storage ? { kind: 'sqlite', dataDir: storage.dataDir } : { kind: 'postgres', databaseUrl: storage.databaseUrl };
}

/** A served gateway process; resolves once its `listening` log line names the URL. */
class GatewayProcess {
  stdout = '';
  stderr = '';
  private constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (chunk: Buffer) => (this.stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
  }

  static start(args: string[]): GatewayProcess {
    return new GatewayProcess(spawn(process.execPath, [BUNDLE, '--port', '0', ...args], { cwd: scratch, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] }));
  }

  async url(timeoutMs = 15_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.stdout.split('\n').find((l) => l.includes('"msg":"listening"'));
      if (line) return (JSON.parse(line) as { url: string }).url;
      if (this.child.exitCode !== null) throw new Error(`the gateway exited: ${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`no listening line: ${this.stdout} ${this.stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** SIGTERM; resolves with the exit status. */
  stop(): Promise<number | null> {
    if (this.child.exitCode !== null) return Promise.resolve(this.child.exitCode);
    return new Promise((resolve) => {
      this.child.once('exit', (code) => resolve(code));
      this.child.kill('SIGTERM');
    });
  }
}

describe.each(BACKENDS)('the binary on %s', (backend: Backend) => {
  let storage: { dataDir: string } | { databaseUrl: string };
  let gateway: GatewayProcess;
  let url: string;
  beforeAll(async () => {
    storage = await storages.fresh(backend);
    if ('dataDir' in storage) storage = { dataDir: join(storage.dataDir, 'not-yet-created') };
    gateway = GatewayProcess.start(storageFlags(storage));
    url = await gateway.url();
  }, 30_000);
  afterAll(async () => {
    await gateway?.stop();
  });

  it('creates and migrates the storage on start', async () => {
    const health = (await (await fetch(`${url}/healthz`)).json()) as { status: string; database: string };
    expect(health).toEqual({ status: 'ok', database: backend });
  });

  it('create-key prints the key alone on stdout, and the running gateway accepts it', async () => {
    const result = run(['create-key', '--name', 'bootstrap', ...storageFlags(storage)]);
    const key = result.stdout.trim();
    const response = await fetch(`${url}/org/projects`, { headers: { authorization: `Bearer ${key}` } });
    expect([result.status, result.stdout, response.status]).toEqual([0, `${key}\n`, 200]);
  });

  it('create-key names the new key and its scope on stderr', () => {
    const result = run(['create-key', '--name', 'described', ...storageFlags(storage)]);
    expect(result.stderr).toMatch(/created API key [a-z2-7]{24} "described", organization-wide, never expires/);
  });

  it('create-key --project scopes the key to that project, found by name', async () => {
    const name = uniqueName('cli-project');
    const opened = await openStore(storageConfig(storage));
    const project = await opened.store.createProject(name);
    await opened.store.db.close();
    const key = run(['create-key', '--name', 'scoped', '--project', name, ...storageFlags(storage)]).stdout.trim();
    const listed = (await (await fetch(`${url}/org/projects`, { headers: { authorization: `Bearer ${key}` } })).json()) as Array<{ id: string }>;
    expect(listed.map((p) => p.id)).toEqual([project.id]);
  });

  it('create-key --project with an unknown project exits 1 with one line', () => {
    const result = run(['create-key', '--name', 'orphan', '--project', 'no-such-project', ...storageFlags(storage)]);
    expect([result.status, result.stderr.trim().split('\n').length, result.stderr]).toEqual([1, 1, expect.stringContaining('no-such-project')]);
  });

  it('SIGTERM stops the gateway with status 0', async () => {
    // A storage of its own: one SQLite directory serves one gateway (docs/gateway.md).
    const second = GatewayProcess.start(storageFlags(await storages.fresh(backend)));
    await second.url();
    expect(await second.stop()).toBe(0);
  });
});

describe('create-key on a data directory that does not exist yet', () => {
  it('creates the directory and the SQLite file', () => {
    const dataDir = join(scratch, uniqueName('fresh-dir'), 'nested');
    const result = run(['create-key', '--name', 'first', '--data-dir', dataDir]);
    expect([result.status, existsSync(join(dataDir, 'gateway.sqlite3'))]).toEqual([0, true]);
  });

  it('makes a directory readable by others private, and says so on stderr in one line', () => {
    const dataDir = join(scratch, uniqueName('shared-dir'));
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    const result = run(['create-key', '--name', 'first', '--data-dir', dataDir]);
    const lines = result.stderr.trim().split('\n');
    expect([result.status, statSync(dataDir).mode & 0o777, lines.length, lines[0]]).toEqual([0, 0o700, 2, expect.stringContaining(`${dataDir} 0755 → 0700`)]);
  });

  it('defaults to ./gateway-data in the working directory', () => {
    const result = run(['create-key', '--name', 'default-dir']);
    expect([result.status, existsSync(join(scratch, 'gateway-data', 'gateway.sqlite3'))]).toEqual([0, true]);
  });
});

describe('invalid command lines exit 2 with one line on stderr', () => {
  const cases: Array<{ name: string; args: string[]; env?: Record<string, string>; names: string }> = [
    { name: '--port abc', args: ['--port', 'abc'], names: '--port' },
    { name: 'GATEWAY_PORT=abc', args: [], env: { GATEWAY_PORT: 'abc' }, names: 'GATEWAY_PORT' },
    { name: 'an unknown flag', args: ['--no-such-flag', '1'], names: '--no-such-flag' },
    { name: '--data-dir with --database-url', args: ['--data-dir', 'x', '--database-url', 'postgres://u@h/db'], names: '--data-dir' },
    { name: 'a --database-url that is not postgres', args: ['--database-url', 'mysql://u@h/db'], names: '--database-url' },
    { name: 'create-key without --name', args: ['create-key'], names: '--name' },
    { name: 'create-key --days-to-expire 0', args: ['create-key', '--name', 'n', '--days-to-expire', '0'], names: '--days-to-expire' },
    { name: 'create-key with a stray word', args: ['create-key', 'admin'], names: 'create-key takes only flags' },
    { name: '--allowed-hosts with a port', args: ['--allowed-hosts', 'gw.example:443'], names: '--allowed-hosts' },
    { name: 'GATEWAY_ALLOWED_HOSTS with credentials', args: [], env: { GATEWAY_ALLOWED_HOSTS: 'u@gw.example' }, names: 'GATEWAY_ALLOWED_HOSTS' },
    { name: 'GATEWAY_AGENT_IDLE_TIMEOUT_MS=0', args: [], env: { GATEWAY_AGENT_IDLE_TIMEOUT_MS: '0' }, names: 'GATEWAY_AGENT_IDLE_TIMEOUT_MS' },
    { name: '--agent-keepalive-ms soon', args: ['--agent-keepalive-ms', 'soon'], names: '--agent-keepalive-ms' },
  ];

  it.each(cases)('$name', ({ args, env, names }) => {
    const result = run(args, env);
    const lines = result.stderr.trim().split('\n');
    expect([result.status, lines.length, lines[0]]).toEqual([2, 1, expect.stringContaining(names)]);
  });

  it('a bad --database-url is not echoed (it may hold a password)', () => {
    const result = run(['--database-url', 'mysql://user:hunter2@h/db']);
    expect([result.status, result.stderr.includes('hunter2')]).toEqual([2, false]);
  });
});

describe('start-up failures', () => {
  it('a PostgreSQL server that cannot be reached exits 1 with one line', () => {
    const result = run(['--database-url', 'postgres://nobody@127.0.0.1:9/nothing']);
    expect([result.status, result.stderr.trim().split('\n').length, result.stderr]).toEqual([1, 1, expect.stringContaining('could not start')]);
  });
});

describe('--help', () => {
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
    'GATEWAY_DATABASE_URL',
    'GATEWAY_ALLOWED_HOSTS',
    'create-key',
  ])('lists %s', (word) => {
    expect(run(['--help']).stdout).toContain(word);
  });

  it('create-key --help lists --name and --project', () => {
    expect(run(['create-key', '--help']).stdout).toMatch(/--name <name>[\s\S]*--project <id\|name>/);
  });
});
