// The live session viewer through the gateway (docs/viewer.md "Through the gateway"), for every
// session the archive knows, live or ended:
//
// - POST /browsers/{id}/viewer/sessions (an API key, project-scoped like every browser route):
//   mints a one-time viewer URL whose ticket names the key (`sub`);
// - GET  /browsers/{id}/viewer/open?code=: redeems the ticket (once across instances: the
//   database's ledger, storage/viewer-tickets.ts), sets the cookie, 303 to the viewer;
// - GET  /browsers/{id}/viewer and /viewer/assets/{name}: the agent's page and files
//   (src/generated/viewer-assets.ts), served by the gateway itself; they hold no data;
// - the cookie as a credential (cookiePrincipal): on the telemetry reads of its own session
//   only (stream, history, HAR; GET and HEAD), as the key that minted it, checked on every use,
//   so a viewer ends with its key (deleted or expired), its open streams too (key-watch.ts).
//
// The credentials themselves are the agent's (src/http/viewer-auth.ts), with the gateway's key
// (--viewer-secret, shared by the instances) and ledger. Every answer of the viewer routes
// carries the agent's viewer security headers (src/http/viewer-routes.ts), errors included.

import { createHmac } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { VIEWER_ASSETS } from 'browser-telemetry-agent/http-kit';
import { notFound, unauthorized } from 'browser-telemetry-agent/http-kit';
import { cookieValues, sessionPath, TICKET_PARAM, VIEWER_COOKIE, ViewerAuth, type ViewerGrant } from 'browser-telemetry-agent/http-kit';
import { originOf, REPLAY_PARAM, SECURITY_HEADERS, sendAsset, sendViewerLink, viewerLinkUrl, viewerPagePath } from 'browser-telemetry-agent/http-kit';
import { REPLAY_ID_PATTERN } from 'browser-telemetry-agent/replay';
import type { ArchiveStore } from '../archive/archive-store.ts';
import type { Database } from '../storage/database.ts';
import type { GatewayStore } from '../storage/store.ts';
import { DatabaseTicketLedger } from '../storage/viewer-tickets.ts';
import { accessibleSession, principalOf, type Principal } from './auth.ts';

/** The routes a viewer cookie opens: its session's telemetry reads (archive-routes.ts) and its replays (list, download). */
const VIEWER_READ_ROUTES = new Set([
  '/browsers/:id/telemetry',
  '/browsers/:id/telemetry/stream',
  '/browsers/:id/telemetry/events',
  '/browsers/:id/har',
  '/browsers/:id/replays',
  '/browsers/:id/replays/:replay_id',
]);

const params = { type: 'object', properties: { id: { type: 'string', minLength: 1 } }, required: ['id'] } as const;

/** The HMAC key of `secret`, bound to this one use (the same secret signs nothing else). */
export function viewerKeyFromSecret(secret: string): Buffer {
  return createHmac('sha256', secret).update('browser-telemetry-gateway viewer credentials v1').digest();
}

export interface GatewayViewerOptions {
  db: Database;
  store: GatewayStore;
  sessions: ArchiveStore;
  /** --viewer-secret; undefined: a random key for this process only. */
  secret: string | undefined;
  now?: () => number;
}

export class GatewayViewer {
  readonly auth: ViewerAuth;
  private readonly now: () => number;

  constructor(private readonly options: GatewayViewerOptions) {
    this.now = options.now ?? Date.now;
    this.auth = new ViewerAuth({
      key: options.secret === undefined ? undefined : viewerKeyFromSecret(options.secret),
      ledger: new DatabaseTicketLedger(options.db, this.now),
      now: this.now,
    });
  }

  /**
   * The principal of a request carrying a viewer cookie and no Authorization header: undefined
   * when the cookie does not apply (another route, a method that is not GET/HEAD, no cookie), so
   * the API key is asked for as usual; 401 when it applies and is forged, expired, of another
   * session, or its key is gone.
   */
  async cookiePrincipal(request: FastifyRequest): Promise<Principal | undefined> {
    if (request.method !== 'GET' && request.method !== 'HEAD') return undefined;
    if (!VIEWER_READ_ROUTES.has(request.routeOptions.url ?? '')) return undefined;
    const values = cookieValues(request.headers.cookie, VIEWER_COOKIE);
    if (values.length === 0) return undefined;
    const { id } = (request.params ?? {}) as { id?: string };
    // Only under the cookie's own path, spelled as the browser sends it.
    if (id === undefined || !request.url.startsWith(sessionPath(id))) return undefined;
    let grant: ViewerGrant | undefined;
    for (const value of values) grant ??= this.auth.verifyCookie(value, id);
    if (grant?.subject === undefined) throw unauthorized('the viewer session has expired or is not valid for this browser; open a new viewer link');
    return this.liveKey(grant.subject);
  }

  /** The key a viewer credential names, as a principal; 401 once it is deleted or expired. */
  private async liveKey(keyId: string): Promise<Principal> {
    const key = await this.options.store.findApiKey(keyId);
    if (key === undefined || (key.expiresAt !== null && key.expiresAt <= this.now())) {
      throw unauthorized('the API key that opened this viewer was deleted or has expired; open a new viewer link');
    }
    return { keyId: key.id, keyName: key.name, projectId: key.projectId, expiresAt: key.expiresAt };
  }

  /** A one-time link to the viewer at replay `replayId` of `sessionId`, for the caller's key (docs/replay.md "Through the gateway"). */
  replayLink(request: FastifyRequest, sessionId: string, replayId: string): string {
    return viewerLinkUrl(originOf(request), sessionId, this.auth.mintTicket(sessionId, principalOf(request).keyId, ['replay']).ticket, replayId);
  }

  /**
   * Registers the viewer routes on `app`, outside the API-key scope; the mint route gets
   * `authenticate` (the API-key hook) after the security headers.
   */
  register(app: FastifyInstance, authenticate: (request: FastifyRequest) => Promise<void>): void {
    const secure = async (_request: FastifyRequest, reply: FastifyReply): Promise<void> => {
      reply.headers(SECURITY_HEADERS);
    };
    const { sessions } = this.options;

    app.post('/browsers/:id/viewer/sessions', { onRequest: [secure, authenticate], schema: { params } }, async (request, reply) => {
      const session = await accessibleSession(sessions, request);
      return sendViewerLink(request, reply, session.sessionId, this.auth.mintTicket(session.sessionId, principalOf(request).keyId));
    });

    app.get(
      '/browsers/:id/viewer/open',
      {
        onRequest: secure,
        schema: {
          params,
          querystring: {
            type: 'object',
            required: [TICKET_PARAM],
            properties: { [TICKET_PARAM]: { type: 'string', maxLength: 1024 }, [REPLAY_PARAM]: { type: 'string', pattern: REPLAY_ID_PATTERN.source } },
          },
        },
        exposeHeadRoute: false,
      },
      async (request, reply) => {
        const { id } = request.params as { id: string };
        const { code, replay } = request.query as { code: string; replay?: string };
        // The ticket first: an unauthenticated caller learns nothing of the id.
        const { cookie } = await this.auth.redeemTicket(code, id);
        const subject = claimsSubject(this.auth, cookie, id);
        if (subject === undefined) throw unauthorized('the viewer link is not valid');
        await this.liveKey(subject);
        if (!(await sessions.findSession(id))) throw notFound('browser session not found');
        return reply
          .code(303)
          .header('Set-Cookie', this.auth.setCookieHeader(cookie, id, { secure: request.protocol === 'https' }))
          .header('Cache-Control', 'no-store')
          .header('Location', viewerPagePath(id, replay))
          .send();
      },
    );

    const page = VIEWER_ASSETS['index.html']!;
    app.get('/browsers/:id/viewer', { onRequest: secure, schema: { params } }, async (request, reply) => sendAsset(request, reply, page));
    app.get(
      '/browsers/:id/viewer/assets/:name',
      { onRequest: secure, schema: { params: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' } }, required: ['id', 'name'] } } },
      async (request, reply) => {
        const { name } = request.params as { name: string };
        const asset = Object.hasOwn(VIEWER_ASSETS, name) && name !== 'index.html' ? VIEWER_ASSETS[name] : undefined;
        if (asset === undefined) throw notFound(`no viewer asset ${name}`);
        return sendAsset(request, reply, asset);
      },
    );
  }
}

/** The key id a freshly made cookie carries (it is the ticket's `sub`). */
function claimsSubject(auth: ViewerAuth, cookie: string, sessionId: string): string | undefined {
  return auth.verifyCookie(cookie, sessionId)?.subject;
}
