// api_call (docs/events.md "api_call"): one control event for every call of this API that acts on
// the browser, with the route's OpenAPI operationId, a request id (also the X-Request-Id response
// header), the status and the duration. Reads of telemetry (stream, history, HAR, metrics, the
// session object) are not actions and are not recorded. Recorded from preHandler on: a call that
// failed authentication never reached the browser and writes nothing to the log.

import type { FastifyInstance, FastifyRequest } from 'fastify';
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

export function installApiCalls(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth): void {
  const recorder = deps.apiCalls;
  if (!recorder) return;
  app.addHook('preHandler', async (request, reply) => {
    const operationId = operationIdOf(request.method, request.routeOptions.url);
    if (operationId === undefined) return;
    const requestId = recorder.newRequestId();
    reply.raw.setHeader(REQUEST_ID_HEADER, requestId);
    const target = operationId === 'computerBatch' ? recorder.activeTarget() : undefined;
    // The step its caller marked last (docs/events.md "Steps").
    const call = recorder.begin(target, requestId, deps.steps?.currentOf(auth.callerOf(request)));
    calls.set(request, { requestId, end: call && ((operation, id, status) => call.end(operation, id, status)) });
  });
  app.addHook('onResponse', async (request, reply) => {
    const call = calls.get(request);
    if (call?.end === undefined) return;
    calls.delete(request);
    call.end(operationIdOf(request.method, request.routeOptions.url)!, call.requestId, reply.statusCode);
  });
}
