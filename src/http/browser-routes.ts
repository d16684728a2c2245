// The browser object (README.md#api): GET, PATCH (telemetry config, docs/events.md#telemetry-config-lifecycle-and-monitor-events) and DELETE (docs/decisions.md)
// /browsers/{id}.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { CONFIG_CATEGORIES, validateTelemetryPatch, type TelemetryConfig, type TelemetryConfigPatch } from '../telemetry/telemetry-config.ts';
import type { BearerAuth } from './auth.ts';
import { browserGuard, browserParamsSchema } from './browser-guard.ts';
import { invalidInput, type ErrorDetail } from './errors.ts';
import { noRetryOnFailure } from './no-retry.ts';
import { BROWSER_ERRORS, bodyPolicyProperties, browserObjectSchema, errorResponses, noContent } from './schemas.ts';
import type { HttpDeps } from './http-deps.ts';
import { cdpWsUrl, VIA_GATEWAY_HEADER } from './cdp-routes.ts';

/** Never carries `base_url` or `jwt`: clients must not route around the gateway. */
export interface BrowserObject {
  session_id: string;
  /** ISO 8601 UTC. */
  created_at: string;
  telemetry: TelemetryConfig;
  cdp_connected: boolean;
  /** Latest seq admitted to the event log (0 before the first event). */
  seq: number;
  /** The CDP endpoint's WebSocket URL on this agent (scope cdp; docs/operations.md "CDP endpoint"). */
  cdp_ws_url?: string;
}

export function browserObject(deps: HttpDeps, host?: string): BrowserObject {
  return {
    ...(deps.cdp && host !== undefined ? { cdp_ws_url: cdpWsUrl(host, deps.sessionId) } : {}),
    session_id: deps.sessionId,
    created_at: deps.session.createdAt.toISOString(),
    telemetry: deps.session.telemetryConfig(),
    cdp_connected: deps.session.cdpConnected(),
    seq: deps.log.latestSeq,
  };
}

/** The Host to build the agent's own URLs on; none for a request the gateway forwarded. */
function ownHost(request: FastifyRequest): string | undefined {
  return request.headers[VIA_GATEWAY_HEADER] === undefined ? request.headers.host : undefined;
}

const categoryPatch = { type: 'object', properties: { enabled: { type: 'boolean' } }, additionalProperties: false } as const;

const controlPatch = {
  type: 'object',
  properties: { enabled: { type: 'boolean' }, include_urls: { type: 'boolean' } },
  additionalProperties: false,
} as const;

const networkPatch = {
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: { type: 'boolean' },
    bodies: {
      description: 'Which response bodies are fetched; true/false is shorthand for {"enabled": ...}',
      oneOf: [{ type: 'boolean' }, { type: 'object', additionalProperties: false, properties: bodyPolicyProperties }],
    },
  },
} as const;

const browserPatchSchema = {
  type: 'object',
  required: ['telemetry'],
  additionalProperties: false,
  properties: {
    telemetry: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        browser: {
          type: 'object',
          additionalProperties: false,
          properties: Object.fromEntries(CONFIG_CATEGORIES.map((c) => [c, c === 'network' ? networkPatch : c === 'control' ? controlPatch : categoryPatch])),
        },
      },
    },
  },
} as const;

/** Validates a PATCH body: `{ "telemetry": {...} }` and nothing else. Throws 400 invalid_input. */
export function parseBrowserPatch(body: unknown): TelemetryConfigPatch {
  const details: ErrorDetail[] = [];
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidInput('the body must be a JSON object', [{ code: 'invalid_input', message: 'must be an object', field: '$' }]);
  }
  for (const key of Object.keys(body)) {
    if (key !== 'telemetry') details.push({ code: 'invalid_input', message: 'unknown key', field: key });
  }
  const telemetry = (body as { telemetry?: unknown }).telemetry;
  if (telemetry === undefined) {
    details.push({ code: 'invalid_input', message: 'is required', field: 'telemetry' });
  } else {
    for (const problem of validateTelemetryPatch(telemetry, 'telemetry')) {
      details.push({ code: 'invalid_input', message: problem.message, field: problem.field });
    }
  }
  if (details.length > 0) throw invalidInput('invalid browser update', details);
  return telemetry as TelemetryConfigPatch;
}

/** The schema parts of every /browsers/{id} route here: its tag and the id parameter. */
const BROWSER_ROUTE = { tags: ['browser'], params: browserParamsSchema };

export function registerBrowserRoutes(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth): void {
  app.get(
    '/browsers/:id',
    {
      onRequest: browserGuard(deps, auth, 'telemetry:read'),
      schema: {
        summary: 'The browser session and its effective telemetry config (scope telemetry:read)',
        ...BROWSER_ROUTE,
        response: { 200: browserObjectSchema, ...errorResponses(...BROWSER_ERRORS) },
      },
    },
    async (request) => browserObject(deps, ownHost(request)),
  );

  app.patch(
    '/browsers/:id',
    {
      onRequest: browserGuard(deps, auth, 'telemetry:write'),
      // The body is checked by parseBrowserPatch (one detail per problem, full JSON paths); the
      // schema documents it.
      attachValidation: true,
      schema: {
        summary: 'Merge a telemetry config into the current one (scope telemetry:write)',
        ...BROWSER_ROUTE,
        body: browserPatchSchema,
        response: { 200: browserObjectSchema, ...errorResponses(400, ...BROWSER_ERRORS) },
      },
    },
    async (request) => {
      const patch = parseBrowserPatch(request.body);
      await deps.session.updateTelemetry(patch);
      return browserObject(deps, ownHost(request));
    },
  );

  app.delete(
    '/browsers/:id',
    {
      onRequest: browserGuard(deps, auth, 'browser:delete'),
      onSend: noRetryOnFailure,
      schema: {
        summary: 'Terminate the session: streams flushed and ended, browser closed (scope browser:delete)',
        ...BROWSER_ROUTE,
        response: { 204: noContent, ...errorResponses(...BROWSER_ERRORS) },
      },
    },
    async (_request, reply) => {
      await deps.session.terminate();
      return reply.code(204).send();
    },
  );
}
