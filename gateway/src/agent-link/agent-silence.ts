// How the gateway notices an agent that took a request and went quiet (hung, SIGSTOPped, its
// machine gone without a reset): a watch per phase of a forwarded exchange that fires when the
// agent has moved no byte for a limit, counting only the time the agent was the one expected to
// act. A client that stops reading a stream stops the gateway reading from the agent too
// (backpressure), and that silence is the client's, not the agent's.

// The global `performance`, so fake timers can drive it in tests.
const now = (): number => globalThis.performance.now();

/** How long the gateway waits on agents (config.ts has the defaults and flags). */
export interface AgentTimeouts {
  /** Time to establish the TCP connection; then 502. */
  connectMs: number;
  /** Reads, PATCH, DELETE: from the request sent to the response head; then 504. */
  responseMs: number;
  /** A computer batch: its declared waiting plus this, from the request sent to the response head. */
  batchMarginMs: number;
  /** Non-stream routes: longest silence while a request or response body moves. */
  idleMs: number;
  /** The agents' SSE keepalive period. */
  keepaliveMs: number;
}

/** docs/events.md: an agent writes a keepalive after `--keepalive-ms` without a frame (src/stream/sse-subscriber.ts). */
export const SILENT_KEEPALIVE_PERIODS = 3;

/** A stream whose agent sent no byte for 3 of its keepalive periods has a dead agent. */
export function streamSilenceLimitMs(timeouts: AgentTimeouts): number {
  return SILENT_KEEPALIVE_PERIODS * timeouts.keepaliveMs;
}

/** The agent stayed silent: `waitedFor` names what the gateway was waiting for. */
export class AgentTimeout extends Error {
  override name = 'AgentTimeout';
  readonly code = 'ETIMEDOUT';
  constructor(
    readonly waitedFor: string,
    readonly afterMs: number,
  ) {
    super(`no ${waitedFor} from the agent within ${afterMs} ms`);
  }
}

export class SilenceWatch {
  private last = now();
  private timer: NodeJS.Timeout | undefined;

  /**
   * `agentsTurn`: whether the agent is the one expected to act now (checked when the limit
   * is reached; time when it was not does not count). `onSilent` is called once.
   */
  constructor(
    private readonly limitMs: number,
    private readonly agentsTurn: () => boolean,
    private readonly onSilent: () => void,
  ) {
    this.arm(limitMs);
  }

  /** A byte moved: the agent is alive. */
  touch(): void {
    this.last = now();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(delayMs: number): void {
    this.timer = setTimeout(this.check, delayMs);
    // Owned by the exchange, which stops it; never the reason the process stays up.
    this.timer.unref();
  }

  private readonly check = (): void => {
    this.timer = undefined;
    const at = now();
    if (!this.agentsTurn()) this.last = at;
    const silentFor = at - this.last;
    if (silentFor >= this.limitMs) this.onSilent();
    else this.arm(this.limitMs - silentFor);
  };
}
