// The gateway's fastify server: the agent's shared setup (createApiServer in the agent package's
// HTTP kit: error handling, validation settings, request logging, the Host check), API-key
// authentication in front of every route but /healthz and the viewer's page, the org routes, the
// browser registry, the archive's reads (docs/gateway.md), the MCP server over them (docs/mcp.md),
// the forwarded browser paths, and the live viewer (docs/viewer.md "Through the gateway"), whose
// cookie opens its session's reads.

import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { createApiServer, sendError, toApiError } from 'browser-telemetry-agent/http-kit';
import type { HostPolicy } from 'browser-telemetry-agent/http-kit';
import type { Archive } from '../archive/archive.ts';
import { StoreError, type GatewayStore } from '../storage/store.ts';
import type { AgentTimeouts } from '../agent-link/agent-silence.ts';
import { registerApiKeyRoutes } from './api-key-routes.ts';
import { registerArchiveRoutes, type ArchiveRoutes } from './archive-routes.ts';
import { registerReplayReadRoutes } from './replay-routes.ts';
import { registerTraceRoutes } from './trace-routes.ts';
import { KeyAuth } from './auth.ts';
import { BrowserProxy } from './browser-proxy.ts';
import { CdpForward } from './cdp-forward.ts';
import { AgentCheck } from './agent-check.ts';
import { registerBrowserRegistryRoutes } from './browser-registry-routes.ts';
import { fromStoreError } from './errors.ts';
import { KeyWatch } from './key-watch.ts';
import { registerMcpRoutes } from './mcp-routes.ts';
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
  /** POST /browsers asks the agent first (--check-agent). */
  checkAgent?: boolean;
}

export interface GatewayServer {
  app: FastifyInstance;
  proxy: BrowserProxy;
  cdp: CdpForward;
}

export function createGatewayServer(deps: GatewayServerDeps): GatewayServer {
  // The agent's setup (browser-telemetry-agent/http-kit): error handling, validation, request
  // log, and the Host check before anything else, unknown routes included.
  const app = createApiServer({ logger: deps.logger, hosts: deps.hosts });

  app.get('/healthz', async (_request, reply) => {
    try {
      await deps.store.ping();
      return { status: 'ok', database: deps.store.db.dialect };
    } catch {
      return reply.code(503).send({ status: 'unavailable', database: deps.store.db.dialect });
    }
  });

  const agentCheck = deps.checkAgent ? new AgentCheck(deps.timeouts) : undefined;
  if (agentCheck) app.addHook('onClose', async () => agentCheck.close());
  const keys = new KeyWatch(deps.store, deps.keyRecheckMs, app.log);
  const viewer = new GatewayViewer({ db: deps.store.db, store: deps.store, sessions: deps.archive.store, secret: deps.viewerSecret });
  const proxy = new BrowserProxy({
    store: deps.store,
    timeouts: deps.timeouts,
    keys,
    sessionEnds: deps.archive,
    replayViewUrl: (request, browser, replayId) => viewer.replayLink(request, browser.sessionId, replayId),
  });
  const auth = new KeyAuth(deps.store);
  // The CDP endpoint per session (docs/gateway.md "CDP endpoint"): discovery below, the upgrade here.
  const cdp = new CdpForward({ store: deps.store, auth, hosts: deps.hosts, timeouts: deps.timeouts, keys });
  cdp.registerUpgrade(app);
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
    registerBrowserRegistryRoutes(authenticated, deps.store, () => void deps.archive.keeper.tick(), agentCheck);
    archiveRoutes = registerArchiveRoutes(authenticated, deps.archive, proxy, keys);
    registerTraceRoutes(authenticated, deps.archive, proxy);
    registerReplayReadRoutes(authenticated, deps.archive, proxy, (request, sessionId, replayId) => viewer.replayLink(request, sessionId, replayId));
    registerMcpRoutes(authenticated, deps.archive, deps.timeouts.responseMs);
    proxy.register(authenticated);
    cdp.registerDiscovery(authenticated);
  });

  // Forwarded streams would keep server.close() waiting forever.
  app.addHook('preClose', async () => {
    proxy.close();
    cdp.close();
    archiveRoutes?.close();
    keys.close();
  });
  return { app, proxy, cdp };
}
