// startGateway(options): the gateway's programmatic entry. Opens and migrates the storage, then
// serves the org API and the forwarded browser paths.

import pino, { type Logger } from 'pino';
import { resolveGatewayConfig, type GatewayConfig, type GatewayConfigOptions } from './config.ts';
import { HostPolicy } from '../http/host-policy.ts';
import { createGatewayServer } from './http/server.ts';
import { describeStorage, openStore } from './storage/open-store.ts';
import { listenUrl } from '../http/listen.ts';
import type { GatewayStore } from './storage/store.ts';

const DEFAULT_CONNECT_TIMEOUT_MS = 5000;

export interface StartGatewayOptions extends GatewayConfigOptions {
  /** A pino logger to use instead of one writing JSON lines to stdout. */
  logger?: Logger;
  /** TCP connect timeout towards agents (default 5000 ms); then 502. */
  connectTimeoutMs?: number;
}

export interface Gateway {
  /** `http://host:port` the gateway listens on. */
  readonly url: string;
  readonly config: GatewayConfig;
  /** The state, for embedding and tests (e.g. to create the first key). */
  readonly store: GatewayStore;
  /** Number of forwarded exchanges still piping (streams, mostly). */
  readonly openExchanges: number;
  /** Stops serving (forwarded streams are cut; clients resume elsewhere) and closes the storage. */
  close(): Promise<void>;
}

export async function startGateway(options: StartGatewayOptions = {}): Promise<Gateway> {
  const { logger, connectTimeoutMs, ...configOptions } = options;
  return startGatewayWithConfig(resolveGatewayConfig(configOptions), { logger, connectTimeoutMs });
}

export async function startGatewayWithConfig(
  config: GatewayConfig,
  extras: { logger?: Logger; connectTimeoutMs?: number } = {},
): Promise<Gateway> {
  const logger = extras.logger ?? pino({ level: config.logLevel });
  const { store, migration, permissionChanges } = await openStore(config.storage, (err) => logger.warn({ err }, 'idle database connection failed'));
  if (permissionChanges.length > 0) {
    logger.warn({ changed: permissionChanges }, 'the SQLite storage was readable by others: group and other permissions removed');
  }
  if (migration.applied.length > 0) logger.info({ applied: migration.applied, version: migration.version }, 'database migrated');

  const { app, proxy } = createGatewayServer({
    store,
    logger,
    hosts: new HostPolicy(config.host, config.allowedHosts),
    timeouts: {
      connectMs: extras.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      responseMs: config.agentResponseTimeoutMs,
      idleMs: config.agentIdleTimeoutMs,
      keepaliveMs: config.agentKeepaliveMs,
    },
    keyRecheckMs: config.keyRecheckMs,
  });
  let url: string;
  try {
    url = await listenUrl(app, config.host, config.port);
  } catch (err) {
    await app.close().catch(() => undefined);
    await store.db.close();
    throw err;
  }
  logger.info({ url, storage: describeStorage(config.storage), schema_version: migration.version }, 'listening');

  let closing: Promise<void> | undefined;
  return {
    url,
    config,
    store,
    get openExchanges() {
      return proxy.openExchanges;
    },
    close() {
      closing ??= app.close().then(() => store.db.close());
      return closing;
    },
  };
}
