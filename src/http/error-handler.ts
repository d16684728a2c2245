// Turns every failure into the one error body (docs/operations.md#threat-model): ApiErrors, coded domain errors,
// fastify's own errors (validation, body parsing, bad URLs, unknown routes, malformed HTTP) and
// anything unexpected (500, logged, never a stack trace on the wire).

import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, DEFAULT_STATUS, internalError, invalidInput, isApiErrorCode, notFound, type ErrorDetail } from './errors.ts';
import { installJsonBodyParser } from './json-body.ts';
import { RouteMethods } from './route-methods.ts';
import { endWithError } from './socket-reply.ts';

/** One problem reported by fastify's schema validator (ajv). */
export interface SchemaProblem {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
}

export function installErrorHandling(app: FastifyInstance): void {
  installJsonBodyParser(app);
  const routes = RouteMethods.record(app);
  app.setErrorHandler((error: unknown, request, reply) => {
    const apiError = toApiError(error);
    if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
    sendError(reply, apiError);
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const allowed = routes.allowed(path);
    if (allowed.length > 0) {
      // The spec's code for a request the server will not take as sent; the status says why.
      const error = new ApiError(405, 'bad_request', `${request.method} is not allowed on ${path} (allowed: ${allowed.join(', ')})`);
      sendError(reply, error.withHeader('Allow', allowed.join(', ')));
      return;
    }
    sendError(reply, notFound(`no endpoint ${request.method} ${path}`));
  });
}

/** Sends the error body of either program's ApiError. */
export function sendError(reply: FastifyReply, error: ApiError<string>): void {
  reply.code(error.status).headers(error.headers).type('application/json; charset=utf-8').send(error.toBody());
}

/** fastify `frameworkErrors` option: bad URL encoding, over-long params. */
export function handleFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  sendError(reply, toApiError(error));
}

/**
 * fastify `clientErrorHandler` option: HTTP that could not even be parsed. There is no request
 * object, so the response is written to the socket by hand, still with the error body.
 */
export function handleClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let message = 'malformed HTTP request';
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    message = 'request timed out';
  } else if (error.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    message = 'request headers too large';
  }
  endWithError(socket, new ApiError(status, 'bad_request', message));
  // The rest of what it sends cannot be parsed either.
  socket.destroy();
}

/**
 * Answers a WebSocket upgrade that failed with `error`: an ApiError or a domain layer's coded
 * error as it says, anything else 500 internal_error, which is a bug: `unexpected` is told (to log
 * and count it), and the client learns nothing of it.
 */
export function refuseUpgrade(socket: Duplex, error: unknown, unexpected: (error: unknown) => void): void {
  const apiError = toApiError(error);
  if (apiError.code === 'internal_error') unexpected(error);
  endWithError(socket, apiError);
}

/**
 * Map any thrown value to an ApiError; unknown failures become 500 internal_error. An ApiError,
 * of either program, passes through as it is.
 */
export function toApiError(error: unknown): ApiError<string> {
  if (error instanceof ApiError) return error as ApiError<string>;
  if (typeof error !== 'object' || error === null) return internalError();
  const e = error as {
    code?: unknown;
    status?: unknown;
    statusCode?: unknown;
    message?: unknown;
    details?: unknown;
    field?: unknown;
    validation?: unknown;
  };
  const message = typeof e.message === 'string' ? e.message : '';

  if (Array.isArray(e.validation)) {
    const details = (e.validation as SchemaProblem[]).map(schemaProblemDetail);
    const first = details[0];
    const summary = details.length === 1 && first ? `${first.field}: ${first.message}` : `${details.length} invalid values`;
    return invalidInput(summary, details);
  }

  // A domain layer's coded error (`{ code: 'invalid_input', status: 400, ... }`).
  if (isApiErrorCode(e.code)) {
    const status = isHttpErrorStatus(e.status) ? e.status : DEFAULT_STATUS[e.code];
    let details: ErrorDetail[] | undefined;
    if (Array.isArray(e.details)) details = e.details as ErrorDetail[];
    else if (typeof e.field === 'string') details = [{ code: e.code, message, field: e.field }];
    return new ApiError(status, e.code, message || e.code, details);
  }

  // fastify's own client errors: body parsing, content type, URL encoding.
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    if (e.statusCode === 404) return notFound(message || 'not found');
    if (e.statusCode === 413) return new ApiError(413, 'payload_too_large', message || 'request body too large');
    if (e.statusCode === 415) return new ApiError(415, 'bad_request', message || 'unsupported content type');
    return new ApiError(400, 'bad_request', message || 'bad request');
  }

  return internalError();
}

function isHttpErrorStatus(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 400 && value <= 599;
}

/** One ajv problem as an error body `details` entry: the JSON path of the value and what is wrong with it. */
export function schemaProblemDetail(problem: SchemaProblem): ErrorDetail & { field: string } {
  let path = jsonPointerToPath(problem.instancePath);
  let message = problem.message ?? 'is invalid';
  const { params } = problem;
  if (problem.keyword === 'required' && typeof params.missingProperty === 'string') {
    path = joinPath(path, params.missingProperty);
    message = 'is required';
  } else if (problem.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
    path = joinPath(path, params.additionalProperty);
    message = 'is not an allowed field';
  } else if (problem.keyword === 'enum' && Array.isArray(params.allowedValues)) {
    message = `must be one of: ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  }
  return { code: 'invalid_input', message, field: path || '$' };
}

/** `/actions/3/click_mouse/x` → `actions[3].click_mouse.x` */
export function jsonPointerToPath(pointer: string): string {
  if (pointer === '') return '';
  let path = '';
  for (const raw of pointer.slice(1).split('/')) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    path = /^(0|[1-9][0-9]*)$/.test(segment) ? `${path}[${segment}]` : joinPath(path, segment);
  }
  return path;
}

function joinPath(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}
