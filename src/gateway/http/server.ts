// The gateway's fastify server: the agent's error handling, validation settings and request
// logging (src/http), the Host check in front of everything (src/http/host-policy.ts), API-key
// authentication in front of every route but /healthz and the viewer's page, the org routes, the
// browser registry, the archive's reads (docs/gateway.md), the forwarded browser paths, and the
// live viewer (docs/viewer.md "Through the gateway"), whose cookie opens its session's reads.

import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { handleClientError, handleFrameworkError, installErrorHandling, sendError, toApiError } from '../../http/error-handler.ts';
import { OneLinePerRequest, requestLogger } from '../../http/request-log.ts';
import type { HostPolicy } from '../../http/host-policy.ts';
import type { Archive } from '../archive/archive.ts';
import { StoreError, type GatewayStore } from '../storage/store.ts';
import type { AgentTimeouts } from './agent-silence.ts';
import { registerApiKeyRoutes } from './api-key-routes.ts';
import { registerArchiveRoutes, type ArchiveRoutes } from './archive-routes.ts';
import { registerTraceRoutes } from './trace-routes.ts';
import { KeyAuth } from './auth.ts';
import { BrowserProxy } from './browser-proxy.ts';
import { registerBrowserRegistryRoutes } from './browser-registry-routes.ts';
import { fromStoreError, misdirectedRequest } from './errors.ts';
import { KeyWatch } from './key-watch.ts';
import { registerProjectRoutes } from './project-routes.ts';
import { GatewayViewer } from './viewer-routes.ts';

export interface GatewayServerDeps {
  store: GatewayStore;
  logger?: Logger;
  /** Which Host headers are answered; the others are 421. */
  hosts: HostPolicy;
  timeouts: AgentTimeouts;
  /** Period of the re-check of open streams' keys. */
  keyRecheckMs: number;
  archive: Archive;
  /** Signs viewer links and cookies (--viewer-secret); undefined: a random key for this process. */
  viewerSecret?: string;
}

export interface GatewayServer {
  app: FastifyInstance;
  proxy: BrowserProxy;
}

export function createGatewayServer(deps: GatewayServerDeps): GatewayServer {
  const app = Fastify({
    loggerInstance: deps.logger ? requestLogger(deps.logger) : undefined,
    logController: new OneLinePerRequest(),
    // One `details` entry per problem, and unknown fields rejected rather than silently dropped.
    ajv: { customOptions: { allErrors: true, removeAdditional: false } },
    frameworkErrors: handleFrameworkError,
    clientErrorHandler: handleClientError,
  });

  installErrorHandling(app);
  // Before anything else, unknown routes included: a page that rebound a name to the gateway
  // learns nothing from it, not even whether a path exists.
  app.addHook('onRequest', async (request, reply) => {
    if (deps.hosts.allows(request.headers.host)) return;
    sendError(reply, misdirectedRequest());
    return reply;
  });

  app.get('/healthz', async (_request, reply) => {
    try {
      await deps.store.ping();
      return { status: 'ok', database: deps.store.db.dialect };
    } catch {
      return reply.code(503).send({ status: 'unavailable', database: deps.store.db.dialect });
    }
  });

  const keys = new KeyWatch(deps.store, deps.keyRecheckMs, app.log);
  const proxy = new BrowserProxy({ store: deps.store, timeouts: deps.timeouts, keys, sessionEnds: deps.archive });
  const auth = new KeyAuth(deps.store);
  const viewer = new GatewayViewer({ db: deps.store.db, store: deps.store, sessions: deps.archive.store, secret: deps.viewerSecret });
  viewer.register(app, auth.hook());
  let archiveRoutes: ArchiveRoutes | undefined;
  void app.register(async (authenticated) => {
    // The store's domain failures (name taken, project not empty, ...) have their own statuses.
    authenticated.setErrorHandler((error: unknown, request, reply) => {
      const apiError = error instanceof StoreError ? fromStoreError(error) : toApiError(error);
      if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
      sendError(reply, apiError);
    });
    // A viewer cookie stands for the key that minted it, on its session's telemetry reads only.
    authenticated.addHook(
      'onRequest',
      auth.hook((request) => viewer.cookiePrincipal(request)),
    );
    // A deleted project's sessions and their events go at once (archive/retention.ts).
    registerProjectRoutes(authenticated, deps.store, () => void deps.archive.retention.run());
    registerApiKeyRoutes(authenticated, deps.store, (keyId) => keys.revoked(keyId));
    registerBrowserRegistryRoutes(authenticated, deps.store, () => void deps.archive.keeper.tick());
    archiveRoutes = registerArchiveRoutes(authenticated, deps.archive, proxy, keys);
    registerTraceRoutes(authenticated, deps.archive, proxy);
    proxy.register(authenticated);
  });

  // Forwarded streams would keep server.close() waiting forever.
  app.addHook('preClose', async () => {
    proxy.close();
    archiveRoutes?.close();
    keys.close();
  });
  return { app, proxy };
}
