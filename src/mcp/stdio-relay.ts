// `browser-telemetry-agent mcp --url <agent or gateway>` (docs/mcp.md "Desktop clients"): an MCP
// server on stdin/stdout for clients that start their servers as processes (Claude Desktop,
// Cursor, VS Code), relaying every message to the agent's or the gateway's `/mcp` over
// Streamable HTTP with the bearer token from the environment. A relay, not a second server: the
// tools, their answers and their errors are the remote's, and the remote's auth decides. The
// token never comes from argv, which any user of the machine can read (ps, /proc).

import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';

/** The environment variable holding the bearer token (an agent token or a gateway API key). */
export const MCP_TOKEN_ENV = 'BROWSER_TELEMETRY_TOKEN';

export const MCP_HELP = `Usage: browser-telemetry-agent mcp --url URL

An MCP server on stdin/stdout that relays to the /mcp endpoint of an agent or a gateway
(docs/mcp.md). The bearer token (an agent token with telemetry:read, or a gateway API key)
is read from ${MCP_TOKEN_ENV}, never from the command line.

  --url URL    The agent or gateway (http://host:port, or the full .../mcp URL)
  -h, --help   Print this help and exit.
`;

/** A bad command line: exit 2 with this message. */
export class RelayUsageError extends Error {
  override name = 'RelayUsageError';
}

export interface RelayOptions {
  url: URL;
  token: string;
}

/** The relay's options from its arguments (after `mcp`) and the environment; 'help' for --help. */
export function parseRelayArgs(argv: readonly string[], env: Record<string, string | undefined>): RelayOptions | 'help' {
  let url: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '-h' || arg === '--help') return 'help';
    if (arg === '--url' || arg.startsWith('--url=')) {
      url = arg === '--url' ? argv[++i] : arg.slice('--url='.length);
      if (url === undefined || url === '') throw new RelayUsageError('--url: expected the URL of an agent or a gateway');
      continue;
    }
    if (arg === '--token' || arg.startsWith('--token='))
      throw new RelayUsageError(`--token: the token is read from ${MCP_TOKEN_ENV}, never from the command line (other users can read it there)`);
    throw new RelayUsageError(`unknown argument ${JSON.stringify(arg)} (see mcp --help)`);
  }
  if (url === undefined) throw new RelayUsageError('--url is required (the agent or gateway to relay to)');
  const token = env[MCP_TOKEN_ENV];
  if (token === undefined || token === '')
    throw new RelayUsageError(`${MCP_TOKEN_ENV} is not set: put the bearer token (agent token or gateway API key) there`);
  return { url: mcpUrl(url), token };
}

/** `http://host:port[/base]` → `…/mcp`; a URL already ending in /mcp stays. */
export function mcpUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new RelayUsageError(`--url: ${JSON.stringify(text)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new RelayUsageError('--url: expected an http or https URL');
  const path = url.pathname.replace(/\/+$/, '');
  if (!path.endsWith('/mcp')) url.pathname = `${path}/mcp`;
  return url;
}

/**
 * Relays between stdin/stdout and the remote until stdin ends. A message the remote cannot take
 * (unreachable, 401, 429) is answered locally with a JSON-RPC error for its request, so the
 * client hears why instead of waiting.
 */
export async function runRelay(options: RelayOptions, log: (line: string) => void): Promise<void> {
  const remote = new StreamableHTTPClientTransport(options.url, { requestInit: { headers: { Authorization: `Bearer ${options.token}` } } });
  const local = new StdioServerTransport();
  const initializeIds = new Set<RequestId>();
  const closed = new Promise<void>((resolve) => {
    local.onclose = () => resolve();
  });
  remote.onmessage = (message: JSONRPCMessage) => {
    // The client's protocol version goes on every later request (the SDK's Client does the same).
    if (isJSONRPCResultResponse(message) && initializeIds.delete(message.id)) {
      const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === 'string') remote.setProtocolVersion(version);
    }
    void local.send(message).catch((err: unknown) => log(`writing to stdout failed: ${(err as Error).message}`));
  };
  remote.onerror = (err) => log(`remote: ${err.message}`);
  local.onerror = (err) => log(`stdin: ${err.message}`);
  local.onmessage = (message) => {
    if (isJSONRPCRequest(message) && message.method === 'initialize') initializeIds.add(message.id);
    remote.send(message).catch((err: unknown) => {
      // The SDK's StreamableHTTPError carries the HTTP status as `code`; its message has the body.
      const status = (err as { code?: unknown }).code;
      const text = `${options.url.href} ${typeof status === 'number' ? `answered HTTP ${status}` : 'could not be reached'}: ${(err as Error).message}`;
      log(text);
      if (isJSONRPCRequest(message)) void local.send({ jsonrpc: '2.0', id: message.id, error: { code: -32000, message: text } });
    });
  };
  await remote.start();
  await local.start();
  log(`relaying MCP on stdio to ${options.url.href}`);
  await closed;
  await remote.close();
}
