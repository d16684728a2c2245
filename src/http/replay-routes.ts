// Replays (docs/replay.md "API"), in the official client's shapes (`@onkernel/sdk` 0.84
// `browsers.replays`), scope `replay`:
//
// - POST /browsers/{id}/replays {framerate?, max_duration_in_seconds?, record_audio?}: start;
// - GET  /browsers/{id}/replays: every replay of the session;
// - POST /browsers/{id}/replays/{replay_id}/stop: stop, answered once the file is final;
// - GET  /browsers/{id}/replays/{replay_id}: the video, with Content-Length and HTTP Range (a
//   <video> element seeks in it); a viewer cookie minted by a caller who may read replays opens it.
//
// Every refusal is the JSON error body with a code of its own (docs/replay.md "Errors").

import { createReadStream } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ReplayRecord } from '../replay/catalogue.ts';
import { DEFAULT_FRAMERATE, MAX_DURATION_SECONDS, MAX_FRAMERATE, MIN_FRAMERATE, ReplayError, type StartParams } from '../replay/replay-service.ts';
import type { BearerAuth } from './auth.ts';
import { browserGuard, type BrowserParams } from './browser-guard.ts';
import { ApiError, invalidInput, notFound, type ErrorDetail } from './errors.ts';
import type { HttpDeps } from './http-deps.ts';
import { noRetryOnFailure } from './no-retry.ts';
import { BROWSER_ERRORS, errorResponses } from './schemas.ts';
import { VIA_GATEWAY_HEADER } from './via-gateway.ts';
import type { ViewerAuth } from './viewer-auth.ts';
import { originOf, viewerLinkUrl } from './viewer-routes.ts';

interface ReplayParams extends BrowserParams {
  replay_id: string;
}

/** The replay object: the official client's fields, then this agent's (docs/replay.md "API"). */
export interface ReplayObject {
  replay_id: string;
  /** ISO 8601 UTC; video time 0. */
  started_at: string;
  /** ISO 8601 UTC; null while recording. */
  finished_at: string | null;
  /** A one-time link that opens the viewer at this replay; present when the caller may also read the telemetry. */
  replay_view_url?: string;
  state: ReplayRecord['state'];
  stop_reason?: string;
  mime_type: string;
  framerate: number;
  max_duration_in_seconds?: number;
  size_bytes?: number;
}

const replayParamsSchema = {
  type: 'object',
  properties: { id: { type: 'string' }, replay_id: { type: 'string' } },
  required: ['id', 'replay_id'],
} as const;

const browserParams = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } as const;

const replayObjectSchema = {
  type: 'object',
  required: ['replay_id', 'started_at', 'finished_at', 'state', 'mime_type', 'framerate'],
  properties: {
    replay_id: { type: 'string' },
    started_at: { type: 'string', format: 'date-time', description: 'Video time 0' },
    finished_at: { type: ['string', 'null'], format: 'date-time', description: 'The end of the video; null while recording' },
    replay_view_url: { type: 'string', description: 'One-time link (60 s) to the viewer at this replay; only for a caller that may also read the telemetry' },
    state: { type: 'string', enum: ['recording', 'finalizing', 'finished'] },
    stop_reason: {
      type: 'string',
      enum: ['requested', 'max_duration', 'max_size', 'session_deleted', 'shutdown', 'encoder_failed', 'interrupted'],
    },
    mime_type: { type: 'string', enum: ['video/mp4', 'video/webm'] },
    framerate: { type: 'integer' },
    max_duration_in_seconds: { type: 'integer' },
    size_bytes: { type: 'integer', description: 'Once finished' },
  },
} as const;

const startBodySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    framerate: {
      type: 'integer',
      minimum: MIN_FRAMERATE,
      maximum: MAX_FRAMERATE,
      description: `Most frames per second, default ${DEFAULT_FRAMERATE} (frames come only when the page paints)`,
    },
    max_duration_in_seconds: { type: 'integer', minimum: 1, maximum: MAX_DURATION_SECONDS, description: 'The recording ends by itself after this long' },
    record_audio: { type: 'boolean', description: 'Only false: a headless browser has no audio to record' },
  },
} as const;

/** Validates the start body; one detail per problem (400 invalid_input). */
export function parseReplayStart(body: unknown): StartParams {
  if (body === undefined || body === null) return { framerate: DEFAULT_FRAMERATE };
  if (typeof body !== 'object' || Array.isArray(body))
    throw invalidInput('the body must be a JSON object', [{ code: 'invalid_input', message: 'must be an object', field: '$' }]);
  const fields = body as Record<string, unknown>;
  const details: ErrorDetail[] = [];
  for (const key of Object.keys(fields)) {
    if (!['framerate', 'max_duration_in_seconds', 'record_audio'].includes(key))
      details.push({ code: 'invalid_input', message: 'is not an allowed field', field: key });
  }
  const integerIn = (field: string, min: number, max: number): number | undefined => {
    const value = fields[field];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      details.push({ code: 'invalid_input', message: `must be an integer from ${min} to ${max}`, field });
      return undefined;
    }
    return value;
  };
  const framerate = integerIn('framerate', MIN_FRAMERATE, MAX_FRAMERATE);
  const maxDuration = integerIn('max_duration_in_seconds', 1, MAX_DURATION_SECONDS);
  const audio = fields.record_audio;
  if (audio !== undefined && typeof audio !== 'boolean') details.push({ code: 'invalid_input', message: 'must be a boolean', field: 'record_audio' });
  else if (audio === true)
    details.push({
      code: 'invalid_input',
      message: 'this browser has no audio to record (headless, no audio device): send false or leave it out',
      field: 'record_audio',
    });
  if (details.length > 0)
    throw invalidInput(details.length === 1 ? `${details[0]!.field}: ${details[0]!.message}` : `${details.length} invalid values`, details);
  return { framerate: framerate ?? DEFAULT_FRAMERATE, ...(maxDuration === undefined ? {} : { maxDurationSeconds: maxDuration }) };
}

/** The HTTP answer of a refused replay operation. */
export function replayApiError(error: unknown): unknown {
  if (!(error instanceof ReplayError)) return error;
  switch (error.code) {
    case 'not_found':
      return notFound(error.message);
    case 'replay_not_ready':
      if (error.retryAfterSeconds !== undefined) {
        return new ApiError(409, error.code, error.message).withHeader('retry-after', String(error.retryAfterSeconds)).withHeader('x-should-retry', 'true');
      }
      return new ApiError(409, error.code, error.message).withHeader('x-should-retry', 'false');
    case 'replay_in_progress':
    case 'replay_not_recording':
      return new ApiError(409, error.code, error.message).withHeader('x-should-retry', 'false');
    case 'replay_unavailable':
      return new ApiError(503, error.code, error.message).withHeader('x-should-retry', 'false');
  }
}

export function registerReplayRoutes(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth, viewerAuth: ViewerAuth): void {
  const replays = deps.replays;
  if (!replays) return;
  const guard = browserGuard(deps, auth, 'replay');

  /** The replay object for this caller: a viewer link only for a direct caller that may read the telemetry too. */
  const objectOf = (request: FastifyRequest, record: ReplayRecord): ReplayObject => {
    const direct = request.headers[VIA_GATEWAY_HEADER] === undefined;
    const mayView = direct && auth.allows(request.headers.authorization, 'telemetry:read');
    const link = mayView
      ? viewerLinkUrl(originOf(request), deps.sessionId, viewerAuth.mintTicket(deps.sessionId, undefined, ['replay']).ticket, record.replay_id)
      : undefined;
    return replayObject(record, link);
  };

  app.post(
    '/browsers/:id/replays',
    {
      onRequest: guard,
      onSend: noRetryOnFailure,
      // The schema documents the body; parseReplayStart alone checks it (ajv would turn "10" into 10).
      validatorCompiler: () => () => true,
      schema: {
        summary: 'Start recording the screen of the tab in front (scope replay)',
        tags: ['replays'],
        params: browserParams,
        body: startBodySchema,
        response: { 201: replayObjectSchema, ...errorResponses(400, ...BROWSER_ERRORS, 409, 503) },
      },
    },
    async (request, reply) => {
      const params = parseReplayStart(request.body);
      const record = await replays.start(params).catch((err: unknown) => {
        throw replayApiError(err);
      });
      return reply.code(201).send(objectOf(request, record));
    },
  );

  app.get(
    '/browsers/:id/replays',
    {
      onRequest: guard,
      schema: {
        summary: 'Every replay of the session, oldest first (scope replay)',
        tags: ['replays'],
        params: browserParams,
        response: { 200: { type: 'array', items: replayObjectSchema }, ...errorResponses(...BROWSER_ERRORS) },
      },
    },
    async (request) => replays.list().map((record) => objectOf(request, record)),
  );

  app.post(
    '/browsers/:id/replays/:replay_id/stop',
    {
      onRequest: guard,
      onSend: noRetryOnFailure,
      schema: {
        summary: 'Stop a recording; answered once its file is final (scope replay)',
        tags: ['replays'],
        params: replayParamsSchema,
        response: { 200: replayObjectSchema, ...errorResponses(...BROWSER_ERRORS, 409) },
      },
    },
    async (request) => {
      const { replay_id: replayId } = request.params as ReplayParams;
      const record = await replays.stop(replayId).catch((err: unknown) => {
        throw replayApiError(err);
      });
      return objectOf(request, record);
    },
  );

  app.get(
    '/browsers/:id/replays/:replay_id',
    {
      onRequest: guard,
      schema: {
        summary: 'Download the video (MP4/H.264, or WebM/VP8 where H.264 is not available); HTTP Range supported (scope replay)',
        tags: ['replays'],
        params: replayParamsSchema,
        response: {
          200: {
            description: 'The whole video',
            content: { 'video/mp4': { schema: { type: 'string', format: 'binary' } }, 'video/webm': { schema: { type: 'string', format: 'binary' } } },
          },
          206: {
            description: 'The byte range asked for (Content-Range)',
            content: { 'video/mp4': { schema: { type: 'string', format: 'binary' } }, 'video/webm': { schema: { type: 'string', format: 'binary' } } },
          },
          ...errorResponses(...BROWSER_ERRORS, 409, 416),
        },
      },
    },
    async (request, reply) => {
      const { replay_id: replayId } = request.params as ReplayParams;
      const file = await replays.file(replayId).catch((err: unknown) => {
        throw replayApiError(err);
      });
      return sendVideo(request, reply, file.path, file.size, file.mimeType, `"${replayId}-${file.size}"`, `${replayId}.${file.record.extension}`);
    },
  );
}

export function replayObject(record: ReplayRecord, viewUrl: string | undefined): ReplayObject {
  return {
    replay_id: record.replay_id,
    started_at: new Date(record.started_at_ms).toISOString(),
    finished_at: record.state === 'recording' || record.finished_at_ms === undefined ? null : new Date(record.finished_at_ms).toISOString(),
    ...(viewUrl === undefined ? {} : { replay_view_url: viewUrl }),
    state: record.state,
    ...(record.stop_reason === undefined ? {} : { stop_reason: record.stop_reason }),
    mime_type: record.mime_type,
    framerate: record.framerate,
    ...(record.max_duration_in_seconds === undefined ? {} : { max_duration_in_seconds: record.max_duration_in_seconds }),
    ...(record.size_bytes === undefined ? {} : { size_bytes: record.size_bytes }),
  };
}

/**
 * A file with HTTP Range (RFC 9110 §14): one range `bytes=a-b`, `a-` or `-n` is 206 with
 * Content-Range; a range past the end is 416 (the error body, `Content-Range: bytes *\/size`);
 * several ranges, a malformed header, or an If-Range that is not this file's ETag get the whole
 * file (which the RFC allows).
 */
export function sendVideo(
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  size: number,
  type: string,
  etag: string,
  filename: string,
): FastifyReply {
  reply
    .header('Accept-Ranges', 'bytes')
    .header('ETag', etag)
    .header('Cache-Control', 'private, no-cache')
    .header('Content-Disposition', `inline; filename="${filename}"`)
    .type(type);
  const ifRange = request.headers['if-range'];
  const range = ifRange === undefined || ifRange === etag ? parseRange(request.headers.range, size) : undefined;
  if (range === 'unsatisfiable') {
    throw new ApiError(416, 'range_not_satisfiable', `the range ${request.headers.range} lies outside the file (${size} bytes)`).withHeader(
      'Content-Range',
      `bytes */${size}`,
    );
  }
  const [start, end] = range ?? [0, size - 1];
  const length = size === 0 ? 0 : end - start + 1;
  reply.header('Content-Length', String(length));
  if (range) reply.code(206).header('Content-Range', `bytes ${start}-${end}/${size}`);
  if (request.method === 'HEAD') {
    // The headers as a GET would have them; fastify would replace Content-Length for an empty body.
    reply.hijack();
    reply.raw.writeHead(reply.statusCode, reply.getHeaders() as Record<string, string>);
    reply.raw.end();
    return reply;
  }
  if (length === 0) return reply.send();
  return reply.send(createReadStream(path, { start, end }));
}

/** [start, end] inclusive; undefined: serve the whole file; 'unsatisfiable': 416. */
export function parseRange(header: string | undefined, size: number): [number, number] | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return [Math.max(0, size - suffix), size - 1];
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (!Number.isSafeInteger(start) || start >= size) return 'unsatisfiable';
  if (end < start) return undefined;
  return [start, end];
}
