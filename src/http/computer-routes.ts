// POST /browsers/{id}/computer/batch (docs/computer-batch.md). The whole body is checked before anything runs:
// the JSON schema (ajv) and the cross-field rules together, one `details` entry per problem. A
// failed batch is 422 action_failed or 500 with the failed action's index; every failure carries
// `x-should-retry: false`, since a retry would replay the actions that already ran.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkBatchRules } from '../computer/batch-rules.ts';
import { batchBodySchema, type BatchBody } from '../computer/batch-schema.ts';
import { BatchFailure } from '../computer/executor.ts';
import type { BearerAuth } from './auth.ts';
import { browserGuard, browserParamsSchema } from './browser-guard.ts';
import { jsonPointerToPath, schemaProblemDetail, type SchemaProblem } from './error-handler.ts';
import { ApiError, actionFailed, browserUnavailable, invalidInput, type ErrorDetail } from './errors.ts';
import { noRetryOnFailure } from './no-retry.ts';
import { BROWSER_ERRORS, errorResponses, noContent } from './schemas.ts';
import type { HttpDeps } from './http-deps.ts';
import { apiCallRequestId } from './api-call-hook.ts';

/** Response header of a failed batch: how many actions ran before the failure. */
export const COMPLETED_HEADER = 'x-completed-actions';

export function registerComputerRoutes(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth): void {
  app.post(
    '/browsers/:id/computer/batch',
    {
      onRequest: browserGuard(deps, auth, 'computer'),
      onSend: noRetryOnFailure,
      // The schema's problems are merged with the cross-field rules' before answering.
      attachValidation: true,
      schema: {
        summary: 'Run a batch of computer actions in order on the active tab (scope computer)',
        tags: ['computer'],
        params: browserParamsSchema,
        body: batchBodySchema,
        response: { 204: noContent, ...errorResponses(400, ...BROWSER_ERRORS, 422, 503) },
      },
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const details = batchProblems(request);
      if (details.length > 0) {
        const first = details[0]!;
        throw invalidInput(details.length === 1 ? `${first.field}: ${first.message}` : `${details.length} problems in the batch`, details);
      }
      if (!deps.computer) throw browserUnavailable('computer actions are not available');

      // A client that goes away stops the batch before its next action.
      const abort = new AbortController();
      reply.raw.on('close', () => {
        if (!reply.raw.writableEnded) abort.abort();
      });
      try {
        await deps.computer.run((request.body as BatchBody).actions, abort.signal, apiCallRequestId(request));
      } catch (err) {
        throw err instanceof BatchFailure ? batchFailureError(err) : err;
      }
      return reply.code(204).send();
    },
  );
}

function batchFailureError(failure: BatchFailure): ApiError {
  const detail: ErrorDetail = { index: failure.index, code: failure.status === 500 ? 'internal_error' : 'action_failed', message: failure.message };
  const inner = { code: failure.reason, message: failure.message };
  const error = failure.status === 500 ? new ApiError(500, 'internal_error', failure.message, [detail], inner) : actionFailed(failure.message, [detail], inner);
  return error.withHeader(COMPLETED_HEADER, String(failure.completed));
}

/** Schema problems (minus ajv's bookkeeping) followed by the cross-field rules' problems. */
function batchProblems(request: FastifyRequest): ErrorDetail[] {
  const problems = ((request.validationError as { validation?: SchemaProblem[] } | undefined)?.validation ?? []).filter(
    // `if` reports only that a `then` failed: the `then` problems themselves are reported too.
    (p) => p.keyword !== 'if',
  );
  // A payload object of another kind is reported once, not again for each field inside it.
  const forbidden = problems.filter((p) => p.keyword === 'false schema').map((p) => p.instancePath);
  const details: ErrorDetail[] = [];
  const seen = new Set<string>();
  const add = (field: string, message: string) => {
    const key = `${field}\0${message}`;
    if (seen.has(key)) return;
    seen.add(key);
    details.push({ code: 'invalid_input', message, field });
  };
  for (const problem of problems) {
    if (forbidden.some((path) => problem.instancePath.startsWith(`${path}/`))) continue;
    // `{"type": "teleport", "teleport": {...}}`: the unknown type is the problem, not its payload.
    if (problem.keyword === 'additionalProperties' && problem.params.additionalProperty === actionAt(request.body, problem.instancePath)?.type) continue;
    const [field, message] = describe(problem, request.body);
    add(field, message);
  }
  const reported = details.map((d) => d.field!);
  for (const rule of checkBatchRules(request.body)) {
    // A value the schema already rejected is not judged again.
    if (reported.some((field) => rule.field === field || rule.field.startsWith(`${field}.`) || rule.field.startsWith(`${field}[`))) continue;
    add(rule.field, rule.message);
  }
  return details;
}

function describe(problem: SchemaProblem, body: unknown): [field: string, message: string] {
  if (problem.keyword === 'false schema') {
    return [jsonPointerToPath(problem.instancePath), `is not allowed in an action of type ${JSON.stringify(actionAt(body, problem.instancePath)?.type)}`];
  }
  const { field, message } = schemaProblemDetail(problem);
  return [field, message];
}

/** The action a JSON pointer points into (`/actions/3/...`), if any. */
function actionAt(body: unknown, pointer: string): { type?: unknown } | undefined {
  const index = /^\/actions\/(\d+)(\/|$)/.exec(pointer)?.[1];
  if (index === undefined) return undefined;
  const action = (body as { actions?: unknown[] } | undefined)?.actions?.[Number(index)];
  return typeof action === 'object' && action !== null ? action : undefined;
}
