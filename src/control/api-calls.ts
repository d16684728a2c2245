// api_call (docs/events.md "api_call"): one control event per request to a route that acts on
// the browser. The HTTP layer's hook (src/http/api-call-hook.ts) says when one begins and ends;
// this records it.

import type { ControlRecorder } from './control-recorder.ts';

/** What the HTTP layer's api_call hook needs (its `ApiCallRecorder`). */
export interface ApiCalls {
  newRequestId(): string;
  /** An action began: a handle to end it, or undefined when `control` is off. */
  begin(
    targetId: string | undefined,
    requestId: string,
    stepId: string | undefined,
  ): { end(operationId: string, requestId: string, status: number): void } | undefined;
  /** The tab an API action acts on (the active tab), when known. */
  activeTarget(): string | undefined;
}

export function apiCalls(recorder: ControlRecorder, activeTarget: () => string | undefined): ApiCalls {
  return {
    newRequestId: () => recorder.newId('req'),
    activeTarget,
    begin(targetId, requestId, stepId) {
      const start = recorder.beginRequest(requestId, targetId, stepId);
      if (start === undefined) return undefined;
      return {
        end: (operationId, requestId, status) =>
          recorder.apiCall(start, { operation_id: operationId, request_id: requestId, status, outcome: status < 400 ? 'ok' : 'error' }),
      };
    },
  };
}
