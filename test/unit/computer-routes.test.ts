import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import type { Action } from '../../src/computer/batch-schema.ts';
import { BatchFailure, type BatchRunner } from '../../src/computer/executor.ts';
import { sessionServer } from './support/session-server.ts';

const SESSION = 'sess_routes_0123456789';
const AUTH = { authorization: 'Bearer all' };
const URL_PATH = `/browsers/${SESSION}/computer/batch`;

let app: FastifyInstance | undefined;

function server(computer?: BatchRunner): FastifyInstance {
  app = sessionServer({ sessionId: SESSION, tokens: [{ token: 'all', scopes: ['*'] }], ...(computer ? { computer } : {}) });
  return app;
}

afterEach(async () => {
  await app?.close();
  app = undefined;
});

const post = (target: FastifyInstance, actions: unknown[]) => target.inject({ method: 'POST', url: URL_PATH, headers: AUTH, payload: { actions } });

describe('POST /browsers/{id}/computer/batch', () => {
  it('answers 204 with no body once the runner has run every action', async () => {
    const runs: Action[][] = [];
    const res = await post(server({ run: async (actions) => void runs.push([...actions]) }), [{ type: 'sleep', sleep: { duration_ms: 0 } }]);
    expect([res.statusCode, res.body]).toEqual([204, '']);
    expect(runs).toEqual([[{ type: 'sleep', sleep: { duration_ms: 0 } }]]);
  });

  it('answers a failed action with 422 action_failed, its index, the reason and the completed count', async () => {
    const failing: BatchRunner = {
      run: async () => {
        throw new BatchFailure(
          2,
          'click_mouse',
          'outside_viewport',
          "action 2 (click_mouse) failed: (900, 1) is outside the viewport (800x600 CSS px); 2 of the batch's actions completed",
          2,
        );
      },
    };
    const res = await post(server(failing), [{ type: 'click_mouse', click_mouse: { x: 900, y: 1 } }]);
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      code: 'action_failed',
      message: expect.stringContaining('outside the viewport'),
      details: [{ index: 2, code: 'action_failed', message: expect.stringContaining('2 of the batch') }],
      inner_error: { code: 'outside_viewport', message: expect.any(String) },
    });
    expect(res.headers['x-completed-actions']).toBe('2');
    expect(res.headers['x-should-retry']).toBe('false');
  });

  it('answers an internal failure with 500 internal_error and x-should-retry false', async () => {
    const failing: BatchRunner = {
      run: async () => {
        throw new BatchFailure(0, 'type_text', 'cdp_error', 'action 0 (type_text) failed: Internal error', 0);
      },
    };
    const res = await post(server(failing), [{ type: 'type_text', type_text: { text: 'x' } }]);
    expect([res.statusCode, res.json().code, res.json().details[0].index]).toEqual([500, 'internal_error', 0]);
    expect(res.headers['x-should-retry']).toBe('false');
  });

  it('answers 503 browser_unavailable when no runner is wired', async () => {
    const res = await post(server(), [{ type: 'sleep', sleep: { duration_ms: 0 } }]);
    expect([res.statusCode, res.json().code]).toEqual([503, 'browser_unavailable']);
  });

  it('marks an authentication failure x-should-retry false too', async () => {
    const res = await server({ run: async () => undefined }).inject({ method: 'POST', url: URL_PATH, payload: { actions: [] } });
    expect([res.statusCode, res.headers['x-should-retry']]).toEqual([401, 'false']);
  });

  it('never runs an invalid batch', async () => {
    let runs = 0;
    const res = await post(
      server({
        run: async () => {
          runs++;
        },
      }),
      [{ type: 'sleep', sleep: { duration_ms: 1 } }, { type: 'sleep' }],
    );
    expect([res.statusCode, runs]).toEqual([400, 0]);
  });

  it('aborts the running batch when the client goes away', async () => {
    let aborted!: () => void;
    let started!: () => void;
    const sawAbort = new Promise<void>((resolve) => (aborted = resolve));
    const sawStart = new Promise<void>((resolve) => (started = resolve));
    const target = server({
      run: (_actions, signal) =>
        new Promise((_resolve, reject) => {
          started();
          signal!.addEventListener('abort', () => {
            aborted();
            reject(new BatchFailure(0, 'sleep', 'aborted', 'aborted', 0));
          });
        }),
    });
    await target.listen({ host: '127.0.0.1', port: 0 });
    const { port } = target.server.address() as AddressInfo;
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: URL_PATH, headers: { ...AUTH, 'content-type': 'application/json' } });
    req.on('error', () => undefined);
    req.end(JSON.stringify({ actions: [{ type: 'sleep', sleep: { duration_ms: 30_000 } }] }));
    await sawStart;
    req.destroy();
    await sawAbort;
  });
});
