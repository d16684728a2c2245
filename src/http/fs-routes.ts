// PUT /browsers/{id}/fs/write_file (docs/write-file.md): the body streams into writeFileAtomic; path and mode
// are checked before anything touches the disk. Every failure carries `x-should-retry: false`, and
// one that leaves part of the body unread closes the connection.

import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { writeFileAtomic } from '../fs/write-file.ts';
import { DEFAULT_MODE, MODE_PATTERN, PATH_PATTERN, parseWriteTarget } from '../fs/write-target.ts';
import { DEFAULT_LIMITS } from '../limits.ts';
import type { BearerAuth } from './auth.ts';
import { browserGuard, browserParamsSchema } from './browser-guard.ts';
import { toApiError } from './error-handler.ts';
import { badRequest } from './errors.ts';
import { noRetryOnFailure } from './no-retry.ts';
import { BROWSER_ERRORS, errorResponses } from './schemas.ts';
import type { HttpDeps } from './http-deps.ts';

interface WriteFileQuery {
  path?: unknown;
  mode?: unknown;
}

const writeFileQuerySchema = {
  type: 'object',
  required: ['path'],
  properties: {
    path: { type: 'string', pattern: PATH_PATTERN, description: 'Absolute destination path.' },
    mode: { type: 'string', pattern: MODE_PATTERN, default: DEFAULT_MODE, description: 'Octal file mode, applied exactly.' },
  },
  additionalProperties: false,
} as const;

export function registerFsRoutes(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth): void {
  app.put(
    '/browsers/:id/fs/write_file',
    {
      onRequest: browserGuard(deps, auth, 'fs'),
      onSend: noRetryOnFailure,
      // path and mode get their own messages below; the schema is the published contract.
      attachValidation: true,
      schema: {
        summary: 'Write a file atomically with an exact mode (scope fs)',
        tags: ['fs'],
        params: browserParamsSchema,
        querystring: writeFileQuerySchema,
        response: {
          201: { description: 'Written', type: 'null' },
          ...errorResponses(400, ...BROWSER_ERRORS, 409, 413),
          403: { description: 'The token lacks the fs scope, the path is outside --fs-allow, or the system denies the write or the mode', $ref: 'ErrorBody#' },
          408: { description: 'The upload sent nothing for --upload-idle-ms and was dropped', $ref: 'ErrorBody#' },
        },
      },
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      try {
        await writeRequestBody(request, deps);
      } catch (err) {
        // What the client has not sent yet is not read: draining would let a client declaring
        // 10 GiB, or one that stalled, hold the connection as long as it likes. The error goes
        // out with `Connection: close` and Node closes the socket after it. A body already
        // received whole leaves the connection usable.
        if (!request.raw.complete) reply.header('connection', 'close');
        throw err;
      }
      return reply.code(201).send();
    },
  );
}

async function writeRequestBody(request: FastifyRequest, deps: HttpDeps): Promise<void> {
  const query = request.query as WriteFileQuery;
  const target = parseWriteTarget(query.path, query.mode ?? DEFAULT_MODE);
  if (request.validationError) throw toApiError(request.validationError);

  // Another content type was parsed by its own parser (text, JSON): not a raw upload.
  if (request.body !== undefined && !(request.body instanceof Readable)) {
    throw badRequest('the body must be sent as application/octet-stream');
  }
  const body = request.body;
  const length = Number(request.headers['content-length']);
  await writeFileAtomic(target, body ? body.iterator({ destroyOnReturn: false }) : emptyBody(), {
    maxBytes: deps.maxUploadBytes ?? DEFAULT_LIMITS.maxUploadBytes,
    declaredLength: Number.isSafeInteger(length) ? length : undefined,
    allow: deps.fsAllow,
    idleTimeoutMs: deps.uploadIdleMs,
  });
}

async function* emptyBody(): AsyncIterable<Uint8Array> {}
