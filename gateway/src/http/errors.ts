// The gateway's errors: the ApiError, body and registry of codes both programs share (the agent
// package's HTTP kit), plus the codes only the gateway uses (docs/gateway.md): `conflict` (a name
// or session id taken) and `project_not_empty`, both 409 with `x-should-retry: false` (the
// official SDK retries 409 by default, and repeating the request cannot change the answer).

import { API_ERROR_CODES, ApiError, forbidden, invalidInput, notFound } from 'browser-telemetry-agent/http-kit';
import { StoreError } from '../storage/store.ts';

/** The gateway's error codes: the agent's and its own. */
export const GATEWAY_ERROR_CODES = [...API_ERROR_CODES, 'conflict', 'project_not_empty'] as const;
export type GatewayErrorCode = (typeof GATEWAY_ERROR_CODES)[number];
/** An error the gateway answers with. */
export type GatewayError = ApiError<GatewayErrorCode>;

export function isGatewayErrorCode(value: unknown): value is GatewayErrorCode {
  return typeof value === 'string' && (GATEWAY_ERROR_CODES as readonly string[]).includes(value);
}

/**
 * An agent's error answer, passed on to the client as it is: its status and message, and its code
 * when it is one the gateway answers with too (else browser_unavailable); a status that is no
 * error is 502.
 */
export function agentAnswered(status: number, body: unknown): GatewayError {
  const fields = typeof body === 'object' && body !== null ? (body as { code?: unknown; message?: unknown }) : {};
  const code = isGatewayErrorCode(fields.code) ? fields.code : 'browser_unavailable';
  const message = typeof fields.message === 'string' ? fields.message : `the agent answered HTTP ${status}`;
  return new ApiError<GatewayErrorCode>(status >= 400 && status <= 599 ? status : 502, code, message);
}

export function conflict(code: 'conflict' | 'project_not_empty', message: string): GatewayError {
  return new ApiError<GatewayErrorCode>(409, code, message).withHeader('x-should-retry', 'false');
}

/** The agent behind a browser could not be reached or refused the gateway: 502. */
export function browserUnreachable(message: string): GatewayError {
  return new ApiError(502, 'browser_unavailable', message);
}

/**
 * The agent took the request but did not answer in time (hung, stopped, overloaded): 504, with
 * the same code as 502 since for the client it is the same browser being unavailable; the detail
 * says what the gateway waited for.
 */
export function browserTimedOut(waitedFor: string, afterMs: number): GatewayError {
  return new ApiError<GatewayErrorCode>(504, 'browser_unavailable', "the browser's agent did not answer in time", [
    { code: 'agent_timeout', message: `no ${waitedFor} from the agent within ${afterMs} ms` },
  ]);
}

export function orgWideKeyRequired(): GatewayError {
  return forbidden('this endpoint needs an organization-wide API key');
}

export function otherProject(what: string): GatewayError {
  return forbidden(`this API key is scoped to another project than this ${what}`);
}

export function fromStoreError(error: StoreError): GatewayError {
  switch (error.reason) {
    case 'not_found':
      return notFound(error.message);
    case 'name_taken':
    case 'session_taken':
    case 'session_archived':
      return conflict('conflict', error.message);
    case 'project_not_empty':
      return conflict('project_not_empty', error.message);
    case 'unknown_project':
      return invalidInput(error.message, [{ code: 'invalid_input', message: 'no live project with this id', field: 'project_id' }]);
  }
}
