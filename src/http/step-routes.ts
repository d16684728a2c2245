// POST /browsers/{id}/telemetry/steps (docs/events.md "Steps"): an API caller names a step of its
// automation; its following actions carry the step's id. The body is checked by the steps module
// (the same rules and messages as the CDP method and the MCP tool); the schema documents it.

import type { FastifyInstance } from 'fastify';
import { STEP_ID_PATTERN, STEP_LIMITS, StepError } from '../control/steps.ts';
import type { StepVia } from '../../injected/schema.ts';
import type { BearerAuth } from './auth.ts';
import { browserGuard, browserParamsSchema } from './browser-guard.ts';
import { ApiError, browserUnavailable, rateLimited, unauthorized, type ApiErrorCode } from './errors.ts';
import type { HttpDeps } from './http-deps.ts';
import { BROWSER_ERRORS, errorResponses } from './schemas.ts';
import { STEP_VIA_HEADER, VIA_GATEWAY_HEADER } from './via-gateway.ts';

/** Room for a step's largest fields written with JSON escapes (the limits count the data itself). */
const BODY_LIMIT = 128 * 1024;

const stepBodySchema = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: {
    name: {
      type: 'string',
      minLength: 1,
      maxLength: STEP_LIMITS.maxNameChars,
      description: `What the automation is doing now, e.g. "log in" (at most ${STEP_LIMITS.maxNameChars} characters)`,
    },
    data: {
      type: 'object',
      additionalProperties: true,
      description: `Anything the caller wants kept with the step (a JSON object of at most ${STEP_LIMITS.maxDataBytes} bytes)`,
    },
    parent_id: { type: 'string', pattern: STEP_ID_PATTERN.source, description: 'The step_id of a step marked earlier that this one belongs to' },
  },
} as const;

const stepAnswerSchema = {
  description: "The step's id: the caller's following actions, and what they cause, carry it as step_id",
  type: 'object',
  required: ['step_id', 'recorded'],
  properties: {
    step_id: { type: 'string' },
    recorded: { type: 'boolean', description: 'false when the control category is off: nothing was written to the record' },
  },
} as const;

export function registerStepRoutes(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth): void {
  app.post(
    '/browsers/:id/telemetry/steps',
    {
      // A step writes to the record and drives nothing: the scope that changes the telemetry.
      onRequest: browserGuard(deps, auth, 'telemetry:write'),
      bodyLimit: BODY_LIMIT,
      // The schema documents the body; the steps module alone checks it (ajv would coerce a
      // number into a name), as it does for the CDP method and the MCP tool.
      validatorCompiler: () => () => true,
      schema: {
        summary: "Mark a step of the caller's automation (scope telemetry:write)",
        description: `Records a step event (category control). Until the same caller marks its next step, its actions (computer batches, other API calls) carry the step's step_id, and so do their effects: GET …/telemetry/events?step_id=<id> reads them. At most ${STEP_LIMITS.burst} steps at once and ${STEP_LIMITS.perSecond} per second per caller (429 rate_limited).`,
        tags: ['telemetry'],
        params: browserParamsSchema,
        body: stepBodySchema,
        response: { 200: stepAnswerSchema, ...errorResponses(400, ...BROWSER_ERRORS, 413, 429, 503) },
      },
    },
    async (request) => {
      if (!deps.steps) throw browserUnavailable('steps are not available');
      const caller = auth.callerOf(request);
      // Only a bearer token gets past the guard for this scope; the check keeps the type honest.
      if (caller === undefined) throw unauthorized();
      const via: StepVia = request.headers[VIA_GATEWAY_HEADER] !== undefined && request.headers[STEP_VIA_HEADER] === 'mcp' ? 'mcp' : 'http';
      try {
        return deps.steps.add(request.body ?? {}, { id: caller, via });
      } catch (err) {
        throw err instanceof StepError ? stepApiError(err) : err;
      }
    },
  );
}

/** A refused step as the error body: its code and status, the field named in `details`. */
export function stepApiError(error: StepError): ApiError {
  if (error.code === 'rate_limited') return rateLimited(error.message);
  const code: ApiErrorCode = error.code;
  return new ApiError(error.status, code, error.message, error.field === undefined ? undefined : [{ code, message: error.message, field: error.field }]);
}
