// The cause side's events (docs/events.md "Control events"): cdp_connect and cdp_disconnect
// (category `connection`), cdp_command, api_call, computer_action and step (category `control`).
// Each action gets an action id, and the step its caller marked last (`step_id`, docs/events.md
// "Steps"); an opening action also opens a caused_by window in its tab (CauseLinker). Events of a
// category that is off are never built, and no window is opened.

import { randomBytes } from 'node:crypto';
import type {
  ApiCallData,
  CdpCommandData,
  CdpConnectData,
  CdpDisconnectData,
  ComputerActionData,
  ControlData,
  EventSource,
  StepData,
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
  /** The step its caller marked last (docs/events.md "Steps"). */
  readonly stepId?: string;
}

/** The fields of a control event the recorder fills in. */
type ControlFields = Pick<ControlData, 'action_id' | 'target_id' | 'duration_ms'>;

/** Control event data without the fields the recorder fills in. */
type Body<T> = Omit<T, keyof ControlFields | 'step_id'>;

/** API requests under way whose step is kept (more only when responses never end). */
const MAX_REQUESTS = 10_000;

/** The source of a step marked over CDP (the method, as cdp_command names its own). */
const CDP_STEP_SOURCE: EventSource = Object.freeze({ kind: 'kernel_api', event: 'Telemetry.addStep' });

export class ControlRecorder {
  private counter = 0;
  private readonly prefix = randomBytes(4).toString('hex');
  /** API requests under way (by request id) → their step: the batch's computer actions carry it. */
  private readonly requestSteps = new Map<string, string>();

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
  newId(kind: 'act' | 'conn' | 'req' | 'step'): string {
    return `${kind}-${this.prefix}${(++this.counter).toString(36)}`;
  }

  /**
   * An action begins; undefined when `control` is off (nothing is recorded). `opens`: it opens a
   * caused_by window in `targetId`'s tab. `stepId`: the step its caller marked last.
   */
  begin(targetId: string | undefined, opens: boolean, stepId?: string): ActionStart | undefined {
    if (!this.controlOn) return undefined;
    const start: ActionStart = {
      actionId: this.newId('act'),
      ts: this.clock.nowUs(),
      t0: performance.now(),
      targetId,
      ...(stepId === undefined ? {} : { stepId }),
    };
    if (opens && targetId !== undefined) this.linker.open(targetId, start.actionId, stepId);
    return start;
  }

  /** An API request that acts on the browser begins (its api_call): `begin`, and its step is kept for its computer actions. */
  beginRequest(requestId: string, targetId: string | undefined, stepId: string | undefined): ActionStart | undefined {
    const start = this.begin(targetId, false, stepId);
    if (start !== undefined && stepId !== undefined) {
      this.requestSteps.set(requestId, stepId);
      // A request whose response never ended is forgotten eventually.
      if (this.requestSteps.size > MAX_REQUESTS) this.requestSteps.delete(this.requestSteps.keys().next().value!);
    }
    return start;
  }

  /** The step of an API request under way (undefined once its api_call was recorded). */
  stepOfRequest(requestId: string | undefined): string | undefined {
    return requestId === undefined ? undefined : this.requestSteps.get(requestId);
  }

  /** A step was marked (Steps.add); false when `control` is off and nothing was recorded. */
  step(data: StepData): boolean {
    if (!this.controlOn) return false;
    this.append({ ts: this.clock.nowUs(), type: 'step', source: data.via === 'cdp' ? CDP_STEP_SOURCE : API_SOURCE, data });
    return true;
  }

  cdpCommand(start: ActionStart, body: Body<CdpCommandData>): void {
    if (this.controlOn)
      this.append({
        ts: start.ts,
        type: 'cdp_command',
        source: { kind: 'kernel_api', event: body.method },
        data: { ...controlFields(start), ...body, ...stepField(start) },
      });
  }

  apiCall(start: ActionStart, body: Body<ApiCallData>): void {
    this.requestSteps.delete(body.request_id);
    if (this.controlOn) this.append({ ts: start.ts, type: 'api_call', source: API_SOURCE, data: { ...controlFields(start), ...body, ...stepField(start) } });
  }

  computerAction(start: ActionStart, body: Body<ComputerActionData>): void {
    if (this.controlOn)
      this.append({ ts: start.ts, type: 'computer_action', source: API_SOURCE, data: { ...controlFields(start), ...body, ...stepField(start) } });
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

function round3(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/** The fields the recorder fills in, in the order every control event carries them. */
function controlFields(start: ActionStart): ControlFields {
  return {
    action_id: start.actionId,
    ...(start.targetId === undefined ? {} : { target_id: start.targetId }),
    duration_ms: round3(performance.now() - start.t0),
  };
}

/** Last: the step filter's SQL form matches `step_id` at the end of the event (src/stream/event-query.ts). */
function stepField(start: ActionStart): { step_id?: string } {
  return start.stepId === undefined ? {} : { step_id: start.stepId };
}
