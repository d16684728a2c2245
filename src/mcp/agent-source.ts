// The agent's TelemetrySource (docs/mcp.md "Data sources"): its one session, read through the
// history read the HTTP API serves (the durable store, else the RAM ring: src/stream/history.ts),
// and its replays' links and frames (src/replay/) for a caller who may see them.

import type { ReplayRecord } from '../replay/catalogue.ts';
import { extractFrames } from '../replay/frames.ts';
import type { HistoryReader } from '../stream/history.ts';
import {
  ToolError,
  type EventPage,
  type EventRead,
  type ExportLink,
  type Picture,
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
  /**
   * The session's replays (docs/replay.md), for a caller who may see them (the `replay` scope):
   * their links, and frames for get_screenshot. Absent: no replays.
   */
  replays?: AgentReplays;
}

/** What the MCP tools need of the replay service. */
export interface AgentReplays {
  /** This session's replays, oldest first. */
  list(): ReplayRecord[];
  /** The path of a file of the replays directory. */
  path(name: string): string;
}

/** Frames decoded from a replay are shrunk to this width: enough to read a page, a fraction of the bytes. */
const REPLAY_FRAME_WIDTH = 1280;

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
    links: async () => [
      ...exportLinks(caller.baseUrl, view.sessionId),
      ...replayLinks(
        caller.baseUrl,
        view.sessionId,
        (view.replays?.list() ?? []).map((record) => ({
          replay_id: record.replay_id,
          started_at: new Date(record.started_at_ms).toISOString(),
          finished_at: record.finished_at_ms === undefined ? null : new Date(record.finished_at_ms).toISOString(),
          mime_type: record.mime_type,
        })),
      ),
    ],
    addStep: (step) => caller.addStep(step),
    ...(view.replays && { replayFrame: (ts: number) => replayFrame(view.replays!, ts) }),
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

/** Each replay's video at `baseUrl`, a resource link. */
export function replayLinks(
  baseUrl: string,
  sessionId: string,
  replays: ReadonlyArray<{ replay_id: string; started_at: string; finished_at: string | null; mime_type: string }>,
): ExportLink[] {
  return replays.map((replay) => ({
    uri: `${baseUrl}/browsers/${encodeURIComponent(sessionId)}/replays/${encodeURIComponent(replay.replay_id)}`,
    name: `replay ${replay.replay_id}`,
    mimeType: replay.mime_type,
    description: `The screen recorded from ${replay.started_at} to ${replay.finished_at ?? 'now (recording)'} (GET with the same bearer credential and the replay scope; HTTP Range works)`,
  }));
}

/**
 * The frame of the replay that covers `ts` (Unix µs), as a player shows it then (docs/replay.md
 * "Frames"); undefined when no replay covers it or its file cannot be read.
 */
async function replayFrame(replays: AgentReplays, ts: number): Promise<Picture | undefined> {
  const atMs = ts / 1000;
  const replay = replays
    .list()
    .filter((record) => record.started_at_ms <= atMs && atMs <= (record.finished_at_ms ?? Date.now()))
    .pop();
  if (replay === undefined) return undefined;
  const videoMs = Math.floor(atMs - replay.started_at_ms);
  try {
    const [frame] = await extractFrames(replays.path(replay.file), { times: [videoMs], image: 'jpeg', maxWidth: REPLAY_FRAME_WIDTH });
    if (frame === undefined) return undefined;
    return { ts, data: frame.data.toString('base64'), mimeType: frame.mimeType, origin: { source: 'replay', replay_id: replay.replay_id, video_ms: videoMs } };
  } catch {
    // No encoder, or a file that cannot be read as video: the screenshots remain.
    return undefined;
  }
}
