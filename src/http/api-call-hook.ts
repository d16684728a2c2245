// api_call (docs/events.md "api_call"): one control event for every call of this API that acts on
// the browser, with the route's OpenAPI operationId, a request id (also the X-Request-Id response
// header), the status and the duration. Reads of telemetry (stream, history, HAR, metrics, the
// session object) are not actions and are not recorded. Recorded once the caller is authenticated
// and has the route's scope, whatever follows (an unknown session, malformed JSON, a body the
// schema refuses: the status says which): a client's author debugging it sees every call it made.
// A call refused by authentication is no caller's and writes nothing to the log.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BearerAuth } from './auth.ts';
import type { HttpDeps } from './http-deps.ts';

/** The routes that act on the browser → their OpenAPI operationId. */
export const API_CALL_OPERATIONS: Readonly<Record<string, string>> = {
  'POST /browsers/:id/computer/batch': 'computerBatch',
  'PUT /browsers/:id/fs/write_file': 'writeFile',
  'PATCH /browsers/:id': 'updateBrowser',
  'DELETE /browsers/:id': 'deleteBrowser',
  'POST /browsers/:id/viewer/sessions': 'createViewerSession',
  'POST /browsers/:id/replays': 'startReplay',
  'POST /browsers/:id/replays/:replay_id/stop': 'stopReplay',
};

export const REQUEST_ID_HEADER = 'X-Request-Id';

const calls = new WeakMap<FastifyRequest, { requestId: string; end?: (operationId: string, requestId: string, status: number) => void }>();

/** The api_call request id of a request (for the computer batch's actions). */
export function apiCallRequestId(request: FastifyRequest): string | undefined {
  return calls.get(request)?.requestId;
}

export function operationIdOf(method: string, url: string | undefined): string | undefined {
  return url === undefined ? undefined : API_CALL_OPERATIONS[`${method} ${url}`];
}

/**
 * The route's onRequest step that begins a call's api_call, placed right after authentication
 * (browser-guard.ts): everything later (the session id, the body, the handler) ends it with its
 * status. Nothing for a route that does not act.
 */
export function beginApiCall(deps: HttpDeps, auth: BearerAuth): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  return async (request, reply) => {
    const recorder = deps.apiCalls;
    const operationId = operationIdOf(request.method, request.routeOptions.url);
    if (recorder === undefined || operationId === undefined || calls.has(request)) return;
    const requestId = recorder.newRequestId();
    reply.raw.setHeader(REQUEST_ID_HEADER, requestId);
    const target = operationId === 'computerBatch' ? recorder.activeTarget() : undefined;
    // The step its caller marked last (docs/events.md "Steps").
    const call = recorder.begin(target, requestId, deps.steps?.currentOf(auth.callerOf(request)));
    calls.set(request, { requestId, end: call && ((operation, id, status) => call.end(operation, id, status)) });
  };
}

/** Ends each begun api_call with the response's status. */
export function installApiCalls(app: FastifyInstance, deps: HttpDeps): void {
  if (!deps.apiCalls) return;
  app.addHook('onResponse', async (request, reply) => {
    const call = calls.get(request);
    if (call?.end === undefined) return;
    calls.delete(request);
    call.end(operationIdOf(request.method, request.routeOptions.url)!, call.requestId, reply.statusCode);
  });
}
