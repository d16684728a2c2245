// The browser object (SPEC §3): GET /browsers/{id}. PATCH and DELETE join here.

import type { FastifyInstance } from 'fastify';
import type { TelemetryConfig } from '../telemetry/telemetry-config.ts';
import type { BearerAuth } from './auth.ts';
import { browserGuard, browserParamsSchema } from './browser-guard.ts';
import type { HttpDeps } from './session-view.ts';

/** Never carries `base_url` or `jwt`: clients must not route around the gateway. */
export interface BrowserObject {
  session_id: string;
  /** ISO 8601 UTC. */
  created_at: string;
  telemetry: TelemetryConfig;
  cdp_connected: boolean;
  /** Latest seq admitted to the event log (0 before the first event). */
  seq: number;
}

export function browserObject(deps: HttpDeps): BrowserObject {
  return {
    session_id: deps.sessionId,
    created_at: deps.session.createdAt.toISOString(),
    telemetry: deps.session.telemetryConfig(),
    cdp_connected: deps.session.cdpConnected(),
    seq: deps.log.latestSeq,
  };
}

export function registerBrowserRoutes(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth): void {
  app.get(
    '/browsers/:id',
    { onRequest: browserGuard(deps, auth, 'telemetry:read'), schema: { params: browserParamsSchema } },
    async () => browserObject(deps),
  );
}
