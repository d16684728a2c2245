// Route schemas are compiled on a route's first request (src/http/lazy-schemas.ts): validation
// and serialization behave as with fastify's eager compilers, and every schema of the agent's
// routes compiles.

import type { FastifyInstance } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { createApiServer } from '../../src/http/api-server.ts';
import { compileEverySchema } from '../../src/http/lazy-schemas.ts';
import { sessionServer } from './support/session-server.ts';

describe('lazily compiled route schemas', () => {
  const apps: FastifyInstance[] = [];
  afterAll(async () => {
    for (const app of apps) await app.close();
  });

  function server(): FastifyInstance {
    const app = createApiServer({});
    apps.push(app);
    app.post(
      '/things',
      {
        schema: {
          body: {
            type: 'object',
            required: ['name'],
            additionalProperties: false,
            properties: { name: { type: 'string', minLength: 1 }, count: { type: 'integer', minimum: 0 } },
          },
          response: { 200: { type: 'object', properties: { name: { type: 'string' } } } },
        },
      },
      async (request) => ({ name: (request.body as { name: string }).name, secret: 'not in the schema' }),
    );
    app.get('/other', { schema: { querystring: { type: 'object', properties: { n: { type: 'integer' } } } } }, async () => ({}));
    return app;
  }

  it('compiles nothing at start-up, and a route on its first request', async () => {
    const idle = server();
    await idle.ready();
    const all = compileEverySchema(idle);
    const app = server();
    await app.ready();
    await app.inject({ method: 'POST', url: '/things', payload: { name: 'a' } });
    await app.inject({ method: 'POST', url: '/things', payload: { name: 'b' } });
    // Left: /other's, the route never called.
    const left = compileEverySchema(app);
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(all - 2);
    expect(compileEverySchema(app)).toBe(0);
  });

  it('validates as the eager compilers do: every problem of a body, with its field, and valid bodies pass', async () => {
    const app = server();
    const bad = await app.inject({ method: 'POST', url: '/things', payload: { count: -1, extra: true } });
    expect(bad.statusCode).toBe(400);
    const body = bad.json<{ code: string; details: Array<{ field: string }> }>();
    expect(body.code).toBe('invalid_input');
    expect(body.details.map((d) => d.field).sort()).toEqual(['count', 'extra', 'name'].sort());
    // The next, valid request does not see the previous failure's errors.
    const good = await app.inject({ method: 'POST', url: '/things', payload: { name: 'ok', count: 2 } });
    expect([good.statusCode, good.json()]).toEqual([200, { name: 'ok' }]);
  });

  it('serializes with the response schema (fields outside it are not sent)', async () => {
    const app = server();
    const response = await app.inject({ method: 'POST', url: '/things', payload: { name: 'x' } });
    expect(response.body).toBe('{"name":"x"}');
  });

  it("compiles every schema of the agent's routes", async () => {
    const app = sessionServer({ sessionId: 'sess_schemas', tokens: [{ token: 'token-with-every-scope', scopes: ['*'] }] });
    apps.push(app);
    await app.ready();
    // Validators and serializers of about twenty routes; none compiled yet, each must compile.
    expect(compileEverySchema(app)).toBeGreaterThan(40);
  });
});
