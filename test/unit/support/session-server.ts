// The agent's HTTP server over a small event log and a session that is always up, for tests of
// routes that need no browser.

import type { FastifyInstance } from 'fastify';
import type { BatchRunner } from '../../../src/computer/executor.ts';
import { createHttpServer, type SessionView } from '../../../src/http/server.ts';
import type { TokenGrant } from '../../../src/config.ts';
import { EventLog } from '../../../src/stream/event-log.ts';
import { StreamHub } from '../../../src/stream/stream-hub.ts';
import { defaultTelemetryConfig } from '../../../src/telemetry/telemetry-config.ts';

export function sessionView(): SessionView {
  return {
    createdAt: new Date(),
    telemetryConfig: defaultTelemetryConfig,
    cdpConnected: () => true,
    isTerminated: () => false,
    updateTelemetry: async () => defaultTelemetryConfig(),
    terminate: async () => undefined,
  };
}

export function sessionServer(options: { sessionId: string; tokens: TokenGrant[]; computer?: BatchRunner; log?: EventLog }): FastifyInstance {
  const log = options.log ?? new EventLog({ maxEvents: 100, maxBytes: 1 << 20 });
  return createHttpServer({
    sessionId: options.sessionId,
    tokens: options.tokens,
    hub: new StreamHub(log, { keepaliveMs: 60_000 }),
    log,
    ...(options.computer ? { computer: options.computer } : {}),
    session: sessionView(),
  });
}
