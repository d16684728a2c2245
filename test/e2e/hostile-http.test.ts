// What an attack and fault probe of the agent's HTTP side tried, kept as regression tests: the
// auth matrix over every route, Host checks (DNS rebinding), bad Last-Event-ID values, request
// smuggling, oversized and missing headers, wrong methods and content types, prototype keys,
// secrets in logged URLs, and the instance header that tells a restarted agent apart.
// write_file's traversal, special-file and mode-bit cases live in fs.test.ts.

import { connect } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../src/agent.ts';
import type { Scope } from '../../src/config.ts';
import { INSTANCE_HEADER } from '../../src/http/server.ts';
import { SseClient, TOKEN } from './support/harness.ts';

const SCOPES: Scope[] = ['telemetry:read', 'telemetry:write', 'computer', 'fs', 'browser:delete', 'metrics:read', 'replay'];
const tokenFor = (scope: Scope) => `token-for-${scope.replace(':', '-')}`;

/** Everything the agent logged, as parsed JSON lines. */
class LogCapture extends Writable {
  readonly lines: Array<Record<string, unknown>> = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    for (const line of chunk.toString('utf8').split('\n')) if (line) this.lines.push(JSON.parse(line) as Record<string, unknown>);
    done();
  }
}

/** One raw HTTP exchange: `request` written as is, the whole answer read until close. */
function rawExchange(port: number, request: string, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(answer);
    }, timeoutMs);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
    socket.on('error', reject);
    socket.write(request);
  });
}

function statusOf(raw: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]);
}

function bodyOf(raw: string): unknown {
  return JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
}

/** A WebSocket handshake to the CDP endpoint, with every scope's token; `handshake` replaces its WebSocket headers. */
function cdpUpgrade(host: string, handshake = 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n', method = 'GET'): string {
  return `${method} /devtools/browser/x HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${TOKEN}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n${handshake}\r\n`;
}

/** --headers-timeout-ms of the agent under test: short, so that a slow-headers client is cut in the test's time. */
const HEADERS_TIMEOUT_MS = 1500;
/** Node looks for connections past the headers timeout once a second (HEADERS_CHECK_INTERVAL_MS). */
const HEADERS_CUT_BOUND_MS = HEADERS_TIMEOUT_MS + 1000 + 500;

/** Opens a connection, writes `sent` (possibly nothing), and resolves with what came back and when the server closed it. */
function heldOpen(port: number, sent: string): Promise<{ answer: string; closedAfterMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1', () => {
      if (sent) socket.write(sent);
    });
    let answer = '';
    // Far past the bound: a connection still open then is the failure, reported by the assertion.
    const timer = setTimeout(() => socket.destroy(), HEADERS_CUT_BOUND_MS * 4);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ answer, closedAfterMs: Date.now() - started });
    });
    socket.on('error', reject);
  });
}

let agent: Agent;
let port: number;
const logs = new LogCapture();

beforeAll(async () => {
  agent = await startAgent({
    port: 0,
    token: TOKEN,
    tokens: SCOPES.map((scope) => ({ token: tokenFor(scope), scopes: [scope] })),
    screenshots: false,
    headersTimeoutMs: HEADERS_TIMEOUT_MS,
    logger: pino({ level: 'info' }, logs),
  });
  port = Number(new URL(agent.url).port);
});

afterAll(async () => {
  await agent?.close();
});

describe('the auth matrix over every route of the OpenAPI document', () => {
  interface Operation {
    method: string;
    path: string;
    scope: Scope;
  }
  let operations: Operation[];

  beforeAll(async () => {
    const doc = (await (await fetch(`${agent.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { summary?: string }>> };
    operations = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (path === '/healthz') continue;
      for (const [method, op] of Object.entries(ops)) {
        const scope = /\(scope ([a-z:*]+)\)/.exec(op.summary ?? '')?.[1] as Scope | undefined;
        expect(scope, `${method} ${path} names its scope in the summary`).toBeDefined();
        operations.push({ method: method.toUpperCase(), path, scope: scope! });
      }
    }
    expect(operations.length).toBeGreaterThanOrEqual(8);
  });

  const call = (op: Operation, id: string, authorization?: string) =>
    fetch(`${agent.url}${op.path.replace('{id}', id)}`, {
      method: op.method,
      headers: authorization === undefined ? {} : { authorization },
    });

  it('answers 401 with WWW-Authenticate to a request without a token, on every route', async () => {
    for (const op of operations) {
      const res = await call(op, agent.sessionId);
      expect([op.method, op.path, res.status, res.headers.get('www-authenticate')]).toEqual([op.method, op.path, 401, 'Bearer']);
      expect(((await res.json()) as { code: string }).code).toBe('unauthorized');
    }
  });

  it('answers 401 to an unknown token and to a malformed Authorization header, on every route', async () => {
    for (const op of operations) {
      for (const header of ['Bearer not-a-known-token', `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`, `Bearer ${TOKEN} extra`]) {
        const res = await call(op, agent.sessionId, header);
        expect([op.method, op.path, header, res.status]).toEqual([op.method, op.path, header, 401]);
        await res.arrayBuffer();
      }
    }
  });

  it("answers 403 to every token that lacks the route's scope", async () => {
    for (const op of operations) {
      for (const scope of SCOPES.filter((s) => s !== op.scope)) {
        const res = await call(op, agent.sessionId, `Bearer ${tokenFor(scope)}`);
        expect([op.method, op.path, scope, res.status]).toEqual([op.method, op.path, scope, 403]);
        expect(((await res.json()) as { code: string }).code).toBe('forbidden');
      }
    }
  });

  it('lets the scope through, and only then says whether the id exists (404 for another id)', async () => {
    for (const op of operations) {
      if (!op.path.includes('{id}')) continue;
      const res = await call(op, 'another-session', `Bearer ${tokenFor(op.scope)}`);
      expect([op.method, op.path, res.status]).toEqual([op.method, op.path, 404]);
      await res.arrayBuffer();
    }
  });
});

describe('GET /healthz', () => {
  it('does not reveal the session id without a token', async () => {
    const body = (await (await fetch(`${agent.url}/healthz`)).json()) as Record<string, unknown>;
    expect(body).toEqual({ status: 'ok', cdp_connected: true });
  });

  it('names the session to a known token', async () => {
    const res = await fetch(`${agent.url}/healthz`, { headers: { authorization: `Bearer ${tokenFor('metrics:read')}` } });
    expect(await res.json()).toEqual({ status: 'ok', session_id: agent.sessionId, cdp_connected: true });
  });
});

describe('bad Last-Event-ID values', () => {
  for (const value of ['-1', 'abc', '1.5', '1e3', '0x10', '99999999999999999999', ' ', '1,2']) {
    it(`answers ${JSON.stringify(value)} with 400 invalid_input before any stream byte`, async () => {
      const res = await fetch(`${agent.url}/browsers/${agent.sessionId}/telemetry`, {
        headers: { authorization: `Bearer ${TOKEN}`, 'last-event-id': value },
      });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.json()).toMatchObject({ code: 'invalid_input', details: [{ field: 'Last-Event-ID' }] });
    });
  }
});

describe('malformed HTTP', () => {
  it('refuses a request with both Content-Length and Transfer-Encoding (smuggling) with the error body', async () => {
    const raw = await rawExchange(
      port,
      `POST /browsers/${agent.sessionId}/computer/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
    );
    expect(statusOf(raw)).toBe(400);
    expect(bodyOf(raw)).toMatchObject({ code: 'bad_request' });
    // The smuggled second request was never answered.
    expect(raw.match(/HTTP\/1\.1 /g)).toHaveLength(1);
  });

  it('closes a connection that sends partial headers within the headers timeout, with 408 and the error body', async () => {
    const { answer, closedAfterMs } = await heldOpen(port, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `);
    expect(closedAfterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
    expect(closedAfterMs).toBeLessThan(HEADERS_CUT_BOUND_MS);
    expect([statusOf(answer), bodyOf(answer)]).toEqual([408, { code: 'bad_request', message: 'request timed out' }]);
  });

  it('closes a connection that sends nothing within the headers timeout', async () => {
    const { closedAfterMs } = await heldOpen(port, '');
    expect(closedAfterMs).toBeLessThan(HEADERS_CUT_BOUND_MS);
  });

  it('answers oversized headers with 431 and the error body', async () => {
    const raw = await rawExchange(port, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`);
    expect(statusOf(raw)).toBe(431);
    expect(bodyOf(raw)).toMatchObject({ code: 'bad_request' });
  });

  it('answers a declared 10 GiB JSON body with 413 and closes the connection instead of draining it', async () => {
    const started = Date.now();
    const raw = await rawExchange(
      port,
      `POST /browsers/${agent.sessionId}/computer/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${10 * 1024 ** 3}\r\n\r\n{"actions":[`,
    );
    expect(statusOf(raw)).toBe(413);
    expect(raw.toLowerCase()).toContain('connection: close');
    // rawExchange resolves on close (or gives up after 5 s).
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('answers an HTTP/1.1 request without Host with 400 and the error body', async () => {
    const raw = await rawExchange(port, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(statusOf(raw)).toBe(400);
    expect(bodyOf(raw)).toMatchObject({ code: 'bad_request', message: expect.stringMatching(/Host/) });
  });
});

describe('Host checks (DNS rebinding)', () => {
  for (const host of ['evil.example', 'evil.example:80', '127.0.0.1.evil.example', 'localhost.evil.example']) {
    it(`refuses Host: ${host} with 421 and the error body, before auth`, async () => {
      const raw = await rawExchange(
        port,
        `GET /browsers/${agent.sessionId} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${TOKEN}\r\nConnection: close\r\n\r\n`,
      );
      expect(statusOf(raw)).toBe(421);
      expect(bodyOf(raw)).toMatchObject({ code: 'misdirected_request', message: expect.stringContaining('Host') });
    });
  }

  it('refuses a CDP upgrade with a foreign Host with 421 misdirected_request, as every other route', async () => {
    const raw = await rawExchange(port, cdpUpgrade('evil.example'));
    expect(statusOf(raw)).toBe(421);
    expect(bodyOf(raw)).toMatchObject({ code: 'misdirected_request', message: expect.stringContaining('Host') });
  });

  for (const host of ['127.0.0.1', `127.0.0.1:PORT`, 'localhost', `localhost:PORT`, '[::1]']) {
    it(`accepts Host: ${host} on a loopback listener`, async () => {
      const raw = await rawExchange(port, `GET /healthz HTTP/1.1\r\nHost: ${host.replace('PORT', String(port))}\r\nConnection: close\r\n\r\n`);
      expect(statusOf(raw)).toBe(200);
    });
  }

  it('accepts a name given with --allowed-hosts', async () => {
    const other = await startAgent({ port: 0, token: TOKEN, screenshots: false, logLevel: 'silent', allowedHosts: ['agent.internal'] });
    try {
      const otherPort = Number(new URL(other.url).port);
      const allowed = await rawExchange(otherPort, 'GET /healthz HTTP/1.1\r\nHost: agent.internal:10001\r\nConnection: close\r\n\r\n');
      expect(statusOf(allowed)).toBe(200);
      const refused = await rawExchange(otherPort, 'GET /healthz HTTP/1.1\r\nHost: other.internal\r\nConnection: close\r\n\r\n');
      expect(statusOf(refused)).toBe(421);
    } finally {
      await other.close();
    }
  });
});

describe('CDP WebSocket handshakes', () => {
  it('answers a handshake without a valid Sec-WebSocket-Key with 400 and the error body', async () => {
    const raw = await rawExchange(port, cdpUpgrade(`127.0.0.1:${port}`, 'Sec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\n'));
    expect(statusOf(raw)).toBe(400);
    expect(bodyOf(raw)).toMatchObject({ code: 'bad_request', message: expect.stringContaining('Sec-WebSocket-Key') });
  });

  it('answers a handshake of another WebSocket version with 400, the versions it speaks and the error body', async () => {
    const raw = await rawExchange(port, cdpUpgrade(`127.0.0.1:${port}`, 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 7\r\n'));
    expect(statusOf(raw)).toBe(400);
    expect(raw).toMatch(/\r\nSec-WebSocket-Version: 13, 8\r\n/i);
    expect(bodyOf(raw)).toMatchObject({ code: 'bad_request' });
  });

  it('answers an upgrade with another method than GET with 405, Allow: GET and the error body', async () => {
    const raw = await rawExchange(port, cdpUpgrade(`127.0.0.1:${port}`, undefined, 'POST'));
    expect(statusOf(raw)).toBe(405);
    expect(raw).toMatch(/\r\nAllow: GET\r\n/i);
    expect(bodyOf(raw)).toMatchObject({ code: 'bad_request' });
  });
});

describe('query parameters: one rule for every route (docs/decisions.md "Query parameters")', () => {
  const get = (path: string) => fetch(`${agent.url}/browsers/${agent.sessionId}/${path}`, { headers: { Authorization: `Bearer ${TOKEN}` } });

  for (const path of ['trace?nav_sq=1', 'har?nav_sq=1', 'telemetry/events?nav_sq=1', 'telemetry/stream?nav_sq=1']) {
    it(`answers an unknown parameter with 400 invalid_input naming it: ${path}`, async () => {
      const res = await get(path);
      expect([res.status, await res.json()]).toEqual([
        400,
        {
          code: 'invalid_input',
          message: 'nav_sq: is not a query parameter of this route',
          details: [{ code: 'invalid_input', message: 'is not a query parameter of this route', field: 'nav_sq' }],
        },
      ]);
    });
  }

  for (const path of ['trace?since=5m&since=1m', 'har?until=1m&until=2m', 'telemetry/events?limit=5&limit=6']) {
    it(`answers a single-valued parameter given twice with 400 invalid_input naming it: ${path}`, async () => {
      const res = await get(path);
      const name = /\?([a-z]+)=/.exec(path)![1]!;
      expect([res.status, await res.json()]).toEqual([
        400,
        {
          code: 'invalid_input',
          message: `${name}: given 2 times; it takes one value`,
          details: [{ code: 'invalid_input', message: 'given 2 times; it takes one value', field: name }],
        },
      ]);
    });
  }

  it('takes a repeated list parameter as its values, like the comma-separated form', async () => {
    const [repeated, commas] = await Promise.all([get('har?nav_seq=1&nav_seq=2'), get('har?nav_seq=1,2')]);
    expect([repeated.status, commas.status]).toEqual([200, 200]);
    const pages = async (res: Response) => ((await res.json()) as { log: { pages: unknown[] } }).log.pages;
    expect(await pages(repeated)).toEqual(await pages(commas));
  });
});

describe('api_call: every acting request past authentication is recorded, whatever its body (docs/events.md "api_call")', () => {
  const batch = (id: string, body: string, token = TOKEN) =>
    fetch(`${agent.url}/browsers/${id}/computer/batch`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body,
    });

  /** The api_call of `requestId`, once it is admitted (it is when the response ended). */
  async function apiCallOf(requestId: string): Promise<Record<string, unknown>> {
    const deadline = Date.now() + 5000;
    for (;;) {
      const res = await fetch(`${agent.url}/browsers/${agent.sessionId}/telemetry/events?type=api_call&limit=1000`, {
        headers: { Authorization: `Bearer ${TOKEN}` },
      });
      const page = (await res.json()) as Array<{ event: { data: Record<string, unknown> } }>;
      const found = page.find((e) => e.event.data.request_id === requestId);
      if (found) return found.event.data;
      if (Date.now() > deadline) throw new Error(`no api_call with request_id ${requestId}`);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  for (const [name, id, body, status] of [
    ['malformed JSON', 'SELF', '{"actions": [', 400],
    ['a body the schema refuses', 'SELF', '{"actions": [{"type": "no_such_action"}]}', 400],
    ['an unknown session', 'no-such-session', '{"actions": []}', 404],
  ] as const) {
    it(`records ${name} with its status`, async () => {
      const res = await batch(id === 'SELF' ? agent.sessionId : id, body);
      expect(res.status).toBe(status);
      const requestId = res.headers.get('x-request-id');
      expect(requestId).toBeTruthy();
      expect(await apiCallOf(requestId!)).toMatchObject({ operation_id: 'computerBatch', status, outcome: 'error' });
    });
  }

  it('does not record a request refused by authentication', async () => {
    const res = await batch(agent.sessionId, '{"actions": []}', 'wrong-token');
    expect([res.status, res.headers.get('x-request-id')]).toEqual([401, null]);
  });
});

describe('methods, content types and JSON bodies', () => {
  it('answers a known path with another method with 405 and Allow', async () => {
    const res = await fetch(`${agent.url}/healthz`, { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(await res.json()).toMatchObject({ code: 'bad_request' });
    const batch = await fetch(`${agent.url}/browsers/${agent.sessionId}/computer/batch`, { method: 'GET', headers: { authorization: `Bearer ${TOKEN}` } });
    expect([batch.status, batch.headers.get('allow')]).toEqual([405, 'POST']);
  });

  it('still answers an unknown path with 404', async () => {
    const res = await fetch(`${agent.url}/no/such/path`, { method: 'POST' });
    expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([404, 'not_found']);
  });

  it('answers a wrong content type with 415 and the error body', async () => {
    const res = await fetch(`${agent.url}/browsers/${agent.sessionId}/computer/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' },
      body: '{"actions":[]}',
    });
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({ code: 'bad_request' });
  });

  it('names a __proto__ key instead of calling the body invalid JSON', async () => {
    const res = await fetch(`${agent.url}/browsers/${agent.sessionId}/computer/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: '{"actions":[{"type":"sleep","sleep":{"duration_ms":1},"__proto__":{"polluted":true}}]}',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe('bad_request');
    expect(body.message).toContain('__proto__');
    expect(body.message).not.toMatch(/not valid JSON/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('says where broken JSON breaks', async () => {
    const res = await fetch(`${agent.url}/browsers/${agent.sessionId}/computer/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: '{"actions": [',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toMatch(/not valid JSON: .+/);
  });
});

describe('secrets in logged URLs', () => {
  it('writes the values of secret-named query parameters as [REDACTED]', async () => {
    await (await fetch(`${agent.url}/healthz?token=s3cr3t-one&api_key=s3cr3t-two&Password=s3cr3t-three&page=2`)).arrayBuffer();
    const line = logs.lines.find((l) => String((l.req as { url?: string } | undefined)?.url ?? '').startsWith('/healthz?'));
    expect((line?.req as { url: string }).url).toBe('/healthz?token=[REDACTED]&api_key=[REDACTED]&Password=[REDACTED]&page=2');
    expect(JSON.stringify(logs.lines)).not.toContain('s3cr3t');
  });
});

describe('the instance header', () => {
  it('is on every response, error bodies and the stream included, and changes with the process', async () => {
    const health = await fetch(`${agent.url}/healthz`);
    const instance = health.headers.get(INSTANCE_HEADER);
    expect(instance).toMatch(/^[A-Za-z0-9_-]{16}$/);
    const missing = await fetch(`${agent.url}/nowhere`);
    expect(missing.headers.get(INSTANCE_HEADER)).toBe(instance);
    const stream = await SseClient.open(`${agent.url}/browsers/${agent.sessionId}/telemetry`, TOKEN);
    try {
      expect(stream.headers[INSTANCE_HEADER.toLowerCase()]).toBe(instance);
    } finally {
      stream.close();
    }
    const restarted = await startAgent({ port: 0, token: TOKEN, screenshots: false, logLevel: 'silent', sessionId: agent.sessionId });
    try {
      const other = (await fetch(`${restarted.url}/healthz`)).headers.get(INSTANCE_HEADER);
      expect(other).toMatch(/^[A-Za-z0-9_-]{16}$/);
      expect(other).not.toBe(instance);
    } finally {
      await restarted.close();
    }
  });
});
