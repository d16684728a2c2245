// The MCP SDK's own client against an agent's or a gateway's /mcp (docs/mcp.md), and the
// helpers the MCP tests share: a tool's JSON answer, its error text, the bytes a model receives.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** A connected client (`token` undefined: no Authorization header). */
export async function connectMcp(baseUrl: string, token: string | undefined): Promise<Client> {
  const client = new Client({ name: 'mcp-e2e', version: '1.0.0' });
  const headers: Record<string, string> = token === undefined ? {} : { Authorization: `Bearer ${token}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers } }));
  return client;
}

/** Calls a tool and returns its result as the client got it. */
export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The first text content of a result. */
export function textOf(result: CallToolResult): string {
  const text = result.content.find((item) => item.type === 'text');
  if (text?.type !== 'text') throw new Error(`no text content in ${JSON.stringify(result).slice(0, 500)}`);
  return text.text;
}

/** A tool's JSON answer; throws with the tool's error text when it answered an error. */
export async function callJson<T = Record<string, any>>(client: Client, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const result = await call(client, name, args);
  if (result.isError) throw new Error(`${name} answered an error: ${textOf(result)}`);
  return JSON.parse(textOf(result)) as T;
}

/** The error text of a tool call that must fail; throws when it did not. */
export async function toolError(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const result = await call(client, name, args);
  if (result.isError !== true) throw new Error(`${name} did not answer an error: ${textOf(result).slice(0, 300)}`);
  return textOf(result);
}

/** UTF-8 bytes of every text content of a result: what a model reads of it. */
export function textBytes(result: CallToolResult): number {
  let bytes = 0;
  for (const item of result.content) if (item.type === 'text') bytes += Buffer.byteLength(item.text, 'utf8');
  return bytes;
}

/** Pages get_events with its cursor to the end; every page's answer as the client got it. */
export async function allPages(client: Client, args: Record<string, unknown>, maxPages = 1000): Promise<CallToolResult[]> {
  const pages: CallToolResult[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < maxPages; i++) {
    const result = await call(client, 'get_events', cursor === undefined ? args : { ...(args.session_id ? { session_id: args.session_id } : {}), cursor });
    if (result.isError) throw new Error(`get_events answered an error: ${textOf(result)}`);
    pages.push(result);
    const answer = JSON.parse(textOf(result)) as { has_more: boolean; next_cursor?: string };
    if (!answer.has_more) return pages;
    if (answer.next_cursor === undefined) throw new Error('has_more without next_cursor');
    cursor = answer.next_cursor;
  }
  throw new Error(`more than ${maxPages} pages`);
}
