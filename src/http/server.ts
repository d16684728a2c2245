// The fastify server of the agent: the shared setup (api-server.ts) with the instance header, the
// route groups, and stream shutdown on close.

import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { StartScope } from '../cleanup-stack.ts';
import { createApiServer } from './api-server.ts';
import { BearerAuth } from './auth.ts';
import { registerBrowserRoutes } from './browser-routes.ts';
import { installApiCalls } from './api-call-hook.ts';
import { registerCdpRoutes } from './cdp-routes.ts';
import { registerComputerRoutes } from './computer-routes.ts';
import { registerFsRoutes } from './fs-routes.ts';
import { registerHarRoutes } from './har-routes.ts';
import { registerTraceRoutes } from './trace-routes.ts';
import { registerStepRoutes } from './step-routes.ts';
import { registerHealthRoutes } from './health-routes.ts';
import { registerMcpRoutes } from './mcp-routes.ts';
import { registerMetricsRoutes } from './metrics-routes.ts';
import { registerOpenApi } from './openapi.ts';
import { VERSION } from '../version.ts';
import type { HttpDeps } from './http-deps.ts';
import { registerTelemetryRoutes } from './telemetry-routes.ts';
import { ViewerAuth } from './viewer-auth.ts';
import { registerViewerRoutes } from './viewer-routes.ts';
import { registerReplayRoutes } from './replay-routes.ts';

export type { HttpDeps, SessionView } from './http-deps.ts';

/** The response header naming this process's instance (docs/operations.md "Restarts"). */
export const INSTANCE_HEADER = 'X-Agent-Instance';

/** Start-up's http step: the agent's server, closed again if start-up fails later (`scope`). */
export function createHttpServer(deps: HttpDeps, scope?: StartScope): FastifyInstance {
  // New for every server: a client that sees it change knows the seq numbers it holds came from
  // another process (until seq survives restarts, they may repeat).
  const instanceId = randomBytes(12).toString('base64url');
  const app = createApiServer({
    logger: deps.logger,
    hosts: deps.hosts,
    headers: { [INSTANCE_HEADER]: instanceId },
    headersTimeoutMs: deps.headersTimeoutMs,
  });
  // The viewer's cookie is a second credential for telemetry:read (docs/viewer.md "Auth").
  const viewerAuth = new ViewerAuth();
  const auth = new BearerAuth(deps.tokens, [viewerAuth.credential]);
  // The OpenAPI generator loads first so that it sees every route registered after it.
  registerOpenApi(app, VERSION);
  installApiCalls(app, deps);
  void app.register(async (instance) => {
    registerCdpRoutes(instance, deps, auth);
    registerHealthRoutes(instance, deps, auth);
    registerBrowserRoutes(instance, deps, auth);
    registerTelemetryRoutes(instance, deps, auth, viewerAuth);
    registerStepRoutes(instance, deps, auth);
    registerHarRoutes(instance, deps, auth);
    registerTraceRoutes(instance, deps, auth);
    registerComputerRoutes(instance, deps, auth);
    registerFsRoutes(instance, deps, auth);
    registerMetricsRoutes(instance, deps, auth);
    registerViewerRoutes(instance, deps, auth, viewerAuth);
    registerMcpRoutes(instance, deps, auth);
    registerReplayRoutes(instance, deps, auth, viewerAuth);
  });

  // write_file streams its body to disk: the parser hands the request stream over unread.
  app.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload));

  // Open SSE responses would keep server.close() waiting forever: end them (after flushing)
  // before the server stops.
  app.addHook('preClose', async () => {
    await deps.hub.closeAll();
  });
  scope?.opened(() => app.close());
  return app;
}
