// The shared HTTP kit, what the gateway package takes from the agent's HTTP layer
// (`browser-telemetry-agent/http-kit`; docs/architecture.md "The shared HTTP kit"): the one
// fastify setup, the error registry and body, the Host policy, listening, and the viewer's auth
// and assets.

export { createApiServer, type ApiServerOptions } from './api-server.ts';
export * from './errors.ts';
export { refuseUpgrade, sendError, toApiError } from './error-handler.ts';
export * from './host-policy.ts';
export { listenUrl } from './listen.ts';
export { CALLER_HEADER, STEP_VIA_HEADER, VIA_GATEWAY_HEADER } from './via-gateway.ts';
// The reads' query parts and the exports' replies, the same on the agent's routes and the gateway's.
export { exportWindow, timeBound, type ExportQuery, type ExportWindow } from './export-query.ts';
export { sendHar, sendTrace, type TraceOf } from './export-reply.ts';
// A computer batch's declared waits: the gateway's batch timeout follows them (docs/gateway.md).
export { requestedWaitMs } from '../computer/batch-rules.ts';
export type { Action } from '../computer/batch-schema.ts';
export * from './viewer-auth.ts';
export { SECURITY_HEADERS, sendAsset, sendViewerLink, originOf, viewerLinkUrl, viewerPagePath, REPLAY_PARAM, type Asset } from './viewer-routes.ts';
export { VIEWER_ASSETS } from '../generated/viewer-assets.ts';
// A replay's download with HTTP Range: the agent's file, the gateway's archived copy (docs/gateway.md "Replays").
export { sendVideo, type VideoBody } from './replay-routes.ts';
// Integer query parameters are decimal digits only, on the agent's and the gateway's routes.
export { requireDecimalIntegers } from './query-rules.ts';
