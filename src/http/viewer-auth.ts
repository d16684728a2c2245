// Viewer credentials (docs/viewer.md "Auth"). A browser cannot put a bearer token on the requests
// of a web page, so a caller with a bearer token mints a short-lived, one-time ticket; the viewer
// URL carries it, and opening that URL exchanges it for an HttpOnly, SameSite=Strict cookie scoped
// to `/browsers/{id}/`, which the telemetry GET routes accept as `telemetry:read` (and the replay
// reads, list and download, when the link was minted by a caller who may read replays:
// docs/replay.md "The viewer link").
//
// Tickets and cookie values are HMAC-signed claims (kind, session id, expiry, id, subject), so any
// process holding the key can check them without a lookup: the gateway reuses this module with a
// key shared by its instances. Only "a ticket is used once" needs state, behind TicketLedger (in
// memory here; the gateway's store for several instances).

import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Scope } from '../config.ts';
import { forbidden, unauthorized, type ApiError } from './errors.ts';

/** The cookie's name; one per session path, so several sessions on one host do not collide. */
export const VIEWER_COOKIE = 'bta_viewer';

/**
 * The query parameter of the viewer URL that carries the ticket. `code` (the OAuth word for a
 * one-time code exchanged for a credential) is one of the names the request log redacts
 * (request-log.ts), so the ticket never reaches a log line.
 */
export const TICKET_PARAM = 'code';

export const DEFAULT_TICKET_TTL_MS = 60_000;
export const DEFAULT_COOKIE_TTL_MS = 8 * 3600_000;

/** Longest credential accepted before any parsing (real ones are about 200 chars). */
const MAX_CREDENTIAL_CHARS = 1024;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

type Kind = 'ticket' | 'viewer';

/** The signed claims of a ticket or a cookie value. */
interface Claims {
  /** What the credential is: a ticket is never accepted as a cookie, nor the reverse. */
  k: Kind;
  /** The session whose paths it opens. */
  sid: string;
  /** Expiry, unix ms. */
  exp: number;
  /** Random id (the ticket ledger's key). */
  jti: string;
  /** Who minted it (the gateway: the API key id, to end viewers of a deleted key); optional. */
  sub?: string;
  /** Reads granted beyond the telemetry: `replay` (the replays' list and files). */
  scp?: ViewerExtraScope[];
}

/** What a viewer credential may read besides the telemetry. */
export type ViewerExtraScope = 'replay';

/** What a valid viewer cookie grants. */
export interface ViewerGrant {
  sessionId: string;
  /** Unix ms. */
  expiresAt: number;
  subject?: string;
  /** Names this viewer (one per redeemed ticket) without revealing its cookie: live_view_* `session_id`. */
  viewerId: string;
  /** Reads granted beyond the telemetry. */
  extraScopes: ViewerExtraScope[];
}

/** Remembers used tickets until they expire, so each one is redeemed once. */
export interface TicketLedger {
  /** Marks ticket `id` used; false when it already was. It may be forgotten after `expiresAt` (unix ms). */
  claim(id: string, expiresAt: number): boolean | Promise<boolean>;
}

/** The agent's ledger: one process, so memory is enough. Its size is bounded by redemptions per ticket TTL. */
export class MemoryTicketLedger implements TicketLedger {
  private readonly used = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  claim(id: string, expiresAt: number): boolean {
    const now = this.now();
    // Entries are in insertion order and share one TTL, so the expired ones are at the front.
    for (const [usedId, until] of this.used) {
      if (until > now) break;
      this.used.delete(usedId);
    }
    if (this.used.has(id)) return false;
    this.used.set(id, expiresAt);
    return true;
  }

  get size(): number {
    return this.used.size;
  }
}

export interface ViewerAuthOptions {
  /** HMAC key, at least 32 bytes; random per process when absent (a restart ends every viewer). */
  key?: Buffer;
  ticketTtlMs?: number;
  cookieTtlMs?: number;
  ledger?: TicketLedger;
  now?: () => number;
}

export class ViewerAuth {
  private readonly key: Buffer;
  private readonly ledger: TicketLedger;
  private readonly now: () => number;
  readonly ticketTtlMs: number;
  readonly cookieTtlMs: number;

  constructor(options: ViewerAuthOptions = {}) {
    if (options.key !== undefined && options.key.length < 32) throw new Error('viewer key: at least 32 bytes');
    this.key = options.key ?? randomBytes(32);
    this.now = options.now ?? Date.now;
    this.ledger = options.ledger ?? new MemoryTicketLedger(this.now);
    this.ticketTtlMs = options.ticketTtlMs ?? DEFAULT_TICKET_TTL_MS;
    this.cookieTtlMs = options.cookieTtlMs ?? DEFAULT_COOKIE_TTL_MS;
  }

  /** A one-time ticket for the viewer of `sessionId`; `extraScopes` go to its cookie. */
  mintTicket(sessionId: string, subject?: string, extraScopes: readonly ViewerExtraScope[] = []): { ticket: string; expiresAt: number } {
    const expiresAt = this.now() + this.ticketTtlMs;
    return {
      ticket: this.sign({
        k: 'ticket',
        sid: sessionId,
        exp: expiresAt,
        jti: randomId(),
        ...(subject === undefined ? {} : { sub: subject }),
        ...(extraScopes.length === 0 ? {} : { scp: [...extraScopes] }),
      }),
      expiresAt,
    };
  }

  /**
   * Checks a ticket for `sessionId` and uses it up; resolves with the cookie value that replaces
   * it. Throws 401 for a forged, expired, reused ticket or one of another session.
   */
  async redeemTicket(ticket: string, sessionId: string): Promise<{ cookie: string; expiresAt: number }> {
    const claims = this.verify(ticket, 'ticket');
    if (claims === undefined) throw invalidTicket('the viewer link is not valid');
    if (claims.sid !== sessionId) throw invalidTicket('the viewer link is for another session');
    if (claims.exp <= this.now()) throw invalidTicket('the viewer link has expired');
    if (!(await this.ledger.claim(claims.jti, claims.exp))) throw invalidTicket('the viewer link was already used');
    const expiresAt = this.now() + this.cookieTtlMs;
    const cookie = this.sign({
      k: 'viewer',
      sid: sessionId,
      exp: expiresAt,
      jti: randomId(),
      ...(claims.sub === undefined ? {} : { sub: claims.sub }),
      ...(claims.scp === undefined ? {} : { scp: claims.scp }),
    });
    return { cookie, expiresAt };
  }

  /** The grant of a cookie value for `sessionId`; undefined when it is forged, expired or of another session. */
  verifyCookie(value: string, sessionId: string): ViewerGrant | undefined {
    const claims = this.verify(value, 'viewer');
    if (claims === undefined || claims.sid !== sessionId || claims.exp <= this.now()) return undefined;
    const viewerId = createHash('sha256').update(claims.jti).digest('base64url').slice(0, 16);
    return {
      sessionId: claims.sid,
      expiresAt: claims.exp,
      viewerId,
      extraScopes: claims.scp ?? [],
      ...(claims.sub === undefined ? {} : { subject: claims.sub }),
    };
  }

  /** `Set-Cookie` for a redeemed ticket: HttpOnly, SameSite=Strict, only under the session's paths. */
  setCookieHeader(value: string, sessionId: string, options: { secure: boolean }): string {
    const maxAge = Math.floor(this.cookieTtlMs / 1000);
    return `${VIEWER_COOKIE}=${value}; Path=${sessionPath(sessionId)}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${options.secure ? '; Secure' : ''}`;
  }

  /**
   * `credential.authenticate` for BearerAuth: the viewer cookie as `telemetry:read` on GET and
   * HEAD, and as `replay` there when its link granted it.
   */
  readonly credential = {
    authenticate: (request: FastifyRequest, scope: Scope): boolean => {
      const values = cookieValues(request.headers.cookie, VIEWER_COOKIE);
      if (values.length === 0) return false;
      // Read-only and safe methods only: a cookie rides along on requests the user did not make
      // (SameSite=Strict stops cross-site ones; this stops the rest from changing anything).
      if ((scope !== 'telemetry:read' && scope !== 'replay') || (request.method !== 'GET' && request.method !== 'HEAD')) return false;
      const { id } = (request.params ?? {}) as { id?: string };
      // Only under the cookie's own path, as a browser sends it (not GET /browsers/{id} itself).
      if (id === undefined || !request.url.startsWith(sessionPath(id))) return false;
      let lacksReplay = false;
      for (const value of values) {
        const grant = this.verifyCookie(value, id);
        if (grant === undefined) continue;
        if (scope === 'replay' && !grant.extraScopes.includes('replay')) {
          lacksReplay = true;
          continue;
        }
        this.viewers.set(request.raw, grant.viewerId);
        return true;
      }
      if (lacksReplay) throw forbidden('this viewer link does not grant the replays (its minter could not read them)');
      throw unauthorized('the viewer session has expired or is not valid for this browser; open a new viewer link');
    },
  };

  /** Requests authenticated by a viewer cookie → the viewer's id. */
  private readonly viewers = new WeakMap<object, string>();

  /** The viewer behind a request the cookie authenticated; undefined for a bearer token. */
  viewerOf(request: FastifyRequest): string | undefined {
    return this.viewers.get(request.raw);
  }

  private sign(claims: Claims): string {
    const payload = Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url');
    return `${payload}.${this.mac(payload).toString('base64url')}`;
  }

  private verify(value: string, kind: Kind): Claims | undefined {
    if (value.length > MAX_CREDENTIAL_CHARS) return undefined;
    const dot = value.indexOf('.');
    if (dot <= 0) return undefined;
    const payload = value.slice(0, dot);
    const signature = value.slice(dot + 1);
    if (!BASE64URL.test(payload) || !BASE64URL.test(signature)) return undefined;
    // Compared as text: base64url's last character has spare bits, so bytes would accept
    // several spellings of one signature.
    const given = Buffer.from(signature, 'latin1');
    const expected = Buffer.from(this.mac(payload).toString('base64url'), 'latin1');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let claims: unknown;
    try {
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    return isClaims(claims) && claims.k === kind ? claims : undefined;
  }

  private mac(payload: string): Buffer {
    return createHmac('sha256', this.key).update(payload).digest();
  }
}

/** `/browsers/{id}/`: the cookie's path, so it goes with that session's requests only. */
export function sessionPath(sessionId: string): string {
  return `/browsers/${encodeURIComponent(sessionId)}/`;
}

/** Every value of cookie `name` in a Cookie header (several paths may each set one). */
export function cookieValues(header: string | undefined, name: string): string[] {
  if (header === undefined || header === '') return [];
  const values: string[] = [];
  for (const part of header.split(';')) {
    const equals = part.indexOf('=');
    if (equals === -1 || part.slice(0, equals).trim() !== name) continue;
    values.push(part.slice(equals + 1).trim());
  }
  return values;
}

function isClaims(value: unknown): value is Claims {
  if (typeof value !== 'object' || value === null) return false;
  const c = value as Record<string, unknown>;
  return (
    (c.k === 'ticket' || c.k === 'viewer') &&
    typeof c.sid === 'string' &&
    typeof c.exp === 'number' &&
    Number.isFinite(c.exp) &&
    typeof c.jti === 'string' &&
    (c.sub === undefined || typeof c.sub === 'string') &&
    (c.scp === undefined || (Array.isArray(c.scp) && c.scp.every((scope) => scope === 'replay')))
  );
}

function randomId(): string {
  return randomBytes(16).toString('base64url');
}

function invalidTicket(message: string): ApiError {
  return unauthorized(message);
}
