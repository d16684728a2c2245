// Bearer-token authentication with scopes (docs/operations.md#threat-model). Tokens are compared in constant time:
// the presented token is hashed and compared against every stored digest with timingSafeEqual,
// without stopping at a match, so response time says nothing about which token was close.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Scope, TokenGrant } from '../config.ts';
import { forbidden, unauthorized } from './errors.ts';
import { CALLER_HEADER, VIA_GATEWAY_HEADER } from './via-gateway.ts';

const BEARER = /^Bearer +(\S+) *$/i;
/** A caller named by the gateway (docs/events.md "Steps"): `key:<API key id>`. */
const FORWARDED_CALLER = /^[A-Za-z0-9:_-]{1,128}$/;

/**
 * A credential a request may carry instead of a bearer token (the viewer cookie, docs/viewer.md
 * "Auth"). `authenticate` is true when the request carries it and it grants `scope` there, false
 * when the request carries none that applies; it throws 401 when one is present but not valid.
 */
export interface RequestCredential {
  authenticate(request: FastifyRequest, scope: Scope): boolean;
}

interface StoredGrant {
  digest: Buffer;
  scopes: ReadonlySet<Scope>;
}

export class BearerAuth {
  private readonly grants: StoredGrant[];

  constructor(
    tokens: readonly TokenGrant[],
    private readonly credentials: readonly RequestCredential[] = [],
  ) {
    // Only digests are kept: the plaintext tokens need not live on in this object.
    this.grants = tokens.map((grant) => ({ digest: sha256(grant.token), scopes: new Set(grant.scopes) }));
  }

  /**
   * Check an Authorization header for `scope`. Throws 401 `unauthorized` (missing, malformed,
   * unknown token) or 403 `forbidden` (known token without the scope).
   */
  authorize(authorization: string | undefined, scope: Scope): void {
    if (authorization === undefined || authorization === '') throw unauthorized('missing bearer token');
    const match = BEARER.exec(authorization);
    if (!match) throw unauthorized('malformed Authorization header (expected "Bearer <token>")');
    const scopes = this.scopesOf(match[1]!);
    if (scopes === undefined) throw unauthorized('invalid bearer token');
    if (!scopes.has('*') && !scopes.has(scope)) throw forbidden(`this token lacks the "${scope}" scope`);
  }

  /** True when the header carries a known token that grants `scope` (no error when not). */
  allows(authorization: string | undefined, scope: Scope): boolean {
    const match = authorization === undefined ? null : BEARER.exec(authorization);
    const scopes = match === null ? undefined : this.scopesOf(match[1]!);
    return scopes !== undefined && (scopes.has('*') || scopes.has(scope));
  }

  /** True when the header carries a known token (any scope). */
  isKnown(authorization: string | undefined): boolean {
    const match = authorization === undefined ? null : BEARER.exec(authorization);
    return match !== null && this.scopesOf(match[1]!) !== undefined;
  }

  /** A fastify onRequest hook requiring `scope` (a bearer token, else another credential). */
  require(scope: Scope): (request: FastifyRequest) => Promise<void> {
    return async (request) => {
      // A bearer token decides alone: a wrong one is not rescued by a cookie.
      const { authorization } = request.headers;
      if (authorization === undefined && this.credentials.some((credential) => credential.authenticate(request, scope))) return;
      this.authorize(authorization, scope);
    };
  }

  /**
   * The API caller of a request (docs/events.md "Steps"): the caller the gateway names for a
   * request it forwarded (`key:<API key id>`), else the bearer token as `token:<n>`, its place in
   * the agent's token list from 1 (never the token itself); undefined without a known token.
   */
  callerOf(request: FastifyRequest): string | undefined {
    const index = this.indexOf(request.headers.authorization);
    if (index === undefined) return undefined;
    const forwarded = request.headers[CALLER_HEADER];
    if (request.headers[VIA_GATEWAY_HEADER] !== undefined && typeof forwarded === 'string' && FORWARDED_CALLER.test(forwarded)) return forwarded;
    return `token:${index + 1}`;
  }

  /** The first grant of the header's token; undefined when none. Every digest is compared. */
  private indexOf(authorization: string | undefined): number | undefined {
    const match = authorization === undefined ? null : BEARER.exec(authorization);
    if (match === null) return undefined;
    const digest = sha256(match[1]!);
    let index: number | undefined;
    this.grants.forEach((grant, i) => {
      if (timingSafeEqual(digest, grant.digest)) index ??= i;
    });
    return index;
  }

  /** Union of the scopes of every grant with this token; undefined when none. */
  private scopesOf(token: string): Set<Scope> | undefined {
    const digest = sha256(token);
    let scopes: Set<Scope> | undefined;
    for (const grant of this.grants) {
      // No early exit: every digest is compared whatever the outcome.
      if (timingSafeEqual(digest, grant.digest)) {
        scopes ??= new Set();
        for (const s of grant.scopes) scopes.add(s);
      }
    }
    return scopes;
  }
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
