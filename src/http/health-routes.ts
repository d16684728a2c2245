// GET /healthz: no auth; readiness of this agent's session. The session id is said only to a
// caller with a known token: unauthenticated, it would tell a DNS-rebinding page or a port scan
// which id to ask for (docs/operations.md "Threat model").

import type { FastifyInstance } from 'fastify';
import type { BearerAuth } from './auth.ts';
import type { HttpDeps } from './http-deps.ts';

export type HealthStatus = 'ok' | 'unavailable' | 'terminated';

export interface HealthBody {
  status: HealthStatus;
  /** Only with a known bearer token. */
  session_id?: string;
  cdp_connected: boolean;
}

const healthSchema = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['ok', 'unavailable', 'terminated'] },
    session_id: { type: 'string', description: 'Only when the request carries a known bearer token' },
    cdp_connected: { type: 'boolean' },
  },
  required: ['status', 'cdp_connected'],
} as const;

export function registerHealthRoutes(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth): void {
  const schema = {
    summary: 'Readiness of the session: 200 once CDP is attached, 503 while it is not or after termination',
    tags: ['health'],
    security: [],
    response: { 200: { description: 'Ready', ...healthSchema }, 503: { description: 'Not ready (unavailable or terminated)', ...healthSchema } },
  };
  app.get('/healthz', { schema }, async (request, reply) => {
    const cdpConnected = deps.session.cdpConnected();
    let status: HealthStatus = cdpConnected ? 'ok' : 'unavailable';
    // Terminated answers 503: the process is alive but can no longer serve its session, and
    // /healthz is a readiness signal (503 already means "do not route here" while CDP is down).
    // A supervisor must not treat it as a crash to restart: the session was ended on purpose.
    if (deps.session.isTerminated()) status = 'terminated';
    const body: HealthBody = { status, cdp_connected: cdpConnected };
    if (auth.isKnown(request.headers.authorization)) body.session_id = deps.sessionId;
    return reply.code(status === 'ok' ? 200 : 503).send(body);
  });
}
