// The JSON shapes of the gateway's resources (seed §2, docs/gateway.md): snake_case, ISO 8601 UTC times.

import type { SessionRecord } from '../archive/archive-store.ts';
import type { ApiKeyRecord, BrowserRecord, EndedReason, Project } from '../storage/store.ts';

export interface ProjectView {
  id: string;
  name: string;
  status: 'active' | 'archived';
  created_at: string;
  updated_at: string;
}

export interface ApiKeyView {
  id: string;
  name: string;
  created_at: string;
  created_by: { id: string; email: string; name: string | null };
  expires_at: string | null;
  deleted_at: string | null;
  masked_key: string;
  project_id: string | null;
  project_name: string | null;
}

/** A registration as the gateway shows it: never the agent's address or token. */
export interface BrowserRegistrationView {
  session_id: string;
  project_id: string | null;
  created_at: string;
  /** The gateway's CDP endpoint of the session (docs/gateway.md "CDP"). */
  cdp_ws_url: string;
}

/** A session in GET /browsers (docs/gateway.md "Listing"): never the agent's address or token. */
export interface BrowserSessionView {
  session_id: string;
  project_id: string | null;
  created_at: string;
  status: 'active' | 'ended';
  /** When the session ended (the official client's name); null while active. */
  deleted_at: string | null;
  ended_reason: EndedReason | null;
  event_count: number;
  error_count: number;
  failed_request_count: number;
  first_event_at: string | null;
  last_event_at: string | null;
  /** The gateway's CDP endpoint while the session is active (docs/gateway.md "CDP"). */
  cdp_ws_url?: string;
}

const iso = (ms: number) => new Date(ms).toISOString();
/** Unix µs → ISO 8601 with microseconds. */
const isoMicros = (us: number) => `${new Date(Math.floor(us / 1000)).toISOString().slice(0, -1)}${String(us % 1000).padStart(3, '0')}Z`;
/** A time that may be absent, written by `format`: null stays null. */
const nullableTime = (time: number | null, format: (time: number) => string) => (time === null ? null : format(time));

export function projectView(project: Project): ProjectView {
  return { id: project.id, name: project.name, status: project.status, created_at: iso(project.createdAt), updated_at: iso(project.updatedAt) };
}

export function apiKeyView(key: ApiKeyRecord): ApiKeyView {
  return {
    id: key.id,
    name: key.name,
    created_at: iso(key.createdAt),
    created_by: key.createdBy,
    expires_at: nullableTime(key.expiresAt, iso),
    deleted_at: nullableTime(key.deletedAt, iso),
    masked_key: key.maskedKey,
    project_id: key.projectId,
    project_name: key.projectName,
  };
}

/** `ws://<gateway host>/browsers/<id>/cdp`: the gateway's session objects' `cdp_ws_url`. */
export function gatewayCdpWsUrl(host: string, sessionId: string): string {
  return `ws://${host}/browsers/${encodeURIComponent(sessionId)}/cdp`;
}

/** `host`: the request's Host header, for the CDP endpoint's URL. */
export function browserRegistrationView(browser: BrowserRecord, host: string): BrowserRegistrationView {
  return {
    session_id: browser.sessionId,
    project_id: browser.projectId,
    created_at: iso(browser.createdAt),
    cdp_ws_url: gatewayCdpWsUrl(host, browser.sessionId),
  };
}

/** `host`: the request's Host header, for the CDP endpoint's URL (active sessions only). */
export function browserSessionView(session: SessionRecord, host: string): BrowserSessionView {
  return {
    session_id: session.sessionId,
    project_id: session.projectId,
    created_at: iso(session.createdAt),
    status: session.endedAt === null ? 'active' : 'ended',
    deleted_at: nullableTime(session.endedAt, iso),
    ended_reason: session.endedReason,
    event_count: session.eventCount,
    error_count: session.errorCount,
    failed_request_count: session.failedRequestCount,
    first_event_at: nullableTime(session.firstEventTs, isoMicros),
    last_event_at: nullableTime(session.lastEventTs, isoMicros),
    ...(session.endedAt === null && { cdp_ws_url: gatewayCdpWsUrl(host, session.sessionId) }),
  };
}
