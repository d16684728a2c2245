// The gate in front of every `/browsers/{id}...` route: authentication first (so an
// unauthenticated caller cannot probe which ids exist), then an acting route's api_call begins,
// then the session id. All run in onRequest, before any body is read.

import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Scope } from '../config.ts';
import { beginApiCall } from './api-call-hook.ts';
import type { BearerAuth } from './auth.ts';
import { notFound } from './errors.ts';
import type { HttpDeps } from './http-deps.ts';

export interface BrowserParams {
  id: string;
}

export const browserParamsSchema = {
  type: 'object',
  properties: { id: { type: 'string' } },
  required: ['id'],
} as const;

export interface GuardOptions {
  /**
   * Still answered once the session is terminated, while the agent runs: the reads of what the
   * session leaves behind (its replays' list and files, docs/gateway.md "Replays"), so that the
   * gateway can archive a recording the DELETE itself stopped.
   */
  afterEnd?: boolean;
}

export function browserGuard(deps: HttpDeps, auth: BearerAuth, scope: Scope, options: GuardOptions = {}): onRequestHookHandler[] {
  const requireSession = async (request: FastifyRequest): Promise<void> => {
    const { id } = request.params as BrowserParams;
    // A terminated session is gone: every path with its id is 404 from then on (docs/decisions.md).
    if (id !== deps.sessionId || (deps.session.isTerminated() && options.afterEnd !== true)) throw notFound('browser session not found');
  };
  return [auth.require(scope), beginApiCall(deps, auth), requireSession];
}
