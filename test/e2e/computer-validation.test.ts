import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { centerOf, evaluate, load, PLAYGROUND, postBatch } from './support/computer-api.ts';
import { startRig, type Tab, type TestRig } from './support/harness.ts';

// Each invalid batch starts with a valid click on the counter button: if anything ran before the
// validation answered, the page's click count would show it.
const click = (p: { x: number; y: number }) => ({ type: 'click_mouse', click_mouse: p });
const sleep = (ms: number) => ({ type: 'sleep', sleep: { duration_ms: ms } });

interface Case {
  name: string;
  /** The invalid action (placed after the click) or a whole body. */
  action?: unknown;
  body?: (valid: unknown) => unknown;
  field: string;
}

const CASES: Case[] = [
  { name: 'a body without actions', body: () => ({}), field: 'actions' },
  { name: 'an empty action list', body: () => ({ actions: [] }), field: 'actions' },
  { name: 'actions that are not a list', body: () => ({ actions: { type: 'sleep' } }), field: 'actions' },
  { name: 'an unknown top-level field', body: (valid) => ({ actions: [valid], dry_run: true }), field: 'dry_run' },
  { name: 'an action that is not an object', action: 5, field: 'actions[1]' },
  { name: 'an unknown action type', action: { type: 'clik', clik: {} }, field: 'actions[1].type' },
  { name: 'a missing type', action: { sleep: { duration_ms: 1 } }, field: 'actions[1].type' },
  { name: 'a missing payload object', action: { type: 'sleep' }, field: 'actions[1].sleep' },
  {
    name: 'a payload object of another kind',
    action: { type: 'sleep', sleep: { duration_ms: 1 }, click_mouse: { x: 1, y: 1 } },
    field: 'actions[1].click_mouse',
  },
  { name: 'an unknown field in an action', action: { type: 'sleep', sleep: { duration_ms: 1 }, delay: 3 }, field: 'actions[1].delay' },
  { name: 'an unknown field in a payload', action: { type: 'click_mouse', click_mouse: { x: 1, y: 1, z: 1 } }, field: 'actions[1].click_mouse.z' },
  { name: 'a missing coordinate', action: { type: 'click_mouse', click_mouse: { y: 1 } }, field: 'actions[1].click_mouse.x' },
  { name: 'a coordinate that is not a number', action: { type: 'click_mouse', click_mouse: { x: 'left', y: 1 } }, field: 'actions[1].click_mouse.x' },
  { name: 'a negative coordinate', action: { type: 'move_mouse', move_mouse: { x: 1, y: -5 } }, field: 'actions[1].move_mouse.y' },
  { name: 'a fractional coordinate', action: { type: 'scroll', scroll: { x: 1.5, y: 1, delta_y: 1 } }, field: 'actions[1].scroll.x' },
  { name: 'an unknown mouse button', action: { type: 'click_mouse', click_mouse: { x: 1, y: 1, button: 'top' } }, field: 'actions[1].click_mouse.button' },
  {
    name: 'an unknown click type',
    action: { type: 'click_mouse', click_mouse: { x: 1, y: 1, click_type: 'tap' } },
    field: 'actions[1].click_mouse.click_type',
  },
  { name: 'zero clicks', action: { type: 'click_mouse', click_mouse: { x: 1, y: 1, num_clicks: 0 } }, field: 'actions[1].click_mouse.num_clicks' },
  {
    name: 'an unknown modifier in hold_keys',
    action: { type: 'click_mouse', click_mouse: { x: 1, y: 1, hold_keys: ['shift', 'hyper'] } },
    field: 'actions[1].click_mouse.hold_keys[1]',
  },
  {
    name: 'a smooth move shorter than 50 ms',
    action: { type: 'move_mouse', move_mouse: { x: 1, y: 1, smooth: true, duration_ms: 10 } },
    field: 'actions[1].move_mouse.duration_ms',
  },
  {
    name: 'a smooth flag that is not a boolean',
    action: { type: 'move_mouse', move_mouse: { x: 1, y: 1, smooth: 'yes' } },
    field: 'actions[1].move_mouse.smooth',
  },
  { name: 'a type_text without text', action: { type: 'type_text', type_text: { delay: 5 } }, field: 'actions[1].type_text.text' },
  { name: 'an empty text', action: { type: 'type_text', type_text: { text: '' } }, field: 'actions[1].type_text.text' },
  { name: 'a negative typing delay', action: { type: 'type_text', type_text: { text: 'x', delay: -1 } }, field: 'actions[1].type_text.delay' },
  { name: 'an empty key list', action: { type: 'press_key', press_key: { keys: [] } }, field: 'actions[1].press_key.keys' },
  { name: 'an unknown keysym', action: { type: 'press_key', press_key: { keys: ['Return', 'Hyper_Q'] } }, field: 'actions[1].press_key.keys[1]' },
  { name: 'a combo whose leading key is no modifier', action: { type: 'press_key', press_key: { keys: ['a+b'] } }, field: 'actions[1].press_key.keys[0]' },
  { name: 'a key hold over 10 s', action: { type: 'press_key', press_key: { keys: ['a'], duration: 20_000 } }, field: 'actions[1].press_key.duration' },
  { name: 'a scroll without any delta', action: { type: 'scroll', scroll: { x: 1, y: 1, delta_x: 0 } }, field: 'actions[1].scroll' },
  { name: 'a scroll of too many units', action: { type: 'scroll', scroll: { x: 1, y: 1, delta_y: 1000 } }, field: 'actions[1].scroll.delta_y' },
  { name: 'a drag path of one point', action: { type: 'drag_mouse', drag_mouse: { path: [[1, 1]] } }, field: 'actions[1].drag_mouse.path' },
  {
    name: 'a drag point of three numbers',
    action: {
      type: 'drag_mouse',
      drag_mouse: {
        path: [
          [1, 1],
          [2, 2, 2],
        ],
      },
    },
    field: 'actions[1].drag_mouse.path[1]',
  },
  {
    name: 'zero steps per segment',
    action: {
      type: 'drag_mouse',
      drag_mouse: {
        path: [
          [1, 1],
          [2, 2],
        ],
        steps_per_segment: 0,
      },
    },
    field: 'actions[1].drag_mouse.steps_per_segment',
  },
  {
    name: 'a drag with the back button',
    action: {
      type: 'drag_mouse',
      drag_mouse: {
        path: [
          [1, 1],
          [2, 2],
        ],
        button: 'back',
      },
    },
    field: 'actions[1].drag_mouse.button',
  },
  { name: 'a set_cursor without hidden', action: { type: 'set_cursor', set_cursor: {} }, field: 'actions[1].set_cursor.hidden' },
  { name: 'a hidden flag that is not a boolean', action: { type: 'set_cursor', set_cursor: { hidden: 'maybe' } }, field: 'actions[1].set_cursor.hidden' },
  { name: 'a sleep over 30 s', action: sleep(30_001), field: 'actions[1].sleep.duration_ms' },
  { name: 'sleeps adding up to over 60 s', body: (valid) => ({ actions: [valid, sleep(30_000), sleep(20_000), sleep(10_001)] }), field: 'actions' },
  { name: 'typing delays adding up to over 60 s', action: { type: 'type_text', type_text: { text: 'x'.repeat(100), delay: 1000 } }, field: 'actions' },
];

describe('computer batch validation', () => {
  let rig: TestRig;
  let tab: Tab;
  let counter: { x: number; y: number };

  beforeAll(async () => {
    rig = await startRig({ tokens: [{ token: 'reader-token', scopes: ['telemetry:read'] }] });
    const url = rig.server.route('/playground.html', PLAYGROUND);
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await load(tab, url);
    counter = await centerOf(tab, '#counter');
  });
  afterAll(() => rig?.close());

  it.each(CASES)('rejects $name with 400 and field $field', async ({ action, body, field }) => {
    const valid = click(counter);
    const res = await postBatch(rig, body ? (body(valid) as { actions?: unknown }) : { actions: [valid, action] });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_input');
    expect(res.body.details.map((d: { field: string }) => d.field)).toEqual([field]);
  });

  it('has checked at least 25 invalid batches without running any action', async () => {
    expect(CASES.length).toBeGreaterThanOrEqual(25);
    await postBatch(rig, [sleep(0)]);
    expect(await evaluate(tab, 'window.state.clicks')).toBe(0);
  });

  it('rejects 101 actions with 400 on the action list', async () => {
    const res = await postBatch(
      rig,
      Array.from({ length: 101 }, () => click(counter)),
    );
    expect([res.status, res.body.details.map((d: { field: string }) => d.field)]).toEqual([400, ['actions']]);
    expect(await evaluate(tab, 'window.state.clicks')).toBe(0);
  });

  it('accepts exactly 100 actions', async () => {
    const res = await postBatch(
      rig,
      Array.from({ length: 100 }, () => sleep(0)),
    );
    expect(res.status).toBe(204);
  });

  it('reports one detail per problem of a batch', async () => {
    const res = await postBatch(rig, [
      { type: 'click_mouse', click_mouse: { x: -1, y: 'a' } },
      { type: 'press_key', press_key: { keys: ['Nope'] } },
      { type: 'teleport' },
    ]);
    expect(res.body.details.map((d: { field: string }) => d.field)).toEqual([
      'actions[0].click_mouse.x',
      'actions[0].click_mouse.y',
      'actions[2].type',
      'actions[1].press_key.keys[0]',
    ]);
    expect(res.body.message).toBe('4 problems in the batch');
  });

  it('marks a rejected batch x-should-retry: false', async () => {
    const res = await postBatch(rig, [{ type: 'teleport' }]);
    expect(res.headers.get('x-should-retry')).toBe('false');
  });

  it('answers a malformed JSON body with 400 bad_request', async () => {
    const res = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}/computer/batch`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-token-with-every-scope', 'content-type': 'application/json' },
      body: '{"actions": [',
    });
    expect([res.status, (await res.json()).code]).toEqual([400, 'bad_request']);
  });

  it('refuses a token without the computer scope with 403', async () => {
    const res = await postBatch(rig, [sleep(0)], 'reader-token');
    expect([res.status, res.body.code]).toEqual([403, 'forbidden']);
  });
});
