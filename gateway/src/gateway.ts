// startGateway(options): the gateway's programmatic entry. Opens and migrates the storage, starts
// the archive (docs/gateway.md), then serves the org API, the archive's reads and the forwarded
// browser paths.

import pino, { type Logger } from 'pino';
import { resolveGatewayConfig, type GatewayConfig, type GatewayConfigOptions } from './config.ts';
import { HostPolicy } from 'browser-telemetry-agent/http-kit';
import { createGatewayServer } from './http/server.ts';
import { describeStorage, openStore } from './storage/open-store.ts';
import { acquireServeLock } from './storage/serve-lock.ts';
import { listenUrl } from 'browser-telemetry-agent/http-kit';
import type { GatewayStore } from './storage/store.ts';
import { Archive } from './archive/archive.ts';
import type { QueuedEvent } from './archive/archive-writer.ts';
import { streamSilenceLimitMs } from './agent-link/agent-silence.ts';

const DEFAULT_CONNECT_TIMEOUT_MS = 5000;

export interface StartGatewayOptions extends GatewayConfigOptions {
  /** A pino logger to use instead of one writing JSON lines to stdout. */
  logger?: Logger;
  /** TCP connect timeout towards agents (default 5000 ms); then 502. */
  connectTimeoutMs?: number;
  /** How often the archive's retention runs (default 10 min). */
  archiveRetentionIntervalMs?: number;
  /** Benchmarks: every batch the archive commits, with its commit time (Date.now()). */
  onArchiveCommitted?: (rows: readonly QueuedEvent[], committedAt: number) => void;
}

type GatewayExtras = Pick<StartGatewayOptions, 'logger' | 'connectTimeoutMs' | 'archiveRetentionIntervalMs' | 'onArchiveCommitted'>;

export interface Gateway {
  /** `http://host:port` the gateway listens on. */
  readonly url: string;
  readonly config: GatewayConfig;
  /** The state, for embedding and tests (e.g. to create the first key). */
  readonly store: GatewayStore;
  /** The telemetry archive (docs/gateway.md). */
  readonly archive: Archive;
  /** Number of forwarded exchanges still piping (streams, mostly, and relayed CDP connections). */
  readonly openExchanges: number;
  /** Stops serving (forwarded streams are cut; clients resume elsewhere) and closes the storage. */
  close(): Promise<void>;
}

export async function startGateway(options: StartGatewayOptions = {}): Promise<Gateway> {
  const { logger, connectTimeoutMs, archiveRetentionIntervalMs, onArchiveCommitted, ...configOptions } = options;
  return startGatewayWithConfig(resolveGatewayConfig(configOptions), { logger, connectTimeoutMs, archiveRetentionIntervalMs, onArchiveCommitted });
}

export async function startGatewayWithConfig(config: GatewayConfig, extras: GatewayExtras = {}): Promise<Gateway> {
  const logger = extras.logger ?? pino({ level: config.logLevel });
  // Before the database opens: a second gateway on the same SQLite directory is refused.
  const releaseLock = config.storage.kind === 'sqlite' ? acquireServeLock(config.storage.dataDir) : () => undefined;
  let opened: Awaited<ReturnType<typeof openStore>>;
  try {
    opened = await openStore(config.storage, (err) => logger.warn({ err }, 'idle database connection failed'));
  } catch (err) {
    releaseLock();
    throw err;
  }
  const { store, migration, permissionChanges } = opened;
  if (permissionChanges.length > 0) {
    logger.warn({ changed: permissionChanges }, 'the SQLite storage was readable by others: group and other permissions removed');
  }
  if (migration.applied.length > 0) logger.info({ applied: migration.applied, version: migration.version }, 'database migrated');

  const timeouts = {
    connectMs: extras.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    responseMs: config.agentResponseTimeoutMs,
    batchMarginMs: config.agentBatchMarginMs,
    idleMs: config.agentIdleTimeoutMs,
    keepaliveMs: config.agentKeepaliveMs,
  };
  const archive = new Archive({
    ...config.archive,
    db: store.db,
    log: logger,
    streamSilenceMs: streamSilenceLimitMs(timeouts),
    connectTimeoutMs: timeouts.connectMs,
    responseTimeoutMs: config.agentResponseTimeoutMs,
    retentionIntervalMs: extras.archiveRetentionIntervalMs,
    onCommitted: extras.onArchiveCommitted,
  });
  const { app, proxy, cdp } = createGatewayServer({
    store,
    logger,
    hosts: new HostPolicy(config.host, config.allowedHosts),
    timeouts,
    keyRecheckMs: config.keyRecheckMs,
    archive,
    viewerSecret: config.viewerSecret,
    checkAgent: config.checkAgent,
  });
  let url: string;
  try {
    url = await listenUrl(app, config.host, config.port);
  } catch (err) {
    await app.close().catch(() => undefined);
    await store.db.close();
    releaseLock();
    throw err;
  }
  archive.start();
  if (config.viewerSecret === undefined) {
    // docs/viewer.md "Through the gateway".
    logger.info('no --viewer-secret: viewer links and cookies work only on this instance, until it restarts');
  }
  logger.info(
    { url, storage: describeStorage(config.storage), schema_version: migration.version, archive: config.archive, instance: archive.keeper.instanceId },
    'listening',
  );

  let closing: Promise<void> | undefined;
  return {
    url,
    config,
    store,
    archive,
    get openExchanges() {
      return proxy.openExchanges + cdp.openRelays;
    },
    close() {
      // Streams first (they read the archive), then the archive (its queue is committed and its
      // leases released for the other instances), then the database.
      closing ??= app
        .close()
        .then(() => archive.close())
        .then(() => store.db.close())
        .finally(releaseLock);
      return closing;
    },
  };
}
