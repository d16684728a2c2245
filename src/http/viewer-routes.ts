// The live session viewer (docs/viewer.md): a web page served by the agent that watches the
// telemetry stream. Four routes:
//
// - POST /browsers/{id}/viewer/sessions (bearer, telemetry:read): mints a one-time viewer URL.
// - GET  /browsers/{id}/viewer/open?code=: exchanges the ticket for the viewer cookie, then 303 to
//   the viewer, so the ticket leaves the address bar and the history at once.
// - GET  /browsers/{id}/viewer and /viewer/assets/{name}: the page and its script, style and icon,
//   built by build.mjs into src/generated/viewer-assets.ts. They hold no data and are the same for
//   every id, so they need no credential (and say nothing about which ids exist); the data comes
//   from the telemetry routes, which take the cookie.
//
// Every answer of these routes carries the headers of SECURITY_HEADERS, errors included.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { VIEWER_ASSETS } from '../generated/viewer-assets.ts';
import type { BearerAuth } from './auth.ts';
import { browserGuard, browserParamsSchema, type BrowserParams } from './browser-guard.ts';
import { notFound } from './errors.ts';
import { BROWSER_ERRORS, errorResponses } from './schemas.ts';
import type { HttpDeps } from './http-deps.ts';
import { TICKET_PARAM, type ViewerAuth } from './viewer-auth.ts';
import { REPLAY_ID_PATTERN } from '../replay/catalogue.ts';

/**
 * The page runs only its own files: no inline script or style, no other origin, nothing may frame
 * it (clickjacking), it posts no form and sends no Referer (docs/viewer.md "Threat model").
 * Screenshots are `data:` PNGs.
 */
export const VIEWER_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const SECURITY_HEADERS = {
  'Content-Security-Policy': VIEWER_CSP,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
} as const;

interface OpenQuery {
  code: string;
  replay?: string;
}

/**
 * The viewer link's parameter naming a replay (`replay_view_url`, docs/replay.md "The viewer
 * link"): the link opens the viewer with `?replay=<id>`, which the page reads to play that replay.
 */
export const REPLAY_PARAM = 'replay';

/** The viewer page's path, at a replay when `replayId` is given. */
export function viewerPagePath(sessionId: string, replayId?: string): string {
  const page = `/browsers/${encodeURIComponent(sessionId)}/viewer`;
  return replayId === undefined ? page : `${page}?${REPLAY_PARAM}=${encodeURIComponent(replayId)}`;
}

interface AssetParams extends BrowserParams {
  name: string;
}

const sessionCreatedSchema = {
  description: 'A one-time viewer URL',
  type: 'object',
  required: ['url', 'expires_at'],
  properties: {
    url: { type: 'string', description: 'Open it in a browser within expires_at; it works once' },
    expires_at: { type: 'string', format: 'date-time' },
  },
} as const;

export function registerViewerRoutes(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth, viewerAuth: ViewerAuth): void {
  const secure = async (_request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    reply.headers(SECURITY_HEADERS);
  };
  const guard = browserGuard(deps, auth, 'telemetry:read');

  app.post(
    '/browsers/:id/viewer/sessions',
    {
      onRequest: [secure, ...guard],
      schema: {
        summary: 'Mint a one-time URL that opens the live viewer in a browser (scope telemetry:read)',
        tags: ['viewer'],
        params: browserParamsSchema,
        response: { 201: sessionCreatedSchema, ...errorResponses(...BROWSER_ERRORS) },
      },
    },
    async (request, reply) => {
      const { id } = request.params as BrowserParams;
      // A caller who may read replays gets a viewer that may play them (docs/replay.md "The viewer link").
      return sendViewerLink(request, reply, id, viewerAuth.mintTicket(id, undefined, auth.allows(request.headers.authorization, 'replay') ? ['replay'] : []));
    },
  );

  app.get(
    '/browsers/:id/viewer/open',
    {
      onRequest: secure,
      schema: {
        hide: true,
        params: browserParamsSchema,
        querystring: {
          type: 'object',
          required: [TICKET_PARAM],
          properties: { [TICKET_PARAM]: { type: 'string', maxLength: 1024 }, [REPLAY_PARAM]: { type: 'string', pattern: REPLAY_ID_PATTERN.source } },
        },
      },
      exposeHeadRoute: false,
    },
    async (request, reply) => {
      const { id } = request.params as BrowserParams;
      const { code, replay } = request.query as OpenQuery;
      // The ticket first, like every credential: an unauthenticated caller learns nothing of the id.
      const { cookie } = await viewerAuth.redeemTicket(code, id);
      if (id !== deps.sessionId || deps.session.isTerminated()) throw notFound('browser session not found');
      return reply
        .code(303)
        .header('Set-Cookie', viewerAuth.setCookieHeader(cookie, id, { secure: request.protocol === 'https' }))
        .header('Cache-Control', 'no-store')
        .header('Location', viewerPagePath(id, replay))
        .send();
    },
  );

  const page = VIEWER_ASSETS['index.html']!;
  app.get('/browsers/:id/viewer', { onRequest: secure, schema: { hide: true, params: browserParamsSchema } }, async (request, reply) =>
    sendAsset(request, reply, page),
  );

  app.get(
    '/browsers/:id/viewer/assets/:name',
    {
      onRequest: secure,
      schema: { hide: true, params: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' } }, required: ['id', 'name'] } },
    },
    async (request, reply) => {
      const { name } = request.params as AssetParams;
      const asset = Object.hasOwn(VIEWER_ASSETS, name) && name !== 'index.html' ? VIEWER_ASSETS[name] : undefined;
      if (asset === undefined) throw notFound(`no viewer asset ${name}`);
      return sendAsset(request, reply, asset);
    },
  );
}

export interface Asset {
  type: string;
  body: string;
  etag: string;
}

/** The asset, or 304 when the browser holds this version (`no-cache`: it asks every time). */
export function sendAsset(request: FastifyRequest, reply: FastifyReply, asset: Asset): FastifyReply {
  reply.header('Cache-Control', 'no-cache').header('ETag', asset.etag);
  if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
  return reply.type(asset.type).send(asset.body);
}

/** `http://host:port` as the caller reached this server (the Host header, else the local address). */
export function originOf(request: FastifyRequest): string {
  const host = request.headers.host;
  if (host !== undefined && host !== '') return `${request.protocol}://${host}`;
  const { localAddress, localPort } = request.socket;
  const address = localAddress?.includes(':') ? `[${localAddress}]` : localAddress;
  return `${request.protocol}://${address}:${localPort}`;
}

/** The one-time viewer link of a ticket, on the origin the caller reached; at a replay when `replayId` is given. */
export function viewerLinkUrl(origin: string, sessionId: string, ticket: string, replayId?: string): string {
  const replay = replayId === undefined ? '' : `&${REPLAY_PARAM}=${encodeURIComponent(replayId)}`;
  return `${origin}/browsers/${encodeURIComponent(sessionId)}/viewer/open?${TICKET_PARAM}=${ticket}${replay}`;
}

/** 201 with the one-time viewer link of a ticket just minted (never cached). */
export function sendViewerLink(request: FastifyRequest, reply: FastifyReply, sessionId: string, minted: { ticket: string; expiresAt: number }): FastifyReply {
  const url = viewerLinkUrl(originOf(request), sessionId, minted.ticket);
  return reply
    .code(201)
    .header('Cache-Control', 'no-store')
    .send({ url, expires_at: new Date(minted.expiresAt).toISOString() });
}
