// The API error model (docs/operations.md#threat-model): every failure is an ApiError with a stable code and an HTTP
// status, rendered as the one JSON error body. Domain layers throw their own coded errors
// (`{ code, status }`); error-handler.ts maps those and framework errors here.
//
// ApiError, the error body and this registry of codes are shared by both programs (one code per
// situation: a foreign Host is misdirected_request on both); the gateway adds the codes only it
// answers with in gateway/src/http/errors.ts.

/** The codes both programs answer with (also the enum of the agent's OpenAPI ErrorBody schema). */
export const API_ERROR_CODES = [
  'bad_request',
  'invalid_input',
  'unauthorized',
  'forbidden',
  'not_found',
  'payload_too_large',
  'misdirected_request',
  'action_failed',
  'rate_limited',
  'browser_unavailable',
  'internal_error',
  // Replays (docs/replay.md "Errors").
  'replay_in_progress',
  'replay_not_recording',
  'replay_not_ready',
  'replay_unavailable',
  'range_not_satisfiable',
] as const;
export type ApiErrorCode = (typeof API_ERROR_CODES)[number];

/** The usual status of each code, for coded errors that do not carry one. */
export const DEFAULT_STATUS: Record<ApiErrorCode, number> = {
  bad_request: 400,
  invalid_input: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  payload_too_large: 413,
  misdirected_request: 421,
  action_failed: 422,
  rate_limited: 429,
  browser_unavailable: 503,
  internal_error: 500,
  replay_in_progress: 409,
  replay_not_recording: 409,
  replay_not_ready: 409,
  replay_unavailable: 503,
  range_not_satisfiable: 416,
};

export interface ErrorDetail {
  code: string;
  message: string;
  /** JSON path of the offending input, e.g. `actions[3].click_mouse.x`. */
  field?: string;
  /** Position in a list input (batch actions). */
  index?: number;
}

export interface InnerError {
  code: string;
  message: string;
}

export interface ErrorBody<Code extends string = ApiErrorCode> {
  code: Code;
  message: string;
  details?: ErrorDetail[];
  inner_error?: InnerError;
}

/** An error answer with a code of `Code`, the closed list of the program that raises it. */
export class ApiError<Code extends string = ApiErrorCode> extends Error {
  override name = 'ApiError';
  /** Extra response headers (`WWW-Authenticate`, `x-should-retry`, ...). */
  readonly headers: Record<string, string> = {};

  constructor(
    readonly status: number,
    readonly code: Code,
    message: string,
    readonly details?: ErrorDetail[],
    readonly innerError?: InnerError,
  ) {
    super(message);
  }

  /** Adds a response header; returns this for chaining. */
  withHeader(name: string, value: string): this {
    this.headers[name] = value;
    return this;
  }

  /** The error body, absent fields omitted. */
  toBody(): ErrorBody<Code> {
    const body: ErrorBody<Code> = { code: this.code, message: this.message };
    if (this.details !== undefined && this.details.length > 0) body.details = this.details;
    if (this.innerError !== undefined) body.inner_error = this.innerError;
    return body;
  }
}

export function badRequest(message: string, details?: ErrorDetail[]): ApiError {
  return new ApiError(400, 'bad_request', message, details);
}

export function invalidInput(message: string, details?: ErrorDetail[]): ApiError {
  return new ApiError(400, 'invalid_input', message, details);
}

export function unauthorized(message = 'missing or invalid bearer token'): ApiError {
  return new ApiError(401, 'unauthorized', message).withHeader('WWW-Authenticate', 'Bearer');
}

export function forbidden(message = 'the token lacks the scope this endpoint requires'): ApiError {
  return new ApiError(403, 'forbidden', message);
}

export function notFound(message = 'not found'): ApiError {
  return new ApiError(404, 'not_found', message);
}

export function payloadTooLarge(message = 'request body too large'): ApiError {
  return new ApiError(413, 'payload_too_large', message);
}

/** A Host header (or none, on HTTP/1.0) this server does not answer to: DNS rebinding (host-policy.ts). */
export function misdirectedRequest(): ApiError {
  return new ApiError(421, 'misdirected_request', 'the Host header names a host this server does not answer to (see --allowed-hosts)');
}

export function actionFailed(message: string, details?: ErrorDetail[], innerError?: InnerError): ApiError {
  return new ApiError(422, 'action_failed', message, details, innerError);
}

/** Too many requests of one caller (steps, docs/events.md "Steps"): retry after `retryAfterS` seconds. */
export function rateLimited(message: string, retryAfterS = 1): ApiError {
  return new ApiError(429, 'rate_limited', message).withHeader('Retry-After', String(retryAfterS));
}

export function browserUnavailable(message = 'the browser is not available'): ApiError {
  return new ApiError(503, 'browser_unavailable', message);
}

export function internalError(message = 'internal error'): ApiError {
  return new ApiError(500, 'internal_error', message);
}

export function isApiErrorCode(value: unknown): value is ApiErrorCode {
  return typeof value === 'string' && (API_ERROR_CODES as readonly string[]).includes(value);
}
