// The batch body of POST /browsers/{id}/computer/batch (docs/computer-batch.md): the action types, their JSON
// schema (validated by fastify's ajv before anything runs, and published in the OpenAPI
// document) and the limits. Cross-field rules that JSON schema cannot say live in batch-rules.ts.

export const ACTION_KINDS = ['click_mouse', 'move_mouse', 'type_text', 'press_key', 'scroll', 'drag_mouse', 'set_cursor', 'sleep'] as const;
export type ActionKind = (typeof ACTION_KINDS)[number];

export const MOUSE_BUTTONS = ['left', 'right', 'middle', 'back', 'forward'] as const;
export type MouseButton = (typeof MOUSE_BUTTONS)[number];
export const DRAG_BUTTONS = ['left', 'middle', 'right'] as const;

export const BATCH_LIMITS = {
  maxActions: 100,
  /** Sum of the waiting a batch asks for (batch-rules.ts `requestedWaitMs`). */
  maxTotalWaitMs: 60_000,
  maxSleepMs: 30_000,
  maxCoordinate: 100_000,
  maxClicks: 10,
  minMoveDurationMs: 50,
  maxMoveDurationMs: 5_000,
  maxTextLength: 10_000,
  maxTypeDelayMs: 1_000,
  maxKeys: 50,
  maxKeyHoldMs: 10_000,
  maxHoldKeys: 8,
  maxScrollUnits: 100,
  maxPathPoints: 100,
  maxDragDelayMs: 5_000,
  maxStepsPerSegment: 100,
  maxStepDelayMs: 1_000,
} as const;

export const DEFAULTS = {
  button: 'left',
  clickType: 'click',
  numClicks: 1,
  typeDelayMs: 0,
  keyHoldMs: 0,
  stepsPerSegment: 10,
  stepDelayMs: 16,
  dragDelayMs: 0,
} as const;

export interface ClickMouseAction {
  x: number;
  y: number;
  button?: MouseButton;
  click_type?: 'down' | 'up' | 'click';
  num_clicks?: number;
  hold_keys?: string[];
}
export interface MoveMouseAction {
  x: number;
  y: number;
  smooth?: boolean;
  duration_ms?: number;
  hold_keys?: string[];
}
export interface TypeTextAction {
  text: string;
  delay?: number;
}
export interface PressKeyAction {
  keys: string[];
  duration?: number;
  hold_keys?: string[];
}
export interface ScrollAction {
  x: number;
  y: number;
  delta_x?: number;
  delta_y?: number;
  hold_keys?: string[];
}
export interface DragMouseAction {
  path: Array<[number, number]>;
  button?: (typeof DRAG_BUTTONS)[number];
  delay?: number;
  steps_per_segment?: number;
  step_delay_ms?: number;
  smooth?: boolean;
  duration_ms?: number;
  hold_keys?: string[];
}
export interface SetCursorAction {
  hidden: boolean;
}
export interface SleepAction {
  duration_ms: number;
}

export interface ActionPayloads {
  click_mouse: ClickMouseAction;
  move_mouse: MoveMouseAction;
  type_text: TypeTextAction;
  press_key: PressKeyAction;
  scroll: ScrollAction;
  drag_mouse: DragMouseAction;
  set_cursor: SetCursorAction;
  sleep: SleepAction;
}

/** `{ "type": "<kind>", "<kind>": {...} }` */
export type Action = { [K in ActionKind]: { type: K } & { [P in K]: ActionPayloads[K] } }[ActionKind];

export interface BatchBody {
  actions: Action[];
}

// ---- JSON schema --------------------------------------------------------------------------------

const L = BATCH_LIMITS;
const coordinate = { type: 'integer', minimum: 0, maximum: L.maxCoordinate } as const;
const holdKeys = {
  type: 'array',
  maxItems: L.maxHoldKeys,
  items: { type: 'string', minLength: 1, maxLength: 16 },
  description: 'Modifiers held during the action: shift, ctrl/control, alt, meta/super (case-insensitive).',
} as const;
const moveDuration = {
  type: 'integer',
  minimum: L.minMoveDurationMs,
  maximum: L.maxMoveDurationMs,
  description: 'Milliseconds of a smooth move (smooth only); without it 80 to 600 by distance.',
} as const;
const scrollDelta = {
  type: 'integer',
  minimum: -L.maxScrollUnits,
  maximum: L.maxScrollUnits,
  default: 0,
  description: 'Wheel units of 100 CSS px; delta_x or delta_y is non-zero.',
} as const;

function payload(properties: Record<string, unknown>, required: string[]): Record<string, unknown> {
  return { type: 'object', properties, required, additionalProperties: false };
}

const PAYLOAD_SCHEMAS: Record<ActionKind, Record<string, unknown>> = {
  click_mouse: payload(
    {
      x: coordinate,
      y: coordinate,
      button: { type: 'string', enum: MOUSE_BUTTONS, default: DEFAULTS.button },
      click_type: { type: 'string', enum: ['down', 'up', 'click'], default: DEFAULTS.clickType },
      num_clicks: { type: 'integer', minimum: 1, maximum: L.maxClicks, default: DEFAULTS.numClicks },
      hold_keys: holdKeys,
    },
    ['x', 'y'],
  ),
  move_mouse: payload({ x: coordinate, y: coordinate, smooth: { type: 'boolean', default: false }, duration_ms: moveDuration, hold_keys: holdKeys }, [
    'x',
    'y',
  ]),
  type_text: payload(
    {
      text: { type: 'string', minLength: 1, maxLength: L.maxTextLength },
      delay: { type: 'integer', minimum: 0, maximum: L.maxTypeDelayMs, default: DEFAULTS.typeDelayMs, description: 'Milliseconds between keys.' },
    },
    ['text'],
  ),
  press_key: payload(
    {
      keys: {
        type: 'array',
        minItems: 1,
        maxItems: L.maxKeys,
        items: { type: 'string', minLength: 1, maxLength: 64 },
        description: 'X keysym names or combos, pressed one after the other: Return, ctrl+a, Ctrl+Shift+Tab, F5, a.',
      },
      duration: { type: 'integer', minimum: 0, maximum: L.maxKeyHoldMs, default: DEFAULTS.keyHoldMs, description: 'Milliseconds each key is held; 0 taps.' },
      hold_keys: holdKeys,
    },
    ['keys'],
  ),
  scroll: payload(
    {
      x: coordinate,
      y: coordinate,
      delta_x: scrollDelta,
      delta_y: scrollDelta,
      hold_keys: holdKeys,
    },
    ['x', 'y'],
  ),
  drag_mouse: payload(
    {
      path: {
        type: 'array',
        minItems: 2,
        maxItems: L.maxPathPoints,
        items: { type: 'array', minItems: 2, maxItems: 2, items: coordinate },
      },
      button: { type: 'string', enum: DRAG_BUTTONS, default: DEFAULTS.button },
      delay: { type: 'integer', minimum: 0, maximum: L.maxDragDelayMs, default: DEFAULTS.dragDelayMs, description: 'Milliseconds after the press.' },
      steps_per_segment: { type: 'integer', minimum: 1, maximum: L.maxStepsPerSegment, default: DEFAULTS.stepsPerSegment },
      step_delay_ms: { type: 'integer', minimum: 0, maximum: L.maxStepDelayMs, default: DEFAULTS.stepDelayMs, description: 'Milliseconds between steps.' },
      smooth: { type: 'boolean', default: false },
      duration_ms: moveDuration,
      hold_keys: holdKeys,
    },
    ['path'],
  ),
  set_cursor: payload({ hidden: { type: 'boolean' } }, ['hidden']),
  sleep: payload({ duration_ms: { type: 'integer', minimum: 0, maximum: L.maxSleepMs } }, ['duration_ms']),
};

/**
 * One action: `type` selects the payload object, which must be present, and no other payload
 * object may be. Each `then` forbids the other kinds' payloads with a `false` schema, so the error
 * points at the extra object itself.
 */
const actionSchema = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string', enum: ACTION_KINDS }, ...PAYLOAD_SCHEMAS },
  additionalProperties: false,
  allOf: ACTION_KINDS.map((kind) => ({
    if: { properties: { type: { const: kind } }, required: ['type'] },
    then: {
      required: [kind],
      properties: Object.fromEntries(ACTION_KINDS.filter((other) => other !== kind).map((other) => [other, false])),
    },
  })),
} as const;

export const batchBodySchema = {
  type: 'object',
  required: ['actions'],
  properties: { actions: { type: 'array', minItems: 1, maxItems: L.maxActions, items: actionSchema } },
  additionalProperties: false,
} as const;
