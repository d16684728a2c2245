// How a CDP command fails when what it was sent to is no longer there. The agent raises two typed
// errors itself (when the connection closes, when a target detaches); Chromium and the websocket
// answer with messages of their own, recognised here and nowhere else.

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
 * A best-effort command: its answer, or undefined whatever went wrong (the target went away, the
 * command was refused). For cleanup and optional steps whose failure changes nothing.
 */
export function mayFail<T>(command: Promise<T>): Promise<T | undefined> {
  return command.catch(() => undefined);
}
