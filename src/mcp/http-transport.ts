// One MCP request over Streamable HTTP (docs/mcp.md "Transport"): stateless, as the SDK's
// stateless mode defines it. Every POST gets a server and a transport of its own, answers in JSON
// (no SSE stream), and both are closed with it: nothing is kept between requests, so the number
// of MCP clients costs the program nothing while they are idle. GET and DELETE (a standalone
// stream, a session's end) have nothing to serve here: the routes answer them 405.

import type { IncomingHttpHeaders } from 'node:http';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';

export interface McpHttpRequest {
  /** The request's absolute URL. */
  url: string;
  headers: IncomingHttpHeaders;
  /** The JSON body, already parsed by the program's JSON parser. */
  body: unknown;
}

export interface McpHttpAnswer {
  status: number;
  headers: Record<string, string>;
  /** JSON-RPC response(s), or empty (202 for notifications). */
  body: string;
}

/** Answers one POST with `server` (made for this request; closed here). */
export async function answerMcpRequest(server: McpServer, request: McpHttpRequest): Promise<McpHttpAnswer> {
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  try {
    await server.connect(transport);
    const response = await transport.handleRequest(new Request(request.url, { method: 'POST', headers: webHeaders(request.headers) }), {
      parsedBody: request.body,
    });
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name] = value));
    return { status: response.status, headers, body: await response.text() };
  } finally {
    await server.close();
  }
}

function webHeaders(headers: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    // HTTP/2 pseudo-headers and hop-by-hop fields mean nothing to the transport.
    if (value === undefined || name.startsWith(':') || name === 'connection' || name === 'content-length') continue;
    out.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return out;
}
