// The gateway's TelemetrySource for the MCP server (docs/mcp.md "Data sources"): every session
// the API key's project may see, live or ended, read as GET /browsers/{id}/telemetry/events reads
// it (the archive, then the agent past the archived seq: archive/archive-history.ts). A step goes
// to the session's agent as the forwarded steps route sends it, naming the key as the caller; a
// live session's replays are linked at the gateway's forwarded replay routes. Replay frames are
// decoded where the files are, on the agent: the gateway's get_screenshot has the screenshots.

import type { McpModule, SessionInfo, SessionSource, StepRequest, TelemetrySource } from 'browser-telemetry-agent/mcp';
import { CALLER_HEADER, STEP_VIA_HEADER, VIA_GATEWAY_HEADER } from 'browser-telemetry-agent/http-kit';
import type { Archive } from '../archive/archive.ts';
import type { SessionRecord } from '../archive/archive-store.ts';
import type { Principal } from './auth.ts';

export interface GatewaySourceOptions {
  /** The MCP module (loaded on the first MCP request). */
  mcp: McpModule;
  archive: Archive;
  principal: Principal;
  /** `http://host:port` as the caller reached the gateway: the export links. */
  baseUrl: string;
  /** Longest wait for the agent's answer to a step. */
  agentResponseMs: number;
}

/** How long the links wait for a live agent's list of replays. */
const REPLAY_LIST_TIMEOUT_MS = 2000;

/** A replay as the agent's GET /browsers/{id}/replays lists it (docs/replay.md "API"). */
interface AgentReplay {
  replay_id: string;
  started_at: string;
  finished_at: string | null;
  mime_type: string;
}

const iso = (ms: number) => new Date(ms).toISOString();
const isoMicros = (us: number) => new Date(Math.floor(us / 1000)).toISOString();

export function gatewaySource(options: GatewaySourceOptions): TelemetrySource {
  const { mcp, archive, principal } = options;
  const { ToolError } = mcp;
  const sessionOf = (record: SessionRecord): SessionSource => ({
    id: record.sessionId,
    info: async () => sessionInfo(record),
    read: (query) =>
      archive.history.read(record, {
        filter: query.filter,
        filterQuery: query.filterQuery,
        order: query.order,
        offset: query.offset,
        sinceTs: query.offset === undefined ? query.sinceTs : undefined,
        untilTs: query.untilTs,
        limit: query.limit,
      }),
    links: async () => [...mcp.exportLinks(options.baseUrl, record.sessionId), ...mcp.replayLinks(options.baseUrl, record.sessionId, await replaysOf(record))],
    addStep: async (step) => {
      if (record.endedAt !== null) throw new ToolError(`add_step: session ${record.sessionId} has ended; steps go into live sessions only`);
      return postStep(record, step);
    },
  });

  /** The agent's steps route, as the gateway forwards it (browser-proxy.ts), marked as an MCP step. */
  const postStep = async (record: SessionRecord, step: StepRequest): Promise<{ step_id: string; recorded: boolean }> => {
    let response: Response;
    try {
      response = await fetch(`${record.agentUrl}/browsers/${encodeURIComponent(record.sessionId)}/telemetry/steps`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${record.agentToken}`,
          'content-type': 'application/json',
          [VIA_GATEWAY_HEADER]: '1',
          [CALLER_HEADER]: `key:${principal.keyId}`,
          [STEP_VIA_HEADER]: 'mcp',
        },
        body: JSON.stringify(step),
        signal: AbortSignal.timeout(options.agentResponseMs),
      });
    } catch (err) {
      throw new ToolError(`add_step: the session's agent could not be reached (${(err as Error).message})`);
    }
    const text = await response.text();
    if (response.status === 200) return JSON.parse(text) as { step_id: string; recorded: boolean };
    // The agent's error body says what was refused (a limit, the rate): passed on as it is.
    let message = text.slice(0, 500);
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? message;
    } catch {
      // Not the error body: the text as it came.
    }
    if (response.status === 401 || response.status === 403)
      throw new ToolError(`add_step: the session's agent refused the gateway's token (its telemetry:write scope): ${message}`);
    throw new ToolError(`add_step: ${message}`);
  };

  /**
   * A live session's replays, from its agent (their files are the agent's: an ended session's are
   * gone with it); none when the agent does not answer in time or refuses (its token lacks `replay`).
   */
  const replaysOf = async (record: SessionRecord): Promise<AgentReplay[]> => {
    if (record.endedAt !== null) return [];
    try {
      const response = await fetch(`${record.agentUrl}/browsers/${encodeURIComponent(record.sessionId)}/replays`, {
        headers: { authorization: `Bearer ${record.agentToken}`, [VIA_GATEWAY_HEADER]: '1' },
        signal: AbortSignal.timeout(REPLAY_LIST_TIMEOUT_MS),
      });
      if (response.status !== 200) {
        await response.body?.cancel();
        return [];
      }
      const list = (await response.json()) as unknown;
      return Array.isArray(list) ? (list as AgentReplay[]).filter((replay) => typeof replay?.replay_id === 'string') : [];
    } catch {
      return [];
    }
  };

  return {
    kind: 'gateway',
    session: async (id) => {
      if (id === undefined) throw new ToolError('session_id: required on the gateway (list_sessions gives the sessions this key may read)');
      const record = await archive.store.findSession(id);
      if (record === undefined) throw new ToolError(`session_id: no session ${JSON.stringify(id)} (list_sessions gives the sessions this key may read)`);
      if (principal.projectId !== null && principal.projectId !== record.projectId)
        throw new ToolError(`session_id: session ${id} belongs to another project than this API key's`);
      return sessionOf(record);
    },
    listSessions: async (query) => {
      const page = await archive.store.listSessions({
        limit: query.limit,
        offset: query.offset,
        status: query.status,
        projectId: principal.projectId ?? undefined,
        newestFirst: true,
      });
      return { sessions: page.items.map(sessionInfo), hasMore: page.hasMore };
    },
  };
}

function sessionInfo(record: SessionRecord): SessionInfo {
  return {
    session_id: record.sessionId,
    status: record.endedAt === null ? 'active' : 'ended',
    created_at: iso(record.createdAt),
    ...(record.endedAt !== null && { ended_at: iso(record.endedAt) }),
    ...(record.endedReason !== null && { ended_reason: record.endedReason }),
    event_count: record.eventCount,
    error_count: record.errorCount,
    failed_request_count: record.failedRequestCount,
    ...(record.firstEventTs !== null && { first_event_at: isoMicros(record.firstEventTs) }),
    ...(record.lastEventTs !== null && { last_event_at: isoMicros(record.lastEventTs) }),
  };
}
