// Bearer authentication with API keys (docs/gateway.md, in the agent's style: src/http/auth.ts). The
// presented key is digested, looked up by its digest and confirmed with timingSafeEqual; only
// digests are ever stored. Missing, malformed, unknown, expired or deleted keys are all 401 with
// `WWW-Authenticate: Bearer`. What a key may touch (org-wide or one project) is decided by the
// routes through the helpers below.

import type { FastifyRequest } from 'fastify';
import { notFound, unauthorized } from 'browser-telemetry-agent/http-kit';
import { digestApiKey, digestsEqual, looksLikeApiKey } from '../api-key.ts';
import type { GatewayStore } from '../storage/store.ts';
import { orgWideKeyRequired, otherProject } from './errors.ts';

const BEARER = /^Bearer +(\S+) *$/i;

/** The authenticated caller: one API key. */
export interface Principal {
  keyId: string;
  keyName: string;
  /** Null for an organization-wide key. */
  projectId: string | null;
  /** Unix ms; null: never. An open stream ends when its key expires (key-watch.ts). */
  expiresAt: number | null;
}

const principals = new WeakMap<FastifyRequest, Principal>();

export class KeyAuth {
  constructor(
    private readonly store: GatewayStore,
    private readonly now: () => number = Date.now,
  ) {}

  /** Resolves the caller of an Authorization header; throws 401 unauthorized otherwise. */
  async authenticate(authorization: string | undefined): Promise<Principal> {
    if (authorization === undefined || authorization === '') throw unauthorized('missing bearer token');
    const match = BEARER.exec(authorization);
    if (!match) throw unauthorized('malformed Authorization header (expected "Bearer <api key>")');
    const key = match[1]!;
    if (!looksLikeApiKey(key)) throw unauthorized('invalid bearer token');
    const digest = digestApiKey(key);
    const credential = await this.store.findKeyCredential(digest);
    if (credential === undefined || !digestsEqual(credential.digest, digest) || credential.deletedAt !== null) {
      throw unauthorized('invalid bearer token');
    }
    if (credential.expiresAt !== null && credential.expiresAt <= this.now()) throw unauthorized('the API key has expired');
    return { keyId: credential.id, keyName: credential.name, projectId: credential.projectId, expiresAt: credential.expiresAt };
  }

  /**
   * A fastify onRequest hook: authenticates and remembers the caller for principalOf().
   * `alternative` may name the caller of a request without an Authorization header (the viewer
   * cookie: viewer-routes.ts); when it does not, the key is required as usual.
   */
  hook(alternative?: (request: FastifyRequest) => Promise<Principal | undefined>): (request: FastifyRequest) => Promise<void> {
    return async (request) => {
      const other = request.headers.authorization === undefined && alternative ? await alternative(request) : undefined;
      principals.set(request, other ?? (await this.authenticate(request.headers.authorization)));
    };
  }
}

/** The caller of an authenticated request. */
export function principalOf(request: FastifyRequest): Principal {
  const principal = principals.get(request);
  if (!principal) throw new Error('route registered without the authentication hook');
  return principal;
}

export function requireOrgWide(principal: Principal): void {
  if (principal.projectId !== null) throw orgWideKeyRequired();
}

/** 403 when a project-scoped key touches something of another project (or of none). */
export function requireProjectAccess(principal: Principal, projectId: string | null, what: string): void {
  if (principal.projectId !== null && principal.projectId !== projectId) throw otherProject(what);
}

/** The session the route's `:id` names, if the caller may read it: 404 when there is none, 403 across projects. */
export async function accessibleSession<S extends { projectId: string | null }>(
  sessions: { findSession(id: string): Promise<S | undefined> },
  request: FastifyRequest,
): Promise<S> {
  const { id } = request.params as { id: string };
  const session = await sessions.findSession(id);
  if (!session) throw notFound('browser session not found');
  requireProjectAccess(principalOf(request), session.projectId, 'browser');
  return session;
}
