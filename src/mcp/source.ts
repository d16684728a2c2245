// What the MCP tools read (docs/mcp.md "Data sources"): a small interface the agent implements
// over its history (one session, agent-source.ts) and the gateway over its archive (every session
// the API key's project may see). The tools know nothing else of either program.

import type { EventFilter } from '../stream/event-filter.ts';

/** A session as list_sessions and what_went_wrong describe it; times are RFC 3339. */
export interface SessionInfo {
  session_id: string;
  status: 'active' | 'ended';
  created_at: string;
  ended_at?: string;
  ended_reason?: string;
  /** Counts the gateway keeps with every archived batch (docs/gateway.md "Reading"). */
  event_count?: number;
  error_count?: number;
  failed_request_count?: number;
  first_event_at?: string;
  last_event_at?: string;
}

/** One read of a session's events: the history read's query (docs/events.md "History"). */
export interface EventRead {
  filter: EventFilter | undefined;
  order: 'asc' | 'desc';
  /** asc: seq ≥ offset; desc: seq ≤ offset. */
  offset?: number;
  /** Unix µs, inclusive; applies when offset is unset. */
  sinceTs?: number;
  /** Unix µs, exclusive. */
  untilTs?: number;
  limit: number;
  /**
   * The filter as the HTTP query lists it (`category`, `type`, `target_id`, `nav_seq`,
   * `caused_by`, `step_id`): the gateway passes it on to a live session's agent.
   */
  filterQuery: Record<string, readonly string[]>;
}

/** A page of envelope JSON texts (`{"seq":N,"event":{…}}`) and where to continue. */
export interface EventPage {
  items: string[];
  hasMore: boolean;
  /** asc: the seq after the page; desc: the seq before it (0 at the start). */
  nextOffset: number;
}

/** A link to one of the session's exports, for an MCP resource link (never inline). */
export interface ExportLink {
  uri: string;
  name: string;
  mimeType: string;
  description: string;
}

/** A step as the tool adds it (docs/events.md "Steps"). */
export interface StepRequest {
  name: string;
  data?: Record<string, unknown>;
  parent_id?: string;
}

/** One session the caller may read. */
export interface SessionSource {
  readonly id: string;
  info(): Promise<SessionInfo>;
  read(query: EventRead): Promise<EventPage>;
  /** The session's HAR, Playwright trace and replays, as HTTP URLs read with the same credential. */
  links(): Promise<ExportLink[]>;
  /**
   * Marks a step of the caller's automation (the add_step tool); throws ToolError when refused
   * (a missing scope, a limit, a session that has ended).
   */
  addStep(step: StepRequest): Promise<{ step_id: string; recorded: boolean }>;
  /**
   * The replay frame nearest `ts` (Unix µs), where the session has a replay; get_screenshot picks
   * it or a screenshot, whichever is nearer (docs/mcp.md "get_screenshot"). Absent: no replays.
   */
  replayFrame?(ts: number): Promise<Picture | undefined>;
}

/** An image of the page at a moment. */
export interface Picture {
  /** Unix µs. */
  ts: number;
  /** Base64. */
  data: string;
  mimeType: string;
  /** Where it comes from: `{seq, source: 'monitor_screenshot'}`, or a replay's frame. */
  origin: Record<string, unknown>;
}

export interface SessionListQuery {
  status: 'active' | 'ended' | 'all';
  limit: number;
  offset: number;
}

/** The sessions a caller may read: the agent's one, or the gateway's (by the API key's project). */
export interface TelemetrySource {
  /** `agent`: one session, its id optional in every tool; `gateway`: many, the id required. */
  readonly kind: 'agent' | 'gateway';
  /** The session `id` names (the agent's own when undefined); throws ToolError when it is unknown or not the caller's. */
  session(id: string | undefined): Promise<SessionSource>;
  /** Newest first (the gateway); undefined on the agent, which has one session. */
  listSessions?(query: SessionListQuery): Promise<{ sessions: SessionInfo[]; hasMore: boolean }>;
}

/**
 * A tool call that cannot be answered as asked: a bad argument, an unknown session, a missing
 * scope. The message is what the model reads (an MCP tool error), so it says what to change.
 */
export class ToolError extends Error {
  override name = 'ToolError';
}
