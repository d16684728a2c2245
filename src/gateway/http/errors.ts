// The gateway's errors: the agent's ApiError and body (src/http/errors.ts), plus the codes only
// the gateway uses (SPEC §13): `conflict` (a name or session id taken) and `project_not_empty`.
// Both are 409 and carry `x-should-retry: false`: the official SDK retries 409 by default, and
// repeating the request cannot change the answer.

import { ApiError, forbidden, invalidInput, notFound, type ApiErrorCode } from '../../http/errors.ts';
import { StoreError } from '../storage/store.ts';

export type GatewayErrorCode = 'conflict' | 'project_not_empty';

/** ApiError's code type lists the agent's codes; the gateway's own are widened here, once. */
function gatewayError(status: number, code: GatewayErrorCode, message: string): ApiError {
  return new ApiError(status, code as unknown as ApiErrorCode, message);
}

export function conflict(code: GatewayErrorCode, message: string): ApiError {
  return gatewayError(409, code, message).withHeader('x-should-retry', 'false');
}

/** The agent behind a browser could not be reached or refused the gateway: 502. */
export function browserUnreachable(message: string): ApiError {
  return new ApiError(502, 'browser_unavailable', message);
}

export function orgWideKeyRequired(): ApiError {
  return forbidden('this endpoint needs an organization-wide API key');
}

export function otherProject(what: string): ApiError {
  return forbidden(`this API key is scoped to another project than this ${what}`);
}

export function fromStoreError(error: StoreError): ApiError {
  switch (error.reason) {
    case 'not_found':
      return notFound(error.message);
    case 'name_taken':
    case 'session_taken':
      return conflict('conflict', error.message);
    case 'project_not_empty':
      return conflict('project_not_empty', error.message);
    case 'unknown_project':
      return invalidInput(error.message, [{ code: 'invalid_input', message: 'no live project with this id', field: 'project_id' }]);
  }
}
