// POST /mcp on the gateway (docs/mcp.md): the agent package's MCP server over the archive, for
// every session the API key's project may see, live or ended. The key is checked by the
// authenticated scope's hook (401 without one, as on every route); a project-scoped key's tools
// see its project's sessions only. Stateless: a server per request (the agent package's
// answerMcpRequest), the module loaded on the first one.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { McpModule } from 'browser-telemetry-agent/mcp';
import { rateLimited } from 'browser-telemetry-agent/http-kit';
import { VERSION } from 'browser-telemetry-agent/program';
import type { Archive } from '../archive/archive.ts';
import { principalOf } from './auth.ts';
import { gatewaySource } from './mcp-source.ts';

/** MCP requests answered at once; past them 429, as on the agent (docs/mcp.md "Limits"). */
export const GATEWAY_MCP_MAX_IN_FLIGHT = 16;

export function registerMcpRoutes(app: FastifyInstance, archive: Archive, agentResponseMs: number): void {
  let module: Promise<McpModule> | undefined;
  let inFlight = 0;
  app.post('/mcp', async (request, reply) => {
    if (inFlight >= GATEWAY_MCP_MAX_IN_FLIGHT) throw rateLimited(`more than ${GATEWAY_MCP_MAX_IN_FLIGHT} MCP requests at once: retry shortly`);
    inFlight++;
    try {
      const mcp = await (module ??= import('browser-telemetry-agent/mcp'));
      const answer = await mcp.answerMcpRequest(serverFor(mcp, request), {
        url: `${baseUrl(request)}${request.url}`,
        headers: request.headers,
        body: request.body,
      });
      // The SDK's own statuses too (406, 415: JSON-RPC error bodies, as MCP clients expect).
      return await reply
        .code(answer.status)
        .headers(answer.headers)
        .send(answer.body === '' ? undefined : answer.body);
    } finally {
      inFlight--;
    }
  });

  const serverFor = (mcp: McpModule, request: FastifyRequest) =>
    mcp.createMcpServer(gatewaySource({ mcp, archive, principal: principalOf(request), baseUrl: baseUrl(request), agentResponseMs }), {
      name: 'browser-telemetry-gateway',
      version: VERSION,
      onInternalError: (err, tool) => request.log.error({ err, tool }, 'mcp tool failed'),
    });
}

function baseUrl(request: FastifyRequest): string {
  return `${request.protocol}://${request.headers.host ?? 'localhost'}`;
}
