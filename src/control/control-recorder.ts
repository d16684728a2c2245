// The cause side's events (docs/events.md "Control events"): cdp_connect and cdp_disconnect
// (category `connection`), cdp_command, api_call and computer_action (category `control`). Each
// control event gets an action id; an opening action also opens a caused_by window in its tab
// (CauseLinker). Events of a category that is off are never built, and no window is opened.

import { randomBytes } from 'node:crypto';
import type {
  ApiCallData,
  CdpCommandData,
  CdpConnectData,
  CdpDisconnectData,
  ComputerActionData,
  ControlData,
  EventSource,
  TelemetryEvent,
} from '../../injected/schema.ts';
import type { BrowserClock } from '../telemetry/clock.ts';
import type { EventSink } from '../telemetry/monitor.ts';
import type { TelemetryConfig } from '../telemetry/telemetry-config.ts';
import type { CauseLinker } from './cause-linker.ts';

/** The `source` of events of the agent's own API and its CDP proxy (the official client's name for the in-VM API). */
export const API_SOURCE: EventSource = Object.freeze({ kind: 'kernel_api' });

/** An action under way: what its control event needs when it ends. */
export interface ActionStart {
  readonly actionId: string;
  /** Unix µs of the start: the control event's `ts`. */
  readonly ts: number;
  /** performance.now() of the start. */
  readonly t0: number;
  readonly targetId: string | undefined;
}

/** The fields of a control event the recorder fills in. */
type ControlFields = Pick<ControlData, 'action_id' | 'target_id' | 'duration_ms'>;

/** Control event data without the fields the recorder fills in. */
type Body<T> = Omit<T, keyof ControlFields>;

export class ControlRecorder {
  private counter = 0;
  private readonly prefix = randomBytes(4).toString('hex');

  constructor(
    private readonly sink: EventSink,
    private readonly clock: BrowserClock,
    private readonly config: () => TelemetryConfig,
    readonly linker: CauseLinker,
  ) {}

  get controlOn(): boolean {
    const config = this.config();
    return config.enabled && config.browser.control.enabled;
  }

  get connectionOn(): boolean {
    const config = this.config();
    return config.enabled && config.browser.connection.enabled;
  }

  get includeUrls(): boolean {
    return this.config().browser.control.include_urls;
  }

  /** A new id: unique in the session, `[a-z0-9-]` only. */
  newId(kind: 'act' | 'conn' | 'req'): string {
    return `${kind}-${this.prefix}${(++this.counter).toString(36)}`;
  }

  /**
   * An action begins; undefined when `control` is off (nothing is recorded). `opens`: it opens a
   * caused_by window in `targetId`'s tab.
   */
  begin(targetId: string | undefined, opens: boolean): ActionStart | undefined {
    if (!this.controlOn) return undefined;
    const start: ActionStart = { actionId: this.newId('act'), ts: this.clock.nowUs(), t0: performance.now(), targetId };
    if (opens && targetId !== undefined) this.linker.open(targetId, start.actionId);
    return start;
  }

  cdpCommand(start: ActionStart, body: Body<CdpCommandData>): void {
    if (this.controlOn)
      this.append({ ts: start.ts, type: 'cdp_command', source: { kind: 'kernel_api', event: body.method }, data: { ...controlFields(start), ...body } });
  }

  apiCall(start: ActionStart, body: Body<ApiCallData>): void {
    if (this.controlOn) this.append({ ts: start.ts, type: 'api_call', source: API_SOURCE, data: { ...controlFields(start), ...body } });
  }

  computerAction(start: ActionStart, body: Body<ComputerActionData>): void {
    if (this.controlOn) this.append({ ts: start.ts, type: 'computer_action', source: API_SOURCE, data: { ...controlFields(start), ...body } });
  }

  cdpConnect(data: CdpConnectData): void {
    if (this.connectionOn) this.append({ ts: this.clock.nowUs(), type: 'cdp_connect', source: API_SOURCE, data });
  }

  cdpDisconnect(data: CdpDisconnectData): void {
    if (this.connectionOn) this.append({ ts: this.clock.nowUs(), type: 'cdp_disconnect', source: API_SOURCE, data });
  }

  private append(event: TelemetryEvent): void {
    this.sink.append(event);
  }
}

/** The fields the recorder fills in, in the order every control event carries them. */
function controlFields(start: ActionStart): ControlFields {
  return {
    action_id: start.actionId,
    ...(start.targetId === undefined ? {} : { target_id: start.targetId }),
    duration_ms: round3(performance.now() - start.t0),
  };
}

function round3(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
