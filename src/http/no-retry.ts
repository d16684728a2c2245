// Non-idempotent operations (batch, write_file, delete) mark every failure with
// `x-should-retry: false` (docs/operations.md#threat-model): the official SDK retries 5xx and 409 by default and would
// replay a half-executed operation.

import type { FastifyReply, FastifyRequest } from 'fastify';

export async function noRetryOnFailure(_request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  if (reply.statusCode >= 400) reply.header('x-should-retry', 'false');
  return payload;
}
