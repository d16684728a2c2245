// Steps (docs/events.md "Steps"): the automation's own story in the record. A caller (an API
// token, an API key through the gateway, a CDP connection) names a step; the step event is
// recorded, and the caller's following actions carry its `step_id` until the caller names the
// next one (the recorder and the cause linker carry it on to what the actions caused).
//
// One entry for the three ways to mark a step (the HTTP route, the CDP method the proxy answers
// itself, the MCP tool): `Steps.add` validates, applies the limits and records. Every problem is a
// StepError with the error registry's code, its status and the field it concerns.

import { TokenBucket } from '../telemetry/token-bucket.ts';
import type { StepData, StepVia } from '../../injected/schema.ts';
import { codePoints } from '../cdp-proxy/command-shape.ts';
import type { ControlRecorder } from './control-recorder.ts';

/** The limits of a step (docs/events.md "Steps"). */
export const STEP_LIMITS = {
  /** `name`, in characters (code points). */
  maxNameChars: 200,
  /** `data`, as UTF-8 bytes of its JSON. */
  maxDataBytes: 16 * 1024,
  /** Steps one caller may mark at once, and per second after that. */
  burst: 20,
  perSecond: 10,
} as const;

/** Step and parent ids: what the recorder makes (`step-` and `[a-z0-9]`), bounded. */
export const STEP_ID_PATTERN = /^[A-Za-z0-9-]{1,64}$/;

/** Callers whose current step and rate are remembered (the least recently active are forgotten). */
const MAX_CALLERS = 10_000;
/** Step ids remembered for `parent_id` (the oldest are forgotten). */
const MAX_KNOWN_STEPS = 65_536;

/** Who marks a step: whose following actions it covers, and how it was marked. */
export interface StepCaller {
  /** `token:<hash>` (an agent token), `key:<id>` (an API key through the gateway), or a CDP connection id. */
  id: string;
  via: StepVia;
  /** The CDP connection (via `cdp`). */
  connectionId?: string;
}

/** What a caller sends: checked here, whatever the transport. */
export interface StepInput {
  name?: unknown;
  data?: unknown;
  parent_id?: unknown;
}

export interface StepAdded {
  step_id: string;
  /** False when the `control` category (or telemetry) is off: nothing was written to the record. */
  recorded: boolean;
}

export type StepErrorCode = 'invalid_input' | 'payload_too_large' | 'rate_limited';

/** A refused step: the error registry's code and status, and the field concerned. */
export class StepError extends Error {
  override name = 'StepError';

  constructor(
    readonly code: StepErrorCode,
    readonly status: number,
    readonly field: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

interface CallerState {
  step: string | undefined;
  bucket: TokenBucket;
}

export class Steps {
  private readonly callers = new Map<string, CallerState>();
  private readonly known = new Set<string>();

  constructor(
    private readonly recorder: ControlRecorder,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Mark a step for `caller`: validated (StepError when refused), recorded as a `step` event, and
   * from now on the caller's current step.
   */
  add(input: StepInput, caller: StepCaller): StepAdded {
    const checked = checkStepInput(input);
    if (checked.parent_id !== undefined && !this.known.has(checked.parent_id))
      throw new StepError('invalid_input', 400, 'parent_id', `parent_id: no step ${JSON.stringify(checked.parent_id)} was marked in this session`);
    const state = this.stateOf(caller.id);
    if (!state.bucket.take())
      throw new StepError(
        'rate_limited',
        429,
        undefined,
        `too many steps: at most ${STEP_LIMITS.burst} at once and ${STEP_LIMITS.perSecond} per second for one caller`,
      );
    const stepId = this.recorder.newId('step');
    const data: StepData = {
      name: checked.name,
      ...(checked.data === undefined ? {} : { data: checked.data }),
      ...(checked.parent_id === undefined ? {} : { parent_id: checked.parent_id }),
      via: caller.via,
      caller: caller.id,
      ...(caller.connectionId === undefined ? {} : { connection_id: caller.connectionId }),
      step_id: stepId,
    };
    const recorded = this.recorder.step(data);
    state.step = stepId;
    this.known.add(stepId);
    if (this.known.size > MAX_KNOWN_STEPS) this.known.delete(this.known.values().next().value!);
    return { step_id: stepId, recorded };
  }

  /** The step `callerId` marked last, if any: what its actions carry as `step_id`. */
  currentOf(callerId: string | undefined): string | undefined {
    return callerId === undefined ? undefined : this.callers.get(callerId)?.step;
  }

  /** The caller is gone (its CDP connection closed): its state goes with it. */
  forget(callerId: string): void {
    this.callers.delete(callerId);
  }

  private stateOf(callerId: string): CallerState {
    let state = this.callers.get(callerId);
    if (state === undefined) state = { step: undefined, bucket: new TokenBucket(STEP_LIMITS.burst, STEP_LIMITS.perSecond, this.now) };
    // Least recently active last out: re-inserted at every use.
    else this.callers.delete(callerId);
    this.callers.set(callerId, state);
    if (this.callers.size > MAX_CALLERS) this.callers.delete(this.callers.keys().next().value!);
    return state;
  }
}

/** A step's input, checked (pure): StepError naming the field otherwise. */
export function checkStepInput(input: StepInput): { name: string; data?: Record<string, unknown>; parent_id?: string } {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new StepError('invalid_input', 400, undefined, 'expected an object {name, data?, parent_id?}');
  for (const key of Object.keys(input)) {
    if (key !== 'name' && key !== 'data' && key !== 'parent_id')
      throw new StepError('invalid_input', 400, key, `${key}: is not an allowed field (name, data, parent_id)`);
  }
  const { name, data, parent_id: parentId } = input;
  if (typeof name !== 'string') throw new StepError('invalid_input', 400, 'name', 'name: expected a string');
  if (name.trim() === '') throw new StepError('invalid_input', 400, 'name', 'name: must not be empty');
  const chars = codePoints(name);
  if (chars > STEP_LIMITS.maxNameChars)
    throw new StepError('invalid_input', 400, 'name', `name: at most ${STEP_LIMITS.maxNameChars} characters (got ${chars})`);
  let checkedData: Record<string, unknown> | undefined;
  if (data !== undefined) {
    if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new StepError('invalid_input', 400, 'data', 'data: expected a JSON object');
    let json: string;
    try {
      json = JSON.stringify(data);
    } catch {
      // Only an in-process caller can hand over a cycle or a BigInt; what came as JSON goes back to it.
      throw new StepError('invalid_input', 400, 'data', 'data: expected a JSON object (it cannot be written as JSON)');
    }
    const bytes = Buffer.byteLength(json, 'utf8');
    if (bytes > STEP_LIMITS.maxDataBytes)
      throw new StepError('payload_too_large', 413, 'data', `data: at most ${STEP_LIMITS.maxDataBytes} bytes of JSON (got ${bytes})`);
    checkedData = data as Record<string, unknown>;
  }
  if (parentId !== undefined && (typeof parentId !== 'string' || !STEP_ID_PATTERN.test(parentId)))
    throw new StepError('invalid_input', 400, 'parent_id', 'parent_id: expected a step id (1 to 64 of A-Z, a-z, 0-9, -)');
  return { name, ...(checkedData === undefined ? {} : { data: checkedData }), ...(parentId === undefined ? {} : { parent_id: parentId }) };
}
