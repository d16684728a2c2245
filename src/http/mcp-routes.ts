// POST /mcp: the agent's MCP server over Streamable HTTP (docs/mcp.md), with the bearer auth of
// the HTTP API: `telemetry:read` to connect, and add_step needs `telemetry:write` as the steps
// route does. The MCP module (and the SDK under it) is loaded on the first request.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AgentReplays } from '../mcp/agent-source.ts';
import type { BearerAuth } from './auth.ts';
import { ApiError, rateLimited } from './errors.ts';
import type { HttpDeps } from './http-deps.ts';
import { errorResponses } from './schemas.ts';
import { StepError } from '../control/steps.ts';
import { HistoryReader } from '../stream/history.ts';
import { VERSION } from '../version.ts';

/** MCP requests answered at once; more wait for none: 429, as a client retries (docs/mcp.md "Limits"). */
export const MCP_MAX_IN_FLIGHT = 4;

type McpModule = typeof import('../mcp/index.ts');

export function registerMcpRoutes(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth): void {
  let module: Promise<McpModule> | undefined;
  const history = deps.history ?? new HistoryReader(deps.log, undefined);
  let inFlight = 0;
  app.post(
    '/mcp',
    {
      onRequest: auth.require('telemetry:read'),
      schema: {
        summary: "The session's telemetry over MCP, Streamable HTTP, stateless (scope telemetry:read); its add_step tool needs telemetry:write",
        description:
          'JSON-RPC messages of the Model Context Protocol (docs/mcp.md); answers in JSON. GET and DELETE are 405: no session, no standalone stream.',
        tags: ['mcp'],
        response: {
          200: { description: 'JSON-RPC response(s)', type: 'object', additionalProperties: true },
          202: { description: 'Notifications accepted', type: 'null' },
          ...errorResponses(400, 401, 403, 500),
          429: { description: `More than ${MCP_MAX_IN_FLIGHT} MCP requests at once`, $ref: 'ErrorBody#' },
        },
      },
    },
    async (request, reply) => {
      if (inFlight >= MCP_MAX_IN_FLIGHT) throw tooManyMcpRequests();
      inFlight++;
      try {
        const mcp = await (module ??= import('../mcp/index.ts'));
        const answer = await mcp.answerMcpRequest(serverFor(mcp, request), {
          url: `${request.protocol}://${request.headers.host ?? 'localhost'}${request.url}`,
          headers: request.headers,
          body: request.body,
        });
        // The SDK's own statuses too (406, 415: JSON-RPC error bodies, as MCP clients expect).
        return await reply
          .code(answer.status as 200)
          .headers(answer.headers)
          .send(answer.body === '' ? undefined : answer.body);
      } finally {
        inFlight--;
      }
    },
  );

  const serverFor = (mcp: McpModule, request: FastifyRequest): McpServer => {
    const source = mcp.agentSource(
      {
        sessionId: deps.sessionId,
        createdAt: deps.session.createdAt,
        isTerminated: () => deps.session.isTerminated(),
        history,
        latestSeq: () => deps.log.latestSeq,
        // Replays show everything on screen: their links and frames need the replay routes' scope.
        ...(deps.replays && auth.allows(request.headers.authorization, 'replay') && { replays: replaysOf(deps.replays) }),
      },
      {
        baseUrl: `${request.protocol}://${request.headers.host ?? 'localhost'}`,
        addStep: async (step) => {
          if (!deps.steps) throw new mcp.ToolError('add_step: steps are not available on this agent');
          // The steps route's scope (src/http/step-routes.ts), checked on the same token.
          try {
            auth.authorize(request.headers.authorization, 'telemetry:write');
          } catch (err) {
            if (err instanceof ApiError) throw new mcp.ToolError(`add_step: ${err.message} (the steps route's scope; reads need only telemetry:read)`);
            throw err;
          }
          const caller = auth.callerOf(request);
          if (caller === undefined) throw new mcp.ToolError('add_step: needs a bearer token');
          try {
            return deps.steps.add(step, { id: caller, via: 'mcp' });
          } catch (err) {
            if (err instanceof StepError) throw new mcp.ToolError(`add_step: ${err.message}`);
            throw err;
          }
        },
      },
    );
    return mcp.createMcpServer(source, {
      name: 'browser-telemetry-agent',
      version: VERSION,
      onInternalError: (err, tool) => request.log.error({ err, tool }, 'mcp tool failed'),
    });
  };
}

function replaysOf(replays: NonNullable<HttpDeps['replays']>): AgentReplays {
  return { list: () => replays.list(), path: (name) => replays.catalogue.path(name) };
}

function tooManyMcpRequests(): ApiError {
  return rateLimited(`more than ${MCP_MAX_IN_FLIGHT} MCP requests at once: retry shortly`);
}
