// The fastify server of the agent: options that keep every failure inside the error body, the
// route groups, and stream shutdown on close.

import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { BearerAuth } from './auth.ts';
import { registerBrowserRoutes } from './browser-routes.ts';
import { installApiCalls } from './api-call-hook.ts';
import { registerCdpRoutes } from './cdp-routes.ts';
import { registerComputerRoutes } from './computer-routes.ts';
import { handleClientError, handleFrameworkError, installErrorHandling, sendError } from './error-handler.ts';
import { ApiError, badRequest } from './errors.ts';
import { registerFsRoutes } from './fs-routes.ts';
import { registerHarRoutes } from './har-routes.ts';
import { registerHealthRoutes } from './health-routes.ts';
import { registerMetricsRoutes } from './metrics-routes.ts';
import { registerOpenApi } from './openapi.ts';
import { VERSION } from '../version.ts';
import { OneLinePerRequest, requestLogger } from './request-log.ts';
import type { HttpDeps } from './http-deps.ts';
import { registerTelemetryRoutes } from './telemetry-routes.ts';
import { ViewerAuth } from './viewer-auth.ts';
import { registerViewerRoutes } from './viewer-routes.ts';

export type { HttpDeps, SessionView } from './http-deps.ts';

/** The response header naming this process's instance (docs/operations.md "Restarts"). */
export const INSTANCE_HEADER = 'X-Agent-Instance';

export function createHttpServer(deps: HttpDeps): FastifyInstance {
  // New for every server: a client that sees it change knows the seq numbers it holds came from
  // another process (until seq survives restarts, they may repeat).
  const instanceId = randomBytes(12).toString('base64url');
  const app = Fastify({
    // Requests without Host reach the Host check and get the error body (Node's own answer is an
    // empty 400).
    http: { requireHostHeader: false },
    loggerInstance: deps.logger ? requestLogger(deps.logger) : undefined,
    logController: new OneLinePerRequest(),
    // fastify's own 503 body while closing is not our error body; the routes answer instead
    // (the stream route reports 503 browser_unavailable once the hub is closed).
    return503OnClosing: false,
    // On close, after the preClose hook has flushed and ended every stream: drop the remaining
    // connections, idle keep-alive ones included (a client's spare socket would hold close open
    // forever, since requestTimeout is off for the streams).
    forceCloseConnections: true,
    // One `details` entry per problem, and unknown fields rejected rather than silently dropped.
    ajv: { customOptions: { allErrors: true, removeAdditional: false } },
    frameworkErrors: handleFrameworkError,
    clientErrorHandler: handleClientError,
  });

  installErrorHandling(app);
  app.addHook('onRequest', async (request, reply) => {
    // On the raw response, so hijacked stream responses carry it too.
    reply.raw.setHeader(INSTANCE_HEADER, instanceId);
    // Before auth and routing: a page that rebound a name to this agent learns nothing, not even
    // which paths exist (docs/operations.md "Threat model").
    const host = request.headers.host;
    if (host === undefined) {
      // HTTP/1.0 may omit Host (and no browser does, so it cannot be a rebinding page).
      if (request.raw.httpVersion === '1.0') return;
      sendError(reply, badRequest('the request has no Host header (HTTP/1.1 requires one)'));
      return reply;
    }
    if (deps.hosts && !deps.hosts.allows(host)) {
      sendError(reply, new ApiError(421, 'bad_request', 'the Host header names a host this agent does not answer to (see --allowed-hosts)'));
      return reply;
    }
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
    registerTelemetryRoutes(instance, deps, auth);
    registerHarRoutes(instance, deps, auth);
    registerComputerRoutes(instance, deps, auth);
    registerFsRoutes(instance, deps, auth);
    registerMetricsRoutes(instance, deps, auth);
    registerViewerRoutes(instance, deps, auth, viewerAuth);
  });

  // write_file streams its body to disk: the parser hands the request stream over unread.
  app.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload));

  // Open SSE responses would keep server.close() waiting forever: end them (after flushing)
  // before the server stops.
  app.addHook('preClose', async () => {
    await deps.hub.closeAll();
  });
  return app;
}
