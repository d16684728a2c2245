// The CDP endpoint for automation clients (docs/operations.md "CDP endpoint"): Chromium's
// discovery answers (`/json/version`, `/json/list`, `/json`), with WebSocket URLs that point at
// this agent, and the WebSocket upgrade, relayed to the browser by src/cdp-proxy/. Both at the root
// (as Chromium serves them) and under `/browsers/{id}/cdp` (as the gateway forwards them). Scope
// `cdp`; the Host policy, the handshake and the token are checked before a byte goes to the
// browser. A refused upgrade gets the error body like any other request (socket-reply.ts).

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ProxyEndpoint } from '../cdp-proxy/cdp-proxy.ts';
import type { BearerAuth } from './auth.ts';
import { browserGuard } from './browser-guard.ts';
import { refuseUpgrade } from './error-handler.ts';
import { ApiError, badRequest, browserUnavailable, misdirectedRequest, notFound } from './errors.ts';
import type { CdpEndpointDeps, HttpDeps } from './http-deps.ts';

export { VIA_GATEWAY_HEADER } from './via-gateway.ts';

/** `ws://<host>/browsers/<id>/cdp`: the session object's `cdp_ws_url`. */
export function cdpWsUrl(host: string, sessionId: string): string {
  return `ws://${host}/browsers/${encodeURIComponent(sessionId)}/cdp`;
}

const DISCOVERY = ['json/version', 'json/list', 'json'] as const;

export function registerCdpRoutes(app: FastifyInstance, deps: HttpDeps, auth: BearerAuth): void {
  const cdp = deps.cdp;
  if (!cdp) return;
  const rootGuard = auth.require('cdp');
  const hide = { schema: { hide: true } };
  for (const path of DISCOVERY) {
    for (const slash of ['', '/']) {
      app.get(`/${path}${slash}`, { onRequest: rootGuard, ...hide }, async (request) => discovery(path, request, cdp, deps, `ws://${hostOf(request)}`));
      app.get(`/browsers/:id/cdp/${path}${slash}`, { onRequest: browserGuard(deps, auth, 'cdp'), ...hide }, async (request) =>
        discovery(path, request, cdp, deps, cdpWsUrl(hostOf(request), deps.sessionId)),
      );
    }
  }

  app.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const upgrade = async () => cdp.upgrade(request, socket, head, authorizeUpgrade(request, deps, auth));
    upgrade().catch((err: unknown) =>
      refuseUpgrade(socket, err, (unexpected) => {
        deps.logger?.error({ err: unexpected }, 'CDP upgrade failed');
        cdp.upgradeFailed();
      }),
    );
  });
}

/** Host, handshake, token, path and session, in that order; throws the ApiError to answer. */
function authorizeUpgrade(request: IncomingMessage, deps: HttpDeps, auth: BearerAuth): ProxyEndpoint {
  const host = request.headers.host;
  // The same check and code as every other route (api-server.ts), HTTP/1.0 included: an upgrade needs a Host.
  if (host === undefined || (deps.hosts && !deps.hosts.allows(host))) throw misdirectedRequest();
  checkHandshake(request);
  auth.authorize(request.headers.authorization, 'cdp');
  const path = new URL(request.url ?? '/', 'http://agent').pathname;
  let rest = path;
  const prefixed = /^\/browsers\/([^/]+)\/cdp(\/.*)?$/.exec(path);
  if (prefixed) {
    if (decodeURIComponent(prefixed[1]!) !== deps.sessionId || deps.session.isTerminated()) throw notFound('browser session not found');
    rest = prefixed[2] ?? '/devtools/browser';
  } else if (deps.session.isTerminated()) {
    throw notFound('browser session not found');
  }
  if (rest === '/devtools/browser' || rest.startsWith('/devtools/browser/')) return { kind: 'browser' };
  const page = /^\/devtools\/page\/([^/]+)$/.exec(rest);
  if (page) return { kind: 'page', targetId: decodeURIComponent(page[1]!) };
  throw notFound('no CDP endpoint at this path (expected /devtools/browser/... or /devtools/page/<target id>)');
}

/**
 * The checks the WebSocket server (ws) makes of a handshake, made before the browser is dialled:
 * ws would answer a malformed one in plain text, with a browser connection already opened for it.
 */
function checkHandshake(request: IncomingMessage): void {
  if (request.method !== 'GET') {
    throw new ApiError(405, 'bad_request', `${request.method} is not allowed on a CDP WebSocket endpoint (allowed: GET)`).withHeader('Allow', 'GET');
  }
  if (request.headers.upgrade?.toLowerCase() !== 'websocket') throw badRequest('the Upgrade header must be websocket');
  if (!/^[+/0-9A-Za-z]{22}==$/.test(request.headers['sec-websocket-key'] ?? '')) throw badRequest('missing or invalid Sec-WebSocket-Key header');
  const version = Number(request.headers['sec-websocket-version']);
  if (version !== 13 && version !== 8) {
    throw badRequest('missing or invalid Sec-WebSocket-Version header (13 or 8)').withHeader('Sec-WebSocket-Version', '13, 8');
  }
}

function hostOf(request: FastifyRequest): string {
  return request.headers.host ?? 'localhost';
}

async function discovery(path: (typeof DISCOVERY)[number], request: FastifyRequest, cdp: CdpEndpointDeps, deps: HttpDeps, base: string): Promise<unknown> {
  if (!deps.session.cdpConnected()) throw browserUnavailable('the browser is not connected');
  const prefixed = base.includes('/browsers/');
  if (path === 'json/version') {
    const version = await cdp.version();
    return {
      Browser: version.product,
      'Protocol-Version': version.protocolVersion,
      'User-Agent': version.userAgent,
      'V8-Version': version.jsVersion,
      'WebKit-Version': version.revision,
      webSocketDebuggerUrl: prefixed ? base : `${base}/devtools/browser/${cdp.browserId() ?? deps.sessionId}`,
    };
  }
  const targets = await cdp.targets();
  return targets.map((t) => ({
    description: '',
    id: t.targetId,
    title: t.title,
    type: t.type,
    url: t.url,
    webSocketDebuggerUrl: `${base}/devtools/page/${encodeURIComponent(t.targetId)}`,
  }));
}
