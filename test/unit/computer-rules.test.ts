import { describe, expect, it } from 'vitest';
import { checkBatchRules, requestedWaitMs } from '../../src/computer/batch-rules.ts';
import type { Action } from '../../src/computer/batch-schema.ts';
import { AUTO_MAX_MS } from '../../src/computer/motion.ts';

const fields = (body: unknown) => checkBatchRules(body).map((p) => p.field);

describe('checkBatchRules', () => {
  it('finds nothing wrong with a valid batch', () => {
    expect(
      checkBatchRules({
        actions: [
          { type: 'press_key', press_key: { keys: ['ctrl+a', 'Return'], hold_keys: ['Shift'] } },
          { type: 'scroll', scroll: { x: 1, y: 1, delta_y: -2 } },
          { type: 'sleep', sleep: { duration_ms: 30_000 } },
          { type: 'sleep', sleep: { duration_ms: 30_000 } },
        ],
      }),
    ).toEqual([]);
  });

  it('names every unknown key of press_key by its index', () => {
    expect(fields({ actions: [{ type: 'press_key', press_key: { keys: ['Return', 'Nope', 'ctrl+zz'] } }] })).toEqual([
      'actions[0].press_key.keys[1]',
      'actions[0].press_key.keys[2]',
    ]);
  });

  it('names a hold_keys entry that is not a modifier', () => {
    expect(
      fields({
        actions: [
          {
            type: 'drag_mouse',
            drag_mouse: {
              path: [
                [0, 0],
                [1, 1],
              ],
              hold_keys: ['ctrl', 'a'],
            },
          },
        ],
      }),
    ).toEqual(['actions[0].drag_mouse.hold_keys[1]']);
  });

  it('requires a scroll to have a non-zero delta', () => {
    expect(fields({ actions: [{ type: 'scroll', scroll: { x: 1, y: 1, delta_x: 0, delta_y: 0 } }] })).toEqual(['actions[0].scroll']);
  });

  it('rejects sleeps adding up to more than 60 s on the action list', () => {
    const sleep = (ms: number) => ({ type: 'sleep', sleep: { duration_ms: ms } });
    expect(fields({ actions: [sleep(30_000), sleep(30_000), sleep(1)] })).toEqual(['actions']);
  });

  it('ignores values of the wrong shape, which the schema reports', () => {
    expect(checkBatchRules({ actions: [null, 5, { type: 'press_key', press_key: { keys: 'Return' } }, { type: 'nope' }] })).toEqual([]);
    expect(checkBatchRules('not an object')).toEqual([]);
  });
});

describe('requestedWaitMs', () => {
  const wait = (action: unknown) => requestedWaitMs(action as Action);

  it('counts a sleep at its duration', () => {
    expect(wait({ type: 'sleep', sleep: { duration_ms: 1234 } })).toBe(1234);
  });

  it('counts typing delays between characters', () => {
    expect(wait({ type: 'type_text', type_text: { text: 'abcd', delay: 100 } })).toBe(300);
  });

  it('counts a key hold once per key', () => {
    expect(wait({ type: 'press_key', press_key: { keys: ['a', 'b'], duration: 500 } })).toBe(1000);
  });

  it('counts a smooth move without duration at the longest automatic duration', () => {
    expect(wait({ type: 'move_mouse', move_mouse: { x: 1, y: 1, smooth: true } })).toBe(AUTO_MAX_MS);
    expect(wait({ type: 'move_mouse', move_mouse: { x: 1, y: 1 } })).toBe(0);
  });

  it('counts a drag as its delay plus the step delays of every segment', () => {
    expect(
      wait({
        type: 'drag_mouse',
        drag_mouse: {
          path: [
            [0, 0],
            [10, 0],
            [20, 0],
          ],
          delay: 100,
        },
      }),
    ).toBe(100 + 2 * 10 * 16);
    expect(
      wait({
        type: 'drag_mouse',
        drag_mouse: {
          path: [
            [0, 0],
            [10, 0],
          ],
          smooth: true,
          duration_ms: 700,
        },
      }),
    ).toBe(700);
  });
});
