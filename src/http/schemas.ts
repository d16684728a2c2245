// JSON schemas shared by the routes: the error body (docs/operations.md#threat-model) and the response sets that the
// OpenAPI document (GET /openapi.json) is generated from. Response schemas also drive fastify's
// serializer, so each lists every field the body can carry.

import { RESOURCE_TYPES } from '../telemetry/body-policy.ts';
import { API_ERROR_CODES } from './errors.ts';
import { CONFIG_CATEGORIES, SILENT_CATEGORIES } from '../telemetry/telemetry-config.ts';

export const errorBodySchema = {
  $id: 'ErrorBody',
  type: 'object',
  required: ['code', 'message'],
  properties: {
    code: { type: 'string', enum: API_ERROR_CODES },
    message: { type: 'string' },
    details: {
      type: 'array',
      items: {
        type: 'object',
        required: ['code', 'message'],
        properties: {
          code: { type: 'string' },
          message: { type: 'string' },
          field: { type: 'string', description: 'JSON path of the offending input, e.g. actions[3].click_mouse.x' },
          index: { type: 'integer', description: 'Position in a list input (batch actions)' },
        },
      },
    },
    inner_error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' } },
    },
  },
} as const;

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Malformed request (bad_request) or invalid values (invalid_input)',
  401: 'Missing, malformed or unknown bearer token',
  403: 'The token lacks the scope of this endpoint',
  404: 'Unknown or terminated session',
  409: 'A conflict with the current state (write_file: a directory/file mismatch; replays: docs/replay.md "Errors")',
  413: 'The body is over the limit',
  416: 'The Range asked for lies outside the file (range_not_satisfiable)',
  422: 'An action failed (action_failed)',
  429: 'Too many requests of this caller (rate_limited); Retry-After says when to try again',
  500: 'Internal error',
  503: 'The browser or the session is not available',
};

/** Response schemas for the given error statuses, each the error body. */
export function errorResponses(...statuses: number[]): Record<number, unknown> {
  const out: Record<number, unknown> = {};
  for (const status of statuses) out[status] = { description: ERROR_DESCRIPTIONS[status] ?? 'Error', $ref: 'ErrorBody#' };
  return out;
}

/** The errors every authenticated `/browsers/{id}` route can answer. */
export const BROWSER_ERRORS = [401, 403, 404, 500] as const;

const categoryConfig = { type: 'object', required: ['enabled'], properties: { enabled: { type: 'boolean' } } } as const;

/** `control` (docs/events.md "Control events"). */
const controlCategoryConfig = {
  type: 'object',
  required: ['enabled', 'include_urls'],
  properties: {
    enabled: { type: 'boolean' },
    include_urls: { type: 'boolean', description: "true: cdp_command carries a navigation's URL (default false)" },
  },
} as const;

/** `network.bodies` (docs/network.md "Response bodies"); every field in GET, any subset in PATCH. */
export const bodyPolicyProperties = {
  enabled: { type: 'boolean', description: 'false: no response body is fetched' },
  resource_types: {
    type: 'array',
    maxItems: 64,
    items: { type: 'string', enum: [...RESOURCE_TYPES] },
    description: 'CDP resource types whose bodies are fetched (default Document, XHR, Fetch, EventSource, Other)',
  },
  mime_types: {
    type: 'array',
    maxItems: 64,
    items: { type: 'string' },
    description: 'MIME allow-list: type/subtype, type/* or a +suffix such as +json (default: the textual types)',
  },
  max_bytes: {
    type: 'integer',
    minimum: 0,
    maximum: 2 ** 31 - 1,
    description: 'UTF-8 bytes of body kept; longer bodies are cut and marked truncated (start value --max-body-bytes)',
  },
} as const;

const SILENT = new Set<string>(SILENT_CATEGORIES);

function categoryDescription(category: string): string | undefined {
  if (SILENT.has(category)) return 'Accepted and kept for the official client; this agent produces no events of this category';
  if (category === 'screenshot') return 'monitor_screenshot (start value: --screenshots)';
  return undefined;
}

export const telemetryConfigSchema = {
  type: 'object',
  required: ['enabled', 'browser'],
  properties: {
    enabled: { type: 'boolean' },
    browser: {
      type: 'object',
      required: [...CONFIG_CATEGORIES],
      properties: Object.fromEntries(
        CONFIG_CATEGORIES.map((c): [string, object] => {
          if (c === 'network') {
            const bodies = { type: 'object', required: Object.keys(bodyPolicyProperties), properties: bodyPolicyProperties };
            return [c, { type: 'object', required: ['enabled', 'bodies'], properties: { enabled: { type: 'boolean' }, bodies } }];
          }
          if (c === 'control') return [c, controlCategoryConfig];
          const description = categoryDescription(c);
          return [c, description === undefined ? categoryConfig : { ...categoryConfig, description }];
        }),
      ),
    },
  },
} as const;

export const browserObjectSchema = {
  description: 'The browser session',
  type: 'object',
  required: ['session_id', 'created_at', 'telemetry', 'cdp_connected', 'seq'],
  properties: {
    session_id: { type: 'string' },
    created_at: { type: 'string', format: 'date-time' },
    telemetry: telemetryConfigSchema,
    cdp_connected: { type: 'boolean' },
    seq: { type: 'integer', minimum: 0, description: 'Latest seq admitted to the event log' },
    cdp_ws_url: { type: 'string', description: 'WebSocket URL of the CDP endpoint for automation clients (scope cdp)' },
  },
} as const;

export const noContent = { description: 'Done', type: 'null' } as const;
