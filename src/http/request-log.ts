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
          url: req.url === undefined ? undefined : redactUrl(req.url),
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

/** Query parameters whose values are secrets: never written to a log. */
const SECRET_PARAMS =
  /^(token|access_token|id_token|refresh_token|session_token|api_key|apikey|key|secret|client_secret|password|passwd|auth|authorization|signature|sig|jwt|code)$/i;

/** `url` with the value of every secret-named query parameter replaced by `[REDACTED]`. */
export function redactUrl(url: string): string {
  const question = url.indexOf('?');
  if (question === -1) return url;
  const query = url
    .slice(question + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      const rawName = equals === -1 ? pair : pair.slice(0, equals);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        // Malformed escapes: judge the raw name.
      }
      return equals !== -1 && SECRET_PARAMS.test(name) ? `${rawName}=[REDACTED]` : pair;
    })
    .join('&');
  return `${url.slice(0, question)}?${query}`;
}
