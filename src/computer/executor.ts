// Runs a validated batch (docs/computer-batch.md): actions in order on the active tab through CDP Input.*,
// stopping at the first failure; batches of the session run one at a time. A failure is a
// BatchFailure carrying the index of the failed action and how many completed; the http layer
// turns it into 422 action_failed or 500.

import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import {
  DEFAULTS,
  type Action,
  type ClickMouseAction,
  type DragMouseAction,
  type MoveMouseAction,
  type PressKeyAction,
  type ScrollAction,
  type TypeTextAction,
} from './batch-schema.ts';
import { assertNever } from '../assert-never.ts';
import { ConnectionClosedError, IgnoredFailures, isTargetGone } from '../browser/cdp-errors.ts';
import { CursorVisibility } from './cursor.ts';
import { TabInput, type PointerState } from './input.ts';
import { holdKey, keyForCharacter, parseCombo, type KeyDefinition } from './keysyms.ts';
import { autoMotionMs, distance, linearSteps, pathLength, smoothPath, smoothSteps, type Point, type TimedPoint } from './motion.ts';
import { CommandTimeout, withDeadline, type InputTarget, type TargetSource } from './targets.ts';

/** One wheel unit, in CSS px (docs/computer-batch.md). */
export const WHEEL_UNIT_PX = 100;

/** Why an action failed: a machine-readable reason and whether it is the caller's (422) or ours (500). */
export type FailureReason = 'no_open_tab' | 'outside_viewport' | 'target_closed' | 'tab_unresponsive' | 'browser_disconnected' | 'aborted' | 'cdp_error';

/** A batch stopped at `index`; `completed` actions ran before it. */
export class BatchFailure extends Error {
  override name = 'BatchFailure';

  constructor(
    readonly index: number,
    readonly kind: Action['type'],
    readonly reason: FailureReason,
    message: string,
    readonly completed: number,
  ) {
    super(message);
  }

  /** 500 for failures the caller could not have avoided or caused; 422 otherwise. */
  get status(): 422 | 500 {
    return this.reason === 'cdp_error' ? 500 : 422;
  }
}

/** An action that cannot be done, for a reason the caller can act on (422). */
class ActionError extends Error {
  constructor(
    readonly reason: Exclude<FailureReason, 'cdp_error'>,
    message: string,
  ) {
    super(message);
  }
}

export interface BatchRunner {
  /** Run the actions in order; rejects with BatchFailure at the first failure. `requestId`: the batch's api_call. */
  run(actions: readonly Action[], signal?: AbortSignal, requestId?: string): Promise<void>;
}

/** Told of every action of a batch (computer_action events, docs/events.md "computer_action"). */
export interface ActionObserver {
  /** The action begins on `targetId`'s tab; the returned function is called when it ends. */
  begin(action: Action, index: number, targetId: string | undefined, requestId: string | undefined): ((error: string | undefined) => void) | undefined;
}

export interface ComputerExecutorOptions {
  /** The current connection's targets; undefined while the browser is disconnected. */
  targets: () => TargetSource | undefined;
  logger?: Logger;
  /** Longest wait for one CDP command of an action (a hung renderer never acks input). */
  commandTimeoutMs?: number;
  /** Told of every action (control events). */
  observer?: ActionObserver;
  /** The agent's count of best-effort failures (a fresh one by default). */
  failures?: IgnoredFailures;
}

export const DEFAULT_COMMAND_TIMEOUT_MS = 10_000;

/** The actions on the active tab's mouse or keyboard (the others need no tab). */
type InputAction = Exclude<Action, { type: 'sleep' | 'set_cursor' }>;

/** One batch's view: the tab of the previous action, to bring a newly active tab to the front. */
interface BatchContext {
  source: TargetSource | undefined;
  signal: AbortSignal | undefined;
  front?: InputTarget;
}

export class ComputerExecutor implements BatchRunner {
  readonly cursor: CursorVisibility;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly pointers = new WeakMap<InputTarget, PointerState>();
  private readonly commandTimeoutMs: number;
  private readonly failures: IgnoredFailures;

  constructor(private readonly options: ComputerExecutorOptions) {
    this.commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    this.failures = options.failures ?? new IgnoredFailures(options.logger);
    this.cursor = new CursorVisibility(this.commandTimeoutMs, this.failures);
    const source = options.targets();
    if (source) this.cursor.follow(source);
  }

  run(actions: readonly Action[], signal?: AbortSignal, requestId?: string): Promise<void> {
    const result = this.queue.then(() => this.runNow(actions, signal, requestId));
    this.queue = result.catch(() => undefined);
    return result;
  }

  private async runNow(actions: readonly Action[], signal: AbortSignal | undefined, requestId?: string): Promise<void> {
    const source = this.options.targets();
    // After a reconnect the new targets must get the hidden cursor too.
    await this.cursor.sync(source).catch((err: unknown) => this.options.logger?.warn({ err: (err as Error).message }, 'cursor state sync failed'));
    const context: BatchContext = { source, signal };
    for (let index = 0; index < actions.length; index++) {
      const action = actions[index]!;
      const ended = this.options.observer?.begin(action, index, source?.activePage()?.targetId, requestId);
      try {
        if (signal?.aborted) throw new ActionError('aborted', 'the client went away before this action ran');
        await this.runAction(action, context);
        ended?.(undefined);
      } catch (err) {
        const failure = this.failure(err, index, action);
        ended?.(failure.message);
        throw failure;
      }
    }
  }

  private failure(err: unknown, index: number, action: Action): BatchFailure {
    const prefix = `action ${index} (${action.type}) failed`;
    const done = `; ${index} of the batch's actions completed`;
    if (err instanceof ActionError) return new BatchFailure(index, action.type, err.reason, `${prefix}: ${err.message}${done}`, index);
    if (err instanceof CommandTimeout) return new BatchFailure(index, action.type, 'tab_unresponsive', `${prefix}: ${err.message}${done}`, index);
    if (err instanceof Error && err.name === 'AbortError') {
      return new BatchFailure(index, action.type, 'aborted', `${prefix}: the client went away${done}`, index);
    }
    if (err instanceof ConnectionClosedError) {
      return new BatchFailure(index, action.type, 'browser_disconnected', `${prefix}: the browser connection was lost${done}`, index);
    }
    if (isTargetGone(err)) return new BatchFailure(index, action.type, 'target_closed', `${prefix}: the tab closed${done}`, index);
    const message = err instanceof Error ? err.message : String(err);
    this.options.logger?.error({ err: message, index, type: action.type }, 'computer action failed');
    return new BatchFailure(index, action.type, 'cdp_error', `${prefix}: ${message}${done}`, index);
  }

  private async runAction(action: Action, context: BatchContext): Promise<void> {
    const { signal } = context;
    switch (action.type) {
      case 'sleep':
        await wait(action.sleep.duration_ms, signal);
        return;
      case 'set_cursor':
        await this.cursor.setHidden(action.set_cursor.hidden, context.source);
        return;
      case 'click_mouse':
      case 'move_mouse':
      case 'type_text':
      case 'press_key':
      case 'scroll':
      case 'drag_mouse':
        await this.runInputAction(action, context);
        return;
      default:
        assertNever(action);
    }
  }

  /** An action on the active tab's mouse or keyboard. */
  private async runInputAction(action: InputAction, context: BatchContext): Promise<void> {
    const input = await this.inputFor(context);
    try {
      await this.perform(action, input, context.signal);
    } catch (err) {
      if (!(err instanceof ActionError) && input.target.isDetached) throw new ActionError('target_closed', 'the tab closed');
      throw err;
    }
  }

  /** The method that performs `action` with the tab's input. */
  private perform(action: InputAction, input: TabInput, signal: AbortSignal | undefined): Promise<void> {
    switch (action.type) {
      case 'click_mouse':
        return this.click(input, action.click_mouse);
      case 'move_mouse':
        return this.move(input, action.move_mouse, signal);
      case 'type_text':
        return this.typeText(input, action.type_text, signal);
      case 'press_key':
        return this.pressKeys(input, action.press_key, signal);
      case 'scroll':
        return this.scroll(input, action.scroll);
      case 'drag_mouse':
        return this.drag(input, action.drag_mouse, signal);
      default:
        return assertNever(action);
    }
  }

  /**
   * The active tab's input, resolved for every action: a popup opened by the previous action is
   * the active tab from then on. A tab the batch had not used yet is brought to the front first,
   * since a hidden tab renders no frames and acknowledges mouse moves only after seconds.
   */
  private async inputFor(context: BatchContext): Promise<TabInput> {
    if (!context.source) throw new ActionError('browser_disconnected', 'the browser is not connected');
    const active = context.source.activePage();
    if (!active) throw new ActionError('no_open_tab', 'there is no open tab');
    const target = withDeadline(active, this.commandTimeoutMs);
    if (context.front !== active) {
      await target.send('Page.bringToFront');
      context.front = active;
    }
    let pointer = this.pointers.get(active);
    if (!pointer) {
      pointer = { x: 0, y: 0, buttons: 0 };
      this.pointers.set(active, pointer);
    }
    return new TabInput(target, pointer, this.failures);
  }

  // ---- actions ------------------------------------------------------------------------------------

  private async click(input: TabInput, a: ClickMouseAction): Promise<void> {
    const point = { x: a.x, y: a.y };
    await assertInViewport(input.target, [point]);
    const button = a.button ?? DEFAULTS.button;
    const clicks = a.num_clicks ?? DEFAULTS.numClicks;
    const clickType = a.click_type ?? DEFAULTS.clickType;
    await input.withModifiers(holdKeys(a.hold_keys), async () => {
      await input.moveTo(point);
      if (clickType === 'down') return input.press(button, clicks);
      if (clickType === 'up') return input.release(button, clicks);
      // clickCount grows with each press: 2 gives a dblclick, as a real double click does.
      for (let count = 1; count <= clicks; count++) {
        await input.press(button, count);
        await input.release(button, count);
      }
    });
  }

  private async move(input: TabInput, a: MoveMouseAction, signal: AbortSignal | undefined): Promise<void> {
    const to = { x: a.x, y: a.y };
    await assertInViewport(input.target, [to]);
    await input.withModifiers(holdKeys(a.hold_keys), async () => {
      if (!a.smooth) return input.moveTo(to);
      const from = input.position;
      await moveAlong(input, smoothSteps(from, to, a.duration_ms ?? autoMotionMs(distance(from, to))), signal);
    });
  }

  private async typeText(input: TabInput, a: TypeTextAction, signal: AbortSignal | undefined): Promise<void> {
    const chars = Array.from(a.text.replace(/\r\n/g, '\n'));
    const delayMs = a.delay ?? DEFAULTS.typeDelayMs;
    for (let i = 0; i < chars.length; i++) {
      if (i > 0) await wait(delayMs, signal);
      const press = keyForCharacter(chars[i]!);
      await input.keyDown(press);
      await input.keyUp(press);
    }
  }

  private async pressKeys(input: TabInput, a: PressKeyAction, signal: AbortSignal | undefined): Promise<void> {
    // Validation has already parsed every combo.
    const combos = a.keys.map((k) => parseCombo(k)!);
    const holdMs = a.duration ?? DEFAULTS.keyHoldMs;
    await input.withModifiers(holdKeys(a.hold_keys), async () => {
      for (const combo of combos) {
        await input.withModifiers(combo.modifiers, async () => {
          if (!combo.key) return wait(holdMs, signal);
          await input.keyDown(combo.key);
          try {
            await wait(holdMs, signal);
          } finally {
            await this.failures.mayFail(input.keyUp(combo.key));
          }
        });
      }
    });
  }

  private async scroll(input: TabInput, a: ScrollAction): Promise<void> {
    const point = { x: a.x, y: a.y };
    await assertInViewport(input.target, [point]);
    const dx = a.delta_x ?? 0;
    const dy = a.delta_y ?? 0;
    await input.withModifiers(holdKeys(a.hold_keys), async () => {
      await input.moveTo(point);
      // One wheel event per unit, as a wheel's notches arrive.
      for (let i = 0; i < Math.max(Math.abs(dx), Math.abs(dy)); i++) {
        await input.wheel(point, i < Math.abs(dx) ? Math.sign(dx) * WHEEL_UNIT_PX : 0, i < Math.abs(dy) ? Math.sign(dy) * WHEEL_UNIT_PX : 0);
      }
    });
  }

  private async drag(input: TabInput, a: DragMouseAction, signal: AbortSignal | undefined): Promise<void> {
    const path = a.path.map(([x, y]) => ({ x, y }));
    await assertInViewport(input.target, path);
    const button = a.button ?? DEFAULTS.button;
    const stepDelay = a.step_delay_ms ?? DEFAULTS.stepDelayMs;
    const steps = a.steps_per_segment ?? DEFAULTS.stepsPerSegment;
    const points: TimedPoint[] = a.smooth
      ? smoothPath(path, a.duration_ms ?? autoMotionMs(pathLength(path)))
      : path.slice(1).flatMap((to, i) => linearSteps(path[i]!, to, steps).map((p) => ({ ...p, waitMs: stepDelay })));
    await input.withModifiers(holdKeys(a.hold_keys), async () => {
      await input.moveTo(path[0]!);
      await input.press(button, 1);
      try {
        await wait(a.delay ?? DEFAULTS.dragDelayMs, signal);
        await moveAlong(input, points, signal);
        await input.release(button, 1);
      } finally {
        // Never leave the button held after a failed drag.
        if (input.isHeld(button)) await this.failures.mayFail(input.release(button, 1));
      }
    });
  }
}

function holdKeys(names: readonly string[] | undefined): KeyDefinition[] {
  // Validation has already checked every name.
  return (names ?? []).map((n) => holdKey(n)!);
}

async function moveAlong(input: TabInput, points: readonly TimedPoint[], signal: AbortSignal | undefined): Promise<void> {
  for (const [i, point] of points.entries()) {
    if (i > 0) await wait(point.waitMs, signal);
    await input.moveTo(point);
  }
}

/** The layout viewport in CSS px; every coordinate must fall inside it. */
async function assertInViewport(target: InputTarget, points: readonly Point[]): Promise<void> {
  const { cssVisualViewport } = await target.send('Page.getLayoutMetrics');
  const width = Math.floor(cssVisualViewport.clientWidth);
  const height = Math.floor(cssVisualViewport.clientHeight);
  for (const p of points) {
    if (p.x < 0 || p.y < 0 || p.x >= width || p.y >= height) {
      throw new ActionError('outside_viewport', `(${p.x}, ${p.y}) is outside the viewport (${width}x${height} CSS px)`);
    }
  }
}

async function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (ms <= 0) {
    if (signal?.aborted) throw new ActionError('aborted', 'the client went away');
    return;
  }
  await delay(ms, undefined, { signal });
}
