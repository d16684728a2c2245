// How a CDP command fails. Chromium's error answers are a typed ProtocolError; the agent raises two
// typed errors itself when what a command was sent to is no longer there (the connection closed,
// the target detached); Chromium and the websocket answer that case with messages of their own,
// recognised here and nowhere else. mayFail is the one way to ignore a failure: silent only when
// the target is gone, a debug line and a counter of the agent's (IgnoredFailures) for anything else.

import type { Logger } from 'pino';

/** Chromium's error answer to a command: its JSON-RPC `code`, `message` and `data`. */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';

  constructor(
    /** The command that was answered with the error. */
    readonly method: string,
    /** JSON-RPC error code: -32601 unknown method, -32602 invalid params, -32000 server error, ... */
    readonly code: number | undefined,
    /** Chromium's message, without the data. */
    readonly protocolMessage: string,
    readonly data?: string,
  ) {
    super(data === undefined ? protocolMessage : `${protocolMessage} (${data})`);
  }
}

/** A command on a target whose session detached (the tab, frame or worker closed) before it answered. */
export class TargetClosedError extends Error {
  override readonly name = 'TargetClosedError';

  constructor(
    readonly targetId: string,
    readonly method?: string,
  ) {
    super(method === undefined ? `target closed: ${targetId}` : `target closed: ${targetId} (${method})`);
  }
}

/** A command sent on, or still waiting on, a CDP connection that has closed (the browser went away). */
export class ConnectionClosedError extends Error {
  override readonly name = 'ConnectionClosedError';

  constructor(readonly method?: string) {
    super(method === undefined ? 'CDP connection closed' : `CDP connection closed (${method})`);
  }
}

/**
 * What Chromium (and the websocket under the connection) answer a command whose target or
 * connection went away:
 * - `Session with given id not found.`: Chromium, a command on a session that detached (-32001);
 * - `No target with given id found`: Chromium, a `Target.*` command naming a closed target;
 * - `Not attached to an active page`: Chromium, a page-domain command on a frame being torn down;
 * - `Target closed`: Chromium, the commands pending on a session when its target crashes or closes;
 * - `WebSocket is not open: readyState 3 (CLOSED)`: the ws package, a command written after the
 *   socket closed and before the connection noticed.
 */
const GONE_MESSAGES = /session with given id not found|no target with given id|not attached to an active page|target closed|websocket is not open/i;

/**
 * The command failed because its target (or the whole connection) went away meanwhile, not
 * because it was wrong. `target`, when given, counts as gone once it is detached, whatever the error.
 */
export function isTargetGone(error: unknown, target?: { readonly isDetached: boolean }): boolean {
  if (target?.isDetached) return true;
  if (error instanceof TargetClosedError || error instanceof ConnectionClosedError) return true;
  const message = error instanceof Error ? error.message : String(error);
  return GONE_MESSAGES.test(message);
}

/**
 * The failures one agent's best-effort commands let pass (mayFail), for its /metrics: `gone` (the
 * target or connection went away: expected, silent) and `other` (anything else: each one is
 * logged at debug). Each agent has its own, handed to its connections (CdpConnection.failures):
 * two agents in one process never count or log into each other's.
 */
export class IgnoredFailures {
  gone = 0;
  other = 0;

  /** `logger`: where the failures other than a gone target are logged (debug level); none without. */
  constructor(private readonly logger?: Logger) {}

  /**
   * A best-effort command: its answer, or undefined whatever went wrong. For cleanup and optional
   * steps whose failure changes nothing. A gone target is the expected case and passes silently;
   * anything else (a refused command, a bug in a `.then` the promise carries) is counted and
   * logged at debug, so it does not vanish. `target`, when given, counts as gone once it is
   * detached.
   */
  mayFail<T>(command: Promise<T>, target?: { readonly isDetached: boolean }): Promise<T | undefined> {
    return command.catch((error: unknown) => {
      if (isTargetGone(error, target)) {
        this.gone++;
        return undefined;
      }
      this.other++;
      this.logger?.debug({ err: error, method: error instanceof ProtocolError ? error.method : undefined }, 'ignored CDP failure');
      return undefined;
    });
  }
}
