// The one fastify setup both programs use (the agent's src/http/server.ts, the gateway's
// gateway/src/http/server.ts): the same options, error handling, request log and Host check, so
// the two answer malformed and misdirected requests alike (docs/architecture.md "The shared HTTP
// kit").

import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { handleClientError, handleFrameworkError, installErrorHandling, sendError } from './error-handler.ts';
import { badRequest, misdirectedRequest } from './errors.ts';
import { DEFAULT_HEADERS_TIMEOUT_MS, HEADERS_CHECK_INTERVAL_MS, KEEP_ALIVE_TIMEOUT_MS } from '../http-timeouts.ts';
import type { HostPolicy } from './host-policy.ts';
import { lazySchemas, trackSchemas } from './lazy-schemas.ts';
import { checkQueryParameters } from './query-rules.ts';
import { OneLinePerRequest, requestLogger } from './request-log.ts';

export interface ApiServerOptions {
  /** Request log (one line per request); none without. */
  logger?: Logger | undefined;
  /** Which Host headers are answered; the others are 421 misdirected_request. */
  hosts?: HostPolicy | undefined;
  /** Headers set on every response, refused ones and hijacked streams included. */
  headers?: Record<string, string>;
  /** Longest wait for a request's headers, from its connection or its first byte; DEFAULT_HEADERS_TIMEOUT_MS when absent. */
  headersTimeoutMs?: number | undefined;
}

export function createApiServer(options: ApiServerOptions): FastifyInstance {
  const schemas = lazySchemas();
  const app = Fastify({
    http: {
      // Requests without Host reach the Host check and get the error body (Node's own answer is an
      // empty 400).
      requireHostHeader: false,
      // fastify turns requestTimeout off, and with it Node's headers timeout: set it again.
      headersTimeout: options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
      connectionsCheckingInterval: HEADERS_CHECK_INTERVAL_MS,
    },
    // No bound on a whole request: a write_file upload may take long and has its own idle timeout
    // (--upload-idle-ms), and a body is read only once the token is accepted (auth runs in
    // onRequest), so only a client holding a token can hold a connection with a slow body.
    requestTimeout: 0,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    loggerInstance: options.logger ? requestLogger(options.logger) : undefined,
    logController: new OneLinePerRequest(),
    // fastify's own 503 body while closing is not our error body; the routes answer instead.
    return503OnClosing: false,
    // On close, after each program's preClose hook has ended its streams: drop the remaining
    // connections, idle keep-alive ones included (a client's spare socket would hold close open
    // forever, since requestTimeout is off for the streams).
    forceCloseConnections: true,
    // One `details` entry per problem, and unknown fields rejected rather than silently dropped.
    ajv: { customOptions: { allErrors: true, removeAdditional: false } },
    // Each route's schemas are compiled on its first request, not at start-up (lazy-schemas.ts).
    schemaController: { compilersFactory: schemas.compilersFactory },
    frameworkErrors: handleFrameworkError,
    clientErrorHandler: handleClientError,
  });

  trackSchemas(app, schemas.compileRest);
  installErrorHandling(app);
  const headers = Object.entries(options.headers ?? {});
  app.addHook('onRequest', async (request, reply) => {
    // On the raw response, so hijacked stream responses carry them too.
    for (const [name, value] of headers) reply.raw.setHeader(name, value);
    // Before auth and routing, unknown routes included: a page that rebound a name to this server
    // learns nothing, not even which paths exist (docs/operations.md "Threat model").
    const host = request.headers.host;
    if (host === undefined && request.raw.httpVersion !== '1.0') {
      sendError(reply, badRequest('the request has no Host header (HTTP/1.1 requires one)'));
      return reply;
    }
    if (options.hosts && !options.hosts.allows(host)) {
      sendError(reply, misdirectedRequest());
      return reply;
    }
  });
  // One parameter rule for every route of both programs (docs/decisions.md "Query parameters").
  app.addHook('preValidation', async (request) => checkQueryParameters(request.query, request.routeOptions.schema?.querystring));
  return app;
}
