// Request logging: one JSON line per request, and never a header (Authorization carries the
// token) whatever serializers the given pino logger brings.

import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';

/** A child of `logger` whose `req`/`res` serializers are pinned to safe summaries. */
export function requestLogger(logger: Logger): FastifyBaseLogger {
  return logger.child(
    {},
    {
      serializers: {
        req: (req: { method?: string; url?: string; ip?: string }) => ({
          method: req.method,
          url: req.url,
          remoteAddress: req.ip,
        }),
        res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
      },
    },
  );
}

/** fastify logs "incoming request" and "request completed"; this keeps one line with both. */
export class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = { req: request, res: reply, responseTime: Math.round(reply.elapsedTime) };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}
