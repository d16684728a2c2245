// The MCP server (docs/mcp.md): the tools, the prompt and the instructions, over any
// TelemetrySource (the agent's one session, the gateway's many). Built with the official SDK's
// McpServer; tool arguments are zod schemas, so a bad argument is an MCP tool error naming it
// (the SDK's validation), and every failure inside a tool is one too, never a crash.

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ContentBlock, GetPromptResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { EVENT_TYPES, FILTER_CATEGORIES } from '../stream/event-filter.ts';
import { INCLUDE_GROUPS } from './compact.ts';
import { EVENTS_BOUNDS, EVENTS_DEFAULTS, getEvents, SCAN_LIMIT } from './events-tool.ts';
import { REQUEST_BOUNDS, REQUEST_DEFAULTS, getRequest } from './request-tool.ts';
import { getScreenshot } from './screenshot-tool.ts';
import { ToolError, type ExportLink, type SessionInfo, type TelemetrySource } from './source.ts';
import { DIGEST_DEFAULT_BUDGET, whatWentWrong } from './wrong-tool.ts';

export interface McpServerOptions {
  /** The program's name and version (serverInfo). */
  name: string;
  version: string;
  /** Told of a failure that is not the caller's (a database error): logged by the program. */
  onInternalError?: (err: unknown, tool: string) => void;
}

/** The tools' names, in the order tools/list gives them. */
export const TOOL_NAMES = ['list_sessions', 'what_went_wrong', 'get_events', 'get_request', 'get_screenshot', 'add_step'] as const;

const LIST_SESSIONS_BOUNDS = { limit: [1, 100] } as const;

const INSTRUCTIONS_AGENT =
  "Telemetry of one browser session (the agent's): every console message, request, navigation, crash and automation action, in order (seq). Start with what_went_wrong; follow its event ids and caused_by action ids with get_events, get_request and get_screenshot. Answers are compact: each says what it left out and how to get it. add_step marks a step of your own automation in the record.";
const INSTRUCTIONS_GATEWAY =
  "Telemetry of the browser sessions this API key may read, live and ended: every console message, request, navigation, crash and automation action, in order (seq). list_sessions finds a session; what_went_wrong digests it; get_events, get_request and get_screenshot follow its event ids and caused_by action ids. Answers are compact: each says what it left out and how to get it. add_step marks a step of your own automation in a live session's record.";

/** A list filter: an array, or one value alone (models often send one). */
function listOf<T extends z.ZodType>(item: T, description: string) {
  return z
    .preprocess((value) => (value === undefined || Array.isArray(value) ? value : [value]), z.array(item).max(100))
    .optional()
    .describe(description);
}

/** An enum whose error names the bad value and where the valid ones are listed. */
function oneOf<T extends string>(values: readonly T[], what: string) {
  return z.enum(values as unknown as [T, ...T[]], { error: (issue) => `unknown ${what} ${JSON.stringify(issue.input)} (the tool's input schema lists them)` });
}

const TIME = z.string().max(64);
const ID = z.string().min(1).max(256);

function sessionIdArg(source: TelemetrySource) {
  return source.kind === 'gateway'
    ? z.string().min(1).max(128).describe('The session (list_sessions gives them)')
    : z.string().min(1).max(128).optional().describe("The session; this agent has one, so it may be left out (it must be the agent's own id when given)");
}

export function createMcpServer(source: TelemetrySource, options: McpServerOptions): McpServer {
  const server = new McpServer(
    { name: options.name, version: options.version },
    { instructions: source.kind === 'gateway' ? INSTRUCTIONS_GATEWAY : INSTRUCTIONS_AGENT, capabilities: { tools: {}, prompts: {} } },
  );
  const sessionId = sessionIdArg(source);

  /** A tool's handler with its failures turned into tool errors. */
  const run =
    <A>(tool: string, handler: (args: A) => Promise<CallToolResult>) =>
    async (args: A): Promise<CallToolResult> => {
      try {
        return await handler(args);
      } catch (err) {
        if (err instanceof ToolError) return toolError(err.message);
        options.onInternalError?.(err, tool);
        return toolError(`internal error in ${tool}: ${(err as Error).message}; the server's log has the details`);
      }
    };

  if (source.listSessions) {
    const list = source.listSessions.bind(source);
    server.registerTool(
      'list_sessions',
      {
        title: 'List sessions',
        description:
          'The browser sessions this API key may read, newest first: status (active or ended), times, and counts of events, console errors and failed requests. Pages with offset.',
        inputSchema: {
          status: z.enum(['active', 'ended', 'all']).optional().describe('Which sessions (default all)'),
          limit: z.number().int().min(LIST_SESSIONS_BOUNDS.limit[0]).max(LIST_SESSIONS_BOUNDS.limit[1]).optional().describe('Sessions per page (default 20)'),
          offset: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().describe('Sessions to skip (next_offset of the previous page)'),
        },
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      run('list_sessions', async (args: { status?: 'active' | 'ended' | 'all'; limit?: number; offset?: number }) => {
        const limit = args.limit ?? 20;
        const offset = args.offset ?? 0;
        const page = await list({ status: args.status ?? 'all', limit, offset });
        return json({
          sessions: page.sessions.map(sessionRow),
          has_more: page.hasMore,
          ...(page.hasMore && { next_offset: offset + page.sessions.length }),
        });
      }),
    );
  }

  server.registerTool(
    'what_went_wrong',
    {
      title: 'What went wrong',
      description: `A digest of the session: failed requests and 4xx/5xx responses grouped by origin, console errors and exceptions with counts and first occurrence, crashes, OOM kills, hangs, dialogs, downloads, navigations that never settled, telemetry gaps and failed actions. Each finding names the action that caused it (caused_by, described under actions) and event ids (seq) to read more. About ${DIGEST_DEFAULT_BUDGET / 1024} KB; links to the session's HAR and Playwright trace follow.`,
      inputSchema: {
        session_id: sessionId,
        since: TIME.optional().describe('Only from this time: RFC 3339, or a duration like 10m (that long ago); default: the whole session'),
        until: TIME.optional().describe('Only before this time (same forms)'),
        budget_bytes: z.number().int().min(2048).max(65_536).optional().describe(`Largest answer in bytes (default ${DIGEST_DEFAULT_BUDGET})`),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    run('what_went_wrong', async (args: { session_id?: string; since?: string; until?: string; budget_bytes?: number }) => {
      const answer = await whatWentWrong(source, args);
      return { content: [{ type: 'text', text: answer.text }, ...(await answer.session.links()).map(resourceLink)] };
    }),
  );

  server.registerTool(
    'get_events',
    {
      title: 'Get events',
      description: `The session's events in order, filtered, a page at a time under a byte budget (default ${EVENTS_DEFAULTS.budgetBytes}). Each event is {seq, ts, type, ...its data}; the page's first target is named once (default_target_id) and left out of its events. Headers, bodies, stack traces (the top frame is kept), console args, timing and transfer details, and context ids are dropped and strings cut at ${EVENTS_DEFAULTS.maxString} characters unless asked (include, max_string); the answer says what it left out. Continue with next_cursor alone until has_more is false. A text match reads up to ${SCAN_LIMIT} events per call.`,
      inputSchema: {
        session_id: sessionId,
        category: listOf(oneOf(FILTER_CATEGORIES, 'category'), 'Only these categories (a union with type)'),
        type: listOf(oneOf(EVENT_TYPES, 'event type'), 'Only these event types (a union with category)'),
        target_id: listOf(ID, 'Only events of these targets (tabs, frames, workers)'),
        nav_seq: listOf(z.number().int().min(0), 'Only events of these navigations of their tab'),
        caused_by: listOf(ID, 'Only these actions (action ids) and the events they caused'),
        step_id: listOf(ID, 'Only these steps, their actions and what those caused'),
        text: z.string().max(200).optional().describe("Only events with this text (case-insensitive) in one of their data's strings"),
        since: TIME.optional().describe('From this time: RFC 3339, or a duration like 5m (that long ago); default: the start of the session'),
        until: TIME.optional().describe('Before this time (same forms)'),
        order: z.enum(['asc', 'desc']).optional().describe('asc (default): oldest first; desc: newest first'),
        cursor: z.string().max(4096).optional().describe('next_cursor of the previous answer; it carries the query, so pass it without filters'),
        limit: z
          .number()
          .int()
          .min(EVENTS_BOUNDS.limit[0])
          .max(EVENTS_BOUNDS.limit[1])
          .optional()
          .describe(`Most events per page (default ${EVENTS_DEFAULTS.limit}); the budget usually ends a page first`),
        budget_bytes: z
          .number()
          .int()
          .min(EVENTS_BOUNDS.budgetBytes[0])
          .max(EVENTS_BOUNDS.budgetBytes[1])
          .optional()
          .describe(`Largest answer in bytes (default ${EVENTS_DEFAULTS.budgetBytes})`),
        include: z
          .array(oneOf(INCLUDE_GROUPS, 'include group'))
          .optional()
          .describe(
            'Fields to keep: headers, bodies (response body, post_data, socket payloads), stack_traces, args (console), timing (resource timing, protocol, sizes, remote address), context (frame, loader and CDP session ids, initiator URL, status text)',
          ),
        max_string: z
          .number()
          .int()
          .min(EVENTS_BOUNDS.maxString[0])
          .max(EVENTS_BOUNDS.maxString[1])
          .optional()
          .describe(`Characters of a string kept (default ${EVENTS_DEFAULTS.maxString})`),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    run('get_events', async (args: Parameters<typeof getEvents>[1]) => json(await getEvents(source, args))),
  );

  server.registerTool(
    'get_request',
    {
      title: 'Get one request',
      description:
        'One network request by its request_id: method, URL, headers, redirects, the response or the failure, timing phases (ms, as in a HAR), the initiator chain back to the document, the action that caused it, and with include_body the request and response bodies the body policy captured. Give seq (any event of the request) to find it fast in a long session.',
      inputSchema: {
        session_id: sessionId,
        request_id: z.string().min(1).max(128).describe("The request's request_id, as events give it"),
        seq: z.number().int().min(1).optional().describe('The seq of any event of the request (a hint: the search starts there)'),
        include_body: z.boolean().optional().describe('Include the bodies (default false)'),
        max_body_chars: z
          .number()
          .int()
          .min(REQUEST_BOUNDS.maxBodyChars[0])
          .max(REQUEST_BOUNDS.maxBodyChars[1])
          .optional()
          .describe(`Characters of a body kept (default ${REQUEST_DEFAULTS.maxBodyChars})`),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    run('get_request', async (args: Parameters<typeof getRequest>[1]) => json(await getRequest(source, args))),
  );

  server.registerTool(
    'get_screenshot',
    {
      title: 'Get a screenshot',
      description:
        'The screenshot nearest an event (seq) or a time (at), or the latest: an image of the active tab, taken after each page load and uncaught exception (or a replay frame where the session has a replay), with its time and how far it is from what was asked. Images go whole (up to about 750 KB).',
      inputSchema: {
        session_id: sessionId,
        seq: z.number().int().min(1).optional().describe('The event to look near'),
        at: TIME.optional().describe('The time to look near: RFC 3339, or a duration like 2m (that long ago)'),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    run('get_screenshot', async (args: Parameters<typeof getScreenshot>[1]) => {
      const answer = await getScreenshot(source, args);
      const content: ContentBlock[] = [{ type: 'text', text: answer.text }];
      if (answer.picture) content.push({ type: 'image', data: answer.picture.data, mimeType: answer.picture.mimeType });
      return { content };
    }),
  );

  server.registerTool(
    'add_step',
    {
      title: 'Mark a step',
      description:
        'Marks a step of your automation ("log in", "checkout") in the live session\'s record. Until your next step, the actions you cause (API calls made with this same credential) carry its step_id, and so do their effects: get_events {step_id} reads them. Needs the telemetry:write scope on an agent token.',
      inputSchema: {
        session_id: sessionId,
        name: z.string().min(1).max(200).describe('What the automation does now (at most 200 characters)'),
        data: z.record(z.string(), z.unknown()).optional().describe('Anything to keep with the step (a JSON object, at most 16 KB)'),
        parent_id: z.string().min(1).max(64).optional().describe('The step_id of an earlier step this one belongs to'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    run('add_step', async (args: { session_id?: string; name: string; data?: Record<string, unknown>; parent_id?: string }) => {
      const session = await source.session(args.session_id);
      const { session_id: _id, ...step } = args;
      return json({ session_id: session.id, ...(await session.addStep(step)) });
    }),
  );

  server.registerPrompt(
    'debug_session',
    {
      title: 'Debug a browser session',
      description: "Walks through finding out why a browser session failed, with the tools and the session's HAR and trace.",
      argsSchema:
        source.kind === 'gateway'
          ? { session_id: z.string().describe('The session to debug') }
          : { session_id: z.string().optional().describe("The session (default: this agent's)") },
    },
    async (args: { session_id?: string }): Promise<GetPromptResult> => {
      let links: ExportLink[] = [];
      let id = args.session_id;
      try {
        const session = await source.session(args.session_id);
        id = session.id;
        links = await session.links();
      } catch (err) {
        if (!(err instanceof ToolError)) throw err;
      }
      return { description: `Debug session ${id ?? ''}`.trim(), messages: debugMessages(id, links) };
    },
  );
  return server;
}

function debugMessages(sessionId: string | undefined, links: ExportLink[]): GetPromptResult['messages'] {
  const arg = sessionId === undefined ? '' : ` with session_id "${sessionId}"`;
  const steps = [
    `Find out why browser session ${sessionId ?? "(this agent's)"} went wrong, from its telemetry.`,
    `1. Call what_went_wrong${arg}. Read its summary, then each finding: failed requests by origin, console errors, crashes, hangs, dialogs, unsettled navigations, failed actions.`,
    '2. For the finding that came first, read its cause: its caused_by names an action (described under actions); get_events with caused_by [that id] lists everything the action caused, in order. With step ids, get_events step_id reads a whole step.',
    '3. For a failed request, get_request with its request_id and seq shows the status, headers, timing, initiator chain; add include_body to read the response the page got.',
    '4. For a console error or a crash, get_events around its seq (since/until, or type filters such as console, network) shows what led up to it; get_screenshot with its seq shows what the page looked like.',
    '5. Answer with the first thing that went wrong, the action that led to it, and the evidence (event seqs, request ids). Mention what you could not see (left_out, omitted, telemetry gaps).',
    links.length > 0
      ? "The session's whole record is in the HAR and the Playwright trace linked below (read them with the same credential), should a detail be missing."
      : '',
  ].filter((line) => line !== '');
  return [
    { role: 'user', content: { type: 'text', text: steps.join('\n') } },
    ...links.map((link) => ({ role: 'user' as const, content: resourceLink(link) })),
  ];
}

function resourceLink(link: ExportLink): ContentBlock & { type: 'resource_link' } {
  return { type: 'resource_link', uri: link.uri, name: link.name, mimeType: link.mimeType, description: link.description };
}

function sessionRow(info: SessionInfo): Record<string, unknown> {
  return info as unknown as Record<string, unknown>;
}

function json(value: unknown): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }] };
}

function toolError(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}
