import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { EVENT_TYPE_CATEGORY, type TelemetryEvent } from '../../injected/schema.ts';
import type { TokenGrant } from '../../src/config.ts';
import type { CdpEndpointDeps } from '../../src/http/http-deps.ts';
import { createHttpServer, type SessionView } from '../../src/http/server.ts';
import { EventLog } from '../../src/stream/event-log.ts';
import { StreamHub } from '../../src/stream/stream-hub.ts';
import { mergeTelemetryConfig, defaultTelemetryConfig, type TelemetryConfig } from '../../src/telemetry/telemetry-config.ts';

const SESSION_ID = 'sess_0123456789abcdef';
const TOKENS: TokenGrant[] = [
  { token: 'all-scopes-token', scopes: ['*'] },
  { token: 'reader-token', scopes: ['telemetry:read'] },
  { token: 'metrics-token', scopes: ['metrics:read'] },
];
const READER = { authorization: 'Bearer reader-token' };

function event(text = 'hello'): TelemetryEvent {
  return { ts: 1_700_000_000_000_000, type: 'console_log', source: { kind: 'cdp' }, data: { level: 'log', text, args: [] } };
}

interface Harness {
  app: FastifyInstance;
  log: EventLog;
  hub: StreamHub;
  state: { connected: boolean; terminated: boolean; config: TelemetryConfig };
}

let current: Harness | undefined;

function harness(options: { logger?: pino.Logger; cdp?: CdpEndpointDeps } = {}): Harness {
  const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20 });
  const hub = new StreamHub(log, { keepaliveMs: 60_000 });
  const state = { connected: true, terminated: false, config: defaultTelemetryConfig() };
  const session: SessionView = {
    createdAt: new Date('2024-05-01T12:00:00.000Z'),
    telemetryConfig: () => state.config,
    cdpConnected: () => state.connected,
    isTerminated: () => state.terminated,
    updateTelemetry: async (patch) => (state.config = mergeTelemetryConfig(state.config, patch)),
    terminate: async () => {
      state.terminated = true;
      await hub.closeAll();
    },
  };
  const app = createHttpServer({ sessionId: SESSION_ID, tokens: TOKENS, hub, log, session, ...options });
  current = { app, log, hub, state };
  return current;
}

afterEach(async () => {
  await current?.app.close();
  current = undefined;
});

describe('GET /healthz', () => {
  it('answers 200 ok while CDP is connected, naming the session only to a known token', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'GET', url: '/healthz' });
    expect([res.statusCode, res.json()]).toEqual([200, { status: 'ok', cdp_connected: true }]);
    const known = await app.inject({ method: 'GET', url: '/healthz', headers: READER });
    expect(known.json()).toEqual({ status: 'ok', session_id: SESSION_ID, cdp_connected: true });
  });

  it('answers 503 unavailable while CDP is disconnected', async () => {
    const { app, state } = harness();
    state.connected = false;
    const res = await app.inject({ method: 'GET', url: '/healthz' });
    expect([res.statusCode, res.json()]).toEqual([503, { status: 'unavailable', cdp_connected: false }]);
  });

  it('answers 503 terminated once the session is terminated', async () => {
    const { app, state } = harness();
    state.terminated = true;
    state.connected = false;
    const res = await app.inject({ method: 'GET', url: '/healthz' });
    expect([res.statusCode, res.json().status]).toEqual([503, 'terminated']);
  });
});

describe('authentication', () => {
  it('rejects a request without Authorization with 401 unauthorized and WWW-Authenticate: Bearer', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'GET', url: `/browsers/${SESSION_ID}` });
    expect([res.statusCode, res.headers['www-authenticate'], res.json().code]).toEqual([401, 'Bearer', 'unauthorized']);
  });

  it.each(['Basic cmVhZGVyLXRva2Vu', 'Bearer', 'Bearer ', 'reader-token', 'Bearer reader-token extra'])(
    'rejects the malformed Authorization %j with 401',
    async (authorization) => {
      const { app } = harness();
      const res = await app.inject({ method: 'GET', url: `/browsers/${SESSION_ID}`, headers: { authorization } });
      expect([res.statusCode, res.headers['www-authenticate'], res.json().code]).toEqual([401, 'Bearer', 'unauthorized']);
    },
  );

  it('rejects an unknown token with 401', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'GET', url: `/browsers/${SESSION_ID}`, headers: { authorization: 'Bearer reader-tokeN' } });
    expect([res.statusCode, res.headers['www-authenticate'], res.json().code]).toEqual([401, 'Bearer', 'unauthorized']);
  });

  it('rejects a known token without the scope with 403 forbidden', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'GET', url: `/browsers/${SESSION_ID}`, headers: { authorization: 'Bearer metrics-token' } });
    expect([res.statusCode, res.json().code]).toEqual([403, 'forbidden']);
  });

  it('accepts a token with the * scope for any scope', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'GET', url: `/browsers/${SESSION_ID}`, headers: { authorization: 'Bearer all-scopes-token' } });
    expect(res.statusCode).toBe(200);
  });

  it('treats the Bearer scheme name case-insensitively', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'GET', url: `/browsers/${SESSION_ID}`, headers: { authorization: 'bearer reader-token' } });
    expect(res.statusCode).toBe(200);
  });

  it('checks the token before the session id, so unknown ids cannot be probed', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'GET', url: '/browsers/some-other-id' });
    expect(res.statusCode).toBe(401);
  });

  it('never writes the Authorization header or token to the request log', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString());
        callback();
      },
    });
    const logger = pino({ level: 'trace', serializers: { req: (req: { headers: unknown }) => ({ headers: req.headers }) } }, sink);
    const { app } = harness({ logger });
    await app.inject({ method: 'GET', url: `/browsers/${SESSION_ID}`, headers: READER });
    const text = lines.join('\n');
    expect([text.includes('request completed'), text.includes('reader-token')]).toEqual([true, false]);
  });
});

describe('GET /browsers/{id}', () => {
  it('returns the browser object', async () => {
    const { app, log } = harness();
    log.append(event());
    log.append(event());
    const res = await app.inject({ method: 'GET', url: `/browsers/${SESSION_ID}`, headers: READER });
    expect(res.json()).toEqual({
      session_id: SESSION_ID,
      created_at: '2024-05-01T12:00:00.000Z',
      telemetry: defaultTelemetryConfig(),
      cdp_connected: true,
      seq: 2,
    });
  });

  it('answers 404 not_found with the error body for an unknown id', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'GET', url: '/browsers/unknown', headers: READER });
    expect([res.statusCode, Object.keys(res.json()), res.json().code]).toEqual([404, ['code', 'message'], 'not_found']);
  });

  it('answers 404 once the session is terminated', async () => {
    const { app, state } = harness();
    state.terminated = true;
    const res = await app.inject({ method: 'GET', url: `/browsers/${SESSION_ID}`, headers: READER });
    expect([res.statusCode, res.json().code]).toEqual([404, 'not_found']);
  });
});

describe('error body', () => {
  it('answers an unknown route with a 404 JSON error body', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'GET', url: '/nope' });
    expect([res.statusCode, res.headers['content-type'], res.json().code]).toEqual([404, 'application/json; charset=utf-8', 'not_found']);
  });

  it('answers an unknown method on a known path with 405, Allow and the JSON error body', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'POST', url: '/healthz' });
    expect([res.statusCode, res.headers.allow, res.json().code]).toEqual([405, 'GET, HEAD', 'bad_request']);
  });

  it('answers a malformed URL escape with 400 bad_request', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'GET', url: '/browsers/%E0%A4%A', headers: READER });
    expect([res.statusCode, res.json().code]).toEqual([400, 'bad_request']);
  });

  it('answers unparsable HTTP with a JSON error body', async () => {
    const { app } = harness();
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const response = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    const body = JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)) as { code: string };
    expect([response.split('\r\n')[0], body.code]).toEqual(['HTTP/1.1 400 Bad Request', 'bad_request']);
  });

  it('answers a CDP upgrade that fails unexpectedly with 500 and the error body, and logs and counts it', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        callback();
      },
    });
    let counted = 0;
    const cdp: CdpEndpointDeps = {
      version: () => Promise.reject(new Error('not used')),
      targets: () => Promise.reject(new Error('not used')),
      browserId: () => undefined,
      // A bug in the relay: neither an ApiError nor a coded error.
      upgrade: () => Promise.reject(new TypeError('relay is not a function')),
      upgradeFailed: () => counted++,
    };
    const h = harness({ logger: pino({ level: 'info' }, sink), cdp });
    const port = await listen(h);
    const response = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () =>
        socket.write(
          `GET /devtools/browser/x HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer all-scopes-token\r\n` +
            'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
        ),
      );
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    const body = JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)) as { code: string; message: string };
    expect([response.split('\r\n')[0], body]).toEqual(['HTTP/1.1 500 Internal Server Error', { code: 'internal_error', message: 'internal error' }]);
    expect(counted).toBe(1);
    const logged = lines.find((line) => line.msg === 'CDP upgrade failed');
    expect([logged?.level, (logged?.err as { message?: string } | undefined)?.message]).toEqual([50, 'relay is not a function']);
  });

  describe('on routes with a JSON body', () => {
    // A stand-in for the later body routes, registered on the real server to exercise its
    // error handling.
    function withBodyRoute(): FastifyInstance {
      const { app } = harness();
      app.post(
        '/test/body',
        {
          schema: {
            body: {
              type: 'object',
              additionalProperties: false,
              required: ['actions'],
              properties: {
                actions: {
                  type: 'array',
                  items: { type: 'object', required: ['x', 'y'], properties: { x: { type: 'integer' }, y: { type: 'integer' } } },
                },
              },
            },
          },
        },
        async () => ({ ok: true }),
      );
      return app;
    }

    it('answers invalid JSON with 400 bad_request', async () => {
      const res = await withBodyRoute().inject({
        method: 'POST',
        url: '/test/body',
        headers: { 'content-type': 'application/json' },
        payload: '{"actions": [',
      });
      expect([res.statusCode, res.json().code]).toEqual([400, 'bad_request']);
    });

    it('answers an unsupported content type with 415 bad_request', async () => {
      const res = await withBodyRoute().inject({ method: 'POST', url: '/test/body', headers: { 'content-type': 'application/xml' }, payload: '<a/>' });
      expect([res.statusCode, res.json().code]).toEqual([415, 'bad_request']);
    });

    it('answers schema violations with 400 invalid_input and one detail per problem, with JSON paths', async () => {
      const res = await withBodyRoute().inject({
        method: 'POST',
        url: '/test/body',
        payload: { actions: [{ x: 1, y: 2 }, { x: 'left' }], extra: true },
      });
      const fields = (res.json().details as Array<{ field: string }>).map((d) => d.field).sort();
      expect([res.statusCode, res.json().code, fields]).toEqual([400, 'invalid_input', ['actions[1].x', 'actions[1].y', 'extra']]);
    });
  });

  it('answers an unexpected failure with 500 internal_error and no internals', async () => {
    const { app } = harness();
    app.get('/test/throw', async () => {
      throw new Error('secret internals at /srv/agent.ts:42');
    });
    const res = await app.inject({ method: 'GET', url: '/test/throw' });
    expect([res.statusCode, res.json()]).toEqual([500, { code: 'internal_error', message: 'internal error' }]);
  });

  it('maps a coded domain error to its status and code, keeping its details', async () => {
    const { app } = harness();
    app.get('/test/coded', async () => {
      throw Object.assign(new Error('click failed'), {
        code: 'action_failed',
        status: 422,
        details: [{ index: 2, code: 'action_failed', message: 'outside the viewport' }],
      });
    });
    const res = await app.inject({ method: 'GET', url: '/test/coded' });
    expect([res.statusCode, res.json()]).toEqual([
      422,
      { code: 'action_failed', message: 'click failed', details: [{ index: 2, code: 'action_failed', message: 'outside the viewport' }] },
    ]);
  });
});

describe('GET /browsers/{id}/telemetry (errors before the stream)', () => {
  it('rejects a missing token with 401', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'GET', url: `/browsers/${SESSION_ID}/telemetry` });
    expect([res.statusCode, res.json().code]).toEqual([401, 'unauthorized']);
  });

  it('rejects a token without telemetry:read with 403', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'GET', url: `/browsers/${SESSION_ID}/telemetry`, headers: { authorization: 'Bearer metrics-token' } });
    expect([res.statusCode, res.json().code]).toEqual([403, 'forbidden']);
  });

  it('answers an unknown id with a 404 error body, not a stream', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'GET', url: '/browsers/unknown/telemetry', headers: READER });
    expect([res.statusCode, res.headers['content-type'], res.json().code]).toEqual([404, 'application/json; charset=utf-8', 'not_found']);
  });

  it('answers 404 once the session is terminated', async () => {
    const { app, state } = harness();
    state.terminated = true;
    const res = await app.inject({ method: 'GET', url: `/browsers/${SESSION_ID}/telemetry/stream`, headers: READER });
    expect(res.statusCode).toBe(404);
  });

  it.each(['abc', '-1', '1.5', ''])('rejects Last-Event-ID %j with 400 invalid_input', async (lastEventId) => {
    const { app } = harness();
    const res = await app.inject({
      method: 'GET',
      url: `/browsers/${SESSION_ID}/telemetry`,
      headers: { ...READER, 'last-event-id': lastEventId },
    });
    expect([res.statusCode, res.json().code, res.json().details?.[0]?.field]).toEqual([400, 'invalid_input', 'Last-Event-ID']);
  });

  it('rejects a replay value other than all with 400 invalid_input naming the field', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'GET', url: `/browsers/${SESSION_ID}/telemetry?replay=some`, headers: READER });
    expect([res.statusCode, res.json().code, res.json().details[0].field]).toEqual([400, 'invalid_input', 'replay']);
  });

  it('answers HEAD with 405 (Allow: GET) rather than holding a stream open', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'HEAD', url: `/browsers/${SESSION_ID}/telemetry`, headers: READER });
    expect([res.statusCode, res.headers.allow]).toEqual([405, 'GET']);
  });

  it('answers 503 browser_unavailable once the streams were closed', async () => {
    const { app, hub } = harness();
    await hub.closeAll();
    const res = await app.inject({ method: 'GET', url: `/browsers/${SESSION_ID}/telemetry`, headers: READER });
    expect([res.statusCode, res.json().code]).toEqual([503, 'browser_unavailable']);
  });
});

// ---- The stream over a real listener -----------------------------------------------------------

interface OpenStream {
  response: http.IncomingMessage;
  request: http.ClientRequest;
  seqs(): number[];
  text(): string;
  until(condition: () => boolean, timeoutMs?: number): Promise<void>;
  ended: Promise<void>;
}

async function listen(h: Harness): Promise<number> {
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  return (h.app.server.address() as AddressInfo).port;
}

function openStream(port: number, path: string, headers: Record<string, string> = READER): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path, headers, agent: false }, (response) => {
      let text = '';
      const waiters = new Set<() => void>();
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
        for (const waiter of [...waiters]) waiter();
      });
      const seqs = (): number[] => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
      resolve({
        response,
        request,
        seqs,
        text: () => text,
        ended: new Promise((done) => response.on('end', done)),
        until: (condition, timeoutMs = 5000) =>
          new Promise((done, fail) => {
            if (condition()) {
              done();
              return;
            }
            const timer = setTimeout(() => fail(new Error(`timed out; seqs so far ${seqs().join(',')}`)), timeoutMs);
            const check = (): void => {
              if (!condition()) return;
              clearTimeout(timer);
              waiters.delete(check);
              done();
            };
            waiters.add(check);
          }),
      });
    });
    request.on('error', reject);
  });
}

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe('GET /browsers/{id}/telemetry (the stream)', () => {
  it('sends exactly the SSE headers at once, before any event exists', async () => {
    const h = harness();
    const stream = await openStream(await listen(h), `/browsers/${SESSION_ID}/telemetry`);
    const { headers } = stream.response;
    expect([
      stream.response.statusCode,
      headers['content-type'],
      headers['x-sse-content-type'],
      headers['cache-control'],
      headers['x-accel-buffering'],
    ]).toEqual([200, 'text/event-stream', 'application/json', 'no-cache, no-transform', 'no']);
  });

  it('starts with the next new event by default', async () => {
    const h = harness();
    for (let i = 0; i < 3; i++) h.log.append(event());
    const stream = await openStream(await listen(h), `/browsers/${SESSION_ID}/telemetry`);
    await waitFor(() => h.hub.subscriberCount === 1);
    h.log.append(event());
    await stream.until(() => stream.seqs().length === 1);
    expect(stream.seqs()).toEqual([4]);
  });

  it('replays every retained event for replay=all', async () => {
    const h = harness();
    for (let i = 0; i < 3; i++) h.log.append(event());
    const stream = await openStream(await listen(h), `/browsers/${SESSION_ID}/telemetry?replay=all`);
    await stream.until(() => stream.seqs().length === 3);
    expect(stream.seqs()).toEqual([1, 2, 3]);
  });

  it('resumes after Last-Event-ID without gaps or duplicates', async () => {
    const h = harness();
    for (let i = 0; i < 5; i++) h.log.append(event());
    const stream = await openStream(await listen(h), `/browsers/${SESSION_ID}/telemetry`, { ...READER, 'last-event-id': '3' });
    await stream.until(() => stream.seqs().length === 2);
    h.log.append(event());
    await stream.until(() => stream.seqs().length === 3);
    expect(stream.seqs()).toEqual([4, 5, 6]);
  });

  it('serves the same stream on /telemetry/stream', async () => {
    const h = harness();
    h.log.append(event());
    const stream = await openStream(await listen(h), `/browsers/${SESSION_ID}/telemetry/stream?replay=all`);
    await stream.until(() => stream.seqs().length === 1);
    expect(stream.seqs()).toEqual([1]);
  });

  it('writes frames carrying the envelope as one data line', async () => {
    const h = harness();
    const first = event('first');
    h.log.append(first);
    const stream = await openStream(await listen(h), `/browsers/${SESSION_ID}/telemetry?replay=all`);
    await stream.until(() => stream.text().endsWith('\n\n'));
    const { ts, type, source, data } = first;
    expect(stream.text()).toBe(`id: 1\ndata: ${JSON.stringify({ seq: 1, event: { ts, type, category: EVENT_TYPE_CATEGORY[type], source, data } })}\n\n`);
  });

  it('ends open streams after flushing when the server closes', async () => {
    const h = harness();
    const stream = await openStream(await listen(h), `/browsers/${SESSION_ID}/telemetry`);
    await waitFor(() => h.hub.subscriberCount === 1);
    h.log.append(event());
    await h.app.close();
    await stream.ended;
    expect(stream.seqs()).toEqual([1]);
  });

  it('releases the subscriber when the client disconnects', async () => {
    const h = harness();
    const stream = await openStream(await listen(h), `/browsers/${SESSION_ID}/telemetry`);
    await waitFor(() => h.hub.subscriberCount === 1);
    stream.request.destroy();
    await waitFor(() => h.hub.subscriberCount === 0);
    expect(h.log.listenerCount).toBe(0);
  });
});
