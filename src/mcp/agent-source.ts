// The agent's TelemetrySource (docs/mcp.md "Data sources"): its one session, read through the
// history read the HTTP API serves (the durable store, else the RAM ring: src/stream/history.ts).

import type { HistoryReader } from '../stream/history.ts';
import {
  ToolError,
  type EventPage,
  type EventRead,
  type ExportLink,
  type SessionInfo,
  type SessionSource,
  type StepRequest,
  type TelemetrySource,
} from './source.ts';

export interface AgentSessionView {
  sessionId: string;
  createdAt: Date;
  isTerminated(): boolean;
  history: HistoryReader;
  /** The newest seq of the log. */
  latestSeq(): number;
}

/** Who calls: what the links are built on, and how a step is marked for this caller. */
export interface AgentCaller {
  /** `http://host:port` as the caller reached the agent. */
  baseUrl: string;
  /** Marks a step for this caller (the steps module); throws ToolError when refused. */
  addStep(step: StepRequest): Promise<{ step_id: string; recorded: boolean }>;
}

export function agentSource(view: AgentSessionView, caller: AgentCaller): TelemetrySource {
  const session: SessionSource = {
    id: view.sessionId,
    info: async (): Promise<SessionInfo> => ({
      session_id: view.sessionId,
      status: view.isTerminated() ? 'ended' : 'active',
      created_at: view.createdAt.toISOString(),
      event_count: view.latestSeq(),
    }),
    read: async (query: EventRead): Promise<EventPage> => {
      const page = view.history.read({
        filter: query.filter,
        order: query.order,
        offset: query.offset,
        sinceTs: query.sinceTs,
        untilTs: query.untilTs,
        limit: query.limit,
      });
      return page;
    },
    links: () => exportLinks(caller.baseUrl, view.sessionId),
    addStep: (step) => caller.addStep(step),
  };
  return {
    kind: 'agent',
    session: async (id) => {
      if (id !== undefined && id !== view.sessionId) throw new ToolError(`session_id: this agent serves session ${view.sessionId} only, not ${id}`);
      if (view.isTerminated()) throw new ToolError(`session ${view.sessionId} has ended (deleted); the gateway's archive keeps ended sessions readable`);
      return session;
    },
  };
}

/** The session's HAR and Playwright trace at `baseUrl` (the agent's or the gateway's): resource links, never inline. */
export function exportLinks(baseUrl: string, sessionId: string): ExportLink[] {
  const path = `${baseUrl}/browsers/${encodeURIComponent(sessionId)}`;
  return [
    {
      uri: `${path}/har`,
      name: `${sessionId}.har`,
      mimeType: 'application/json',
      description: "The session's network traffic as HAR 1.2 (GET with the same bearer credential; since/until, target_id, nav_seq narrow it)",
    },
    {
      uri: `${path}/trace`,
      name: `${sessionId}.trace.zip`,
      mimeType: 'application/zip',
      description: 'The session as a Playwright trace (GET with the same bearer credential; open with npx playwright show-trace)',
    },
  ];
}
