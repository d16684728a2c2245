// The gateway's routes use the agent's lazily compiled schemas (src/http/lazy-schemas.ts): every
// schema of every gateway route compiles.

import { describe, expect, it } from 'vitest';
import { compileEverySchema } from '../../../src/http/lazy-schemas.ts';
import { createGatewayServer, type GatewayServerDeps } from '../../src/http/server.ts';

describe("the gateway's route schemas", () => {
  it('all compile, none of them at start-up', async () => {
    // Registering routes touches none of these; no request is made.
    const deps = {
      store: {},
      hosts: { allows: () => true },
      timeouts: { connectMs: 1000, responseMs: 1000, batchMarginMs: 1000, idleMs: 1000 },
      keyRecheckMs: 60_000,
      archive: {},
    } as unknown as GatewayServerDeps;
    const { app } = createGatewayServer(deps);
    try {
      await app.ready();
      expect(compileEverySchema(app)).toBeGreaterThan(20);
    } finally {
      await app.close();
    }
  });
});
