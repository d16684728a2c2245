// Start listening and name the bound URL (shared by the agent and the gateway).

import type { FastifyInstance } from 'fastify';

/** Listens on host:port (port 0 picks a free one) and resolves to `http://host:port`. */
export async function listenUrl(app: FastifyInstance, host: string, port: number): Promise<string> {
  await app.listen({ host, port });
  const address = app.server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  return `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;
}
