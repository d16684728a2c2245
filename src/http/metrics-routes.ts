// GET /metrics: Prometheus text format, behind its own scope `metrics:read` (README.md#api).

import type { FastifyInstance } from 'fastify';
import type { BearerAuth } from './auth.ts';
import { notFound } from './errors.ts';
import { errorResponses } from './schemas.ts';
import type { HttpDeps } from './http-deps.ts';

export function registerMetricsRoutes(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth): void {
  const schema = {
    summary: 'Prometheus metrics (scope metrics:read)',
    tags: ['metrics'],
    response: {
      200: { description: 'Prometheus text format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } },
      ...errorResponses(401, 403, 404, 500),
    },
  };
  app.get('/metrics', { onRequest: auth.require('metrics:read'), schema }, async (_request, reply) => {
    if (!deps.metrics) throw notFound('metrics are not enabled');
    const body = await deps.metrics.render();
    return reply.header('content-type', deps.metrics.contentType).send(body);
  });
}
