// The MCP server of the agent package (`browser-telemetry-agent/mcp`; docs/mcp.md): the tools
// over a TelemetrySource, one request over Streamable HTTP, and the agent's own source. The
// gateway implements the source over its archive and mounts the same server. Loaded on the first
// MCP request only: the SDK costs about 30 MB and 0.4 s to load, which an agent nobody asks over
// MCP never pays.

export { agentSource, exportLinks, replayLinks, type AgentCaller, type AgentReplays, type AgentSessionView } from './agent-source.ts';
export { answerMcpRequest, type McpHttpAnswer, type McpHttpRequest } from './http-transport.ts';
export { createMcpServer, TOOL_NAMES, type McpServerOptions } from './server.ts';
export * from './source.ts';

/** This module, as a program that loads it on demand holds it. */
export type McpModule = typeof import('./index.ts');
