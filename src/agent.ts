// startAgent(options): the programmatic entry. Wires the layers one way:
// Chromium → browser/ → telemetry/ → stream/ → http/.

import pino, { type Logger } from 'pino';
import { CdpConnection, resolveBrowserWsUrl } from './browser/cdp-connection.ts';
import { ChromiumProcess, findChromium } from './browser/chromium-launcher.ts';
import { TargetManager } from './browser/target-manager.ts';
import { resolveConfig, type Config, type ConfigOptions } from './config.ts';
import { createHttpServer } from './http/server.ts';
import { EventLog } from './stream/event-log.ts';
import { StreamHub } from './stream/stream-hub.ts';
import { BrowserClock } from './telemetry/clock.ts';
import { Telemetry, TelemetryMemory } from './telemetry/telemetry.ts';

export interface StartAgentOptions extends ConfigOptions {
  /** A pino logger to use instead of one writing JSON lines to stdout. */
  logger?: Logger;
}

export interface Agent {
  /** `http://host:port` the agent listens on. */
  readonly url: string;
  readonly sessionId: string;
  /** The effective configuration (tokens included). */
  readonly config: Config;
  /** The browser's DevTools websocket URL (for tools that drive the same browser). */
  readonly browserWsUrl: string;
  /** Ends every stream after flushing, closes CDP and (embedded mode) the browser. Idempotent. */
  close(): Promise<void>;
}

export async function startAgent(options: StartAgentOptions = {}): Promise<Agent> {
  const { logger: givenLogger, ...configOptions } = options;
  const config = resolveConfig(configOptions);
  const logger = givenLogger ?? pino({ level: config.logLevel });
  const createdAt = new Date();
  const eventLog = new EventLog({ maxEvents: config.ringEvents, maxBytes: config.ringBytes });
  const hub = new StreamHub(eventLog, { keepaliveMs: config.keepaliveMs });
  const clock = new BrowserClock();
  const memory = new TelemetryMemory();

  let chromium: ChromiumProcess | undefined;
  let connection: CdpConnection | undefined;
  let telemetry: Telemetry | undefined;
  let targets: TargetManager | undefined;
  let terminated = false;

  const closeBrowserSide = async (): Promise<void> => {
    targets?.dispose();
    telemetry?.dispose();
    await connection?.close();
    await chromium?.close();
  };

  let browserWsUrl: string;
  try {
    if (config.cdpUrl === undefined) {
      chromium = await ChromiumProcess.launch({ executablePath: findChromium(config.chromePath) });
      browserWsUrl = chromium.browserWsUrl;
    } else {
      browserWsUrl = await resolveBrowserWsUrl(config.cdpUrl);
    }
    connection = await CdpConnection.connect(browserWsUrl);
    const conn = connection;
    conn.onDisconnect(() => {
      if (terminated) return;
      const reason = chromium?.hasExited ? 'browser_closed' : 'socket_closed';
      logger.warn({ reason }, 'CDP connection lost');
      telemetry?.emitMonitor('monitor_disconnected', { reason });
    });
    telemetry = new Telemetry(conn, eventLog, { config: config.telemetry, limits: config.limits, logger, memory, clock });
    telemetry.start();
    targets = new TargetManager(conn, telemetry, logger);
    await targets.start();
  } catch (err) {
    await closeBrowserSide();
    throw err;
  }

  const app = createHttpServer({
    sessionId: config.sessionId,
    tokens: config.tokens,
    hub,
    log: eventLog,
    logger,
    session: {
      createdAt,
      telemetryConfig: () => telemetry!.config,
      cdpConnected: () => connection!.isConnected,
      isTerminated: () => terminated,
    },
  });
  let url: string;
  try {
    await app.listen({ host: config.host, port: config.port });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    url = `http://${host}:${port}`;
  } catch (err) {
    await closeBrowserSide();
    throw err;
  }
  logger.info({ url, session_id: config.sessionId, mode: chromium ? 'embedded' : 'attached' }, 'listening');

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      terminated = true;
      // Streams first: every admitted event is flushed, then each response ends.
      await hub.closeAll();
      await app.close();
      await closeBrowserSide();
      logger.info('stopped');
    })();
    return closing;
  };

  return { url, sessionId: config.sessionId, config, browserWsUrl, close };
}
