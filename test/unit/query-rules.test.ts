// One rule for the query parameters of the stream and the history read (docs/events.md "Query
// parameters"): integers are decimal digits only, out of range is 400 whatever its spelling, and an
// unknown parameter is 400 on both routes.

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionServer } from './support/session-server.ts';

const SESSION = 'query-rules';
let app: FastifyInstance;

beforeAll(() => {
  app = sessionServer({ sessionId: SESSION, tokens: [{ token: 'reader', scopes: ['telemetry:read'] }] });
});

afterAll(async () => {
  await app.close();
});

const get = (path: string) =>
  app.inject({ method: 'GET', url: `/browsers/${SESSION}/telemetry/${path}`, headers: { authorization: 'Bearer reader', host: 'localhost' } });

describe('history paging values', () => {
  it.each(['offset=1e400', 'offset=18446744073709551616', 'offset=9007199254740992', 'offset=-1', 'offset=1.5', 'offset=0x10', 'offset=+1', 'offset= 1'])(
    '%s is 400 invalid_input naming offset',
    async (query) => {
      const response = await get(`events?${query}`);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ code: 'invalid_input', details: [expect.objectContaining({ field: 'offset' })] });
    },
  );

  it.each(['limit=1e3', 'limit=1.0', 'limit=0x10', 'limit=1001', 'limit=0'])('%s is 400 invalid_input naming limit', async (query) => {
    const response = await get(`events?${query}`);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 'invalid_input', details: [expect.objectContaining({ field: 'limit' })] });
  });

  it('takes decimal integers', async () => {
    const response = await get('events?offset=9007199254740991&limit=1000');
    expect(response.statusCode).toBe(200);
  });
});

describe('unknown query parameters', () => {
  it.each(['events?bogus=1', 'stream?bogus=1', '?bogus=1'.replace('?', '') + '', 'stream?replay=all&colour=red'])(
    'GET …/telemetry/%s is 400 invalid_input naming the parameter',
    async (path) => {
      const response = await app.inject({
        method: 'GET',
        url: `/browsers/${SESSION}/telemetry${path.startsWith('bogus') ? '?' + path : '/' + path}`,
        headers: { authorization: 'Bearer reader', host: 'localhost' },
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ code: 'invalid_input' });
      expect(JSON.stringify(response.json())).toMatch(/bogus|colour/);
    },
  );
});
