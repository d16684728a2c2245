import { describe, expect, it } from 'vitest';
import type { Action } from '../../src/computer/batch-schema.ts';
import { BatchFailure, ComputerExecutor } from '../../src/computer/executor.ts';
import type { InputTarget, InputTargetSetupHook, TargetSource } from '../../src/computer/targets.ts';

interface Sent {
  method: string;
  params: any;
}

/** A target that records commands and answers the few that need an answer. */
class FakeTarget {
  readonly sent: Sent[] = [];
  isDetached = false;
  wasWaiting = false;
  /** Per method: a custom answer (may reject or never settle). */
  readonly answers = new Map<string, (params: any) => Promise<unknown>>();
  private scripts = 0;

  constructor(
    readonly targetId: string,
    readonly type = 'page',
  ) {}

  send(method: string, params: any = {}): Promise<unknown> {
    this.sent.push({ method, params });
    const answer = this.answers.get(method);
    if (answer) return answer(params);
    switch (method) {
      case 'Page.getLayoutMetrics':
        return Promise.resolve({ cssVisualViewport: { clientWidth: 800, clientHeight: 600 } });
      case 'Page.addScriptToEvaluateOnNewDocument':
        return Promise.resolve({ identifier: `script-${++this.scripts}` });
      case 'Page.getFrameTree':
        return Promise.resolve({ frameTree: { frame: { id: `${this.targetId}-main` }, childFrames: [{ frame: { id: `${this.targetId}-child` } }] } });
      case 'Page.createIsolatedWorld':
        return Promise.resolve({ executionContextId: 7 });
      default:
        return Promise.resolve({});
    }
  }

  /** Input events only, compactly. */
  input(): string[] {
    return this.sent
      .filter((s) => s.method.startsWith('Input.'))
      .map(({ params: p }) => {
        if (p.type.startsWith('mouse'))
          return `${p.type}(${p.x},${p.y}) ${p.button ?? ''} b${p.buttons} c${p.clickCount ?? ''} m${p.modifiers}`.replace(/ +/g, ' ');
        return `${p.type} ${p.key}${p.text !== undefined ? ` "${p.text}"` : ''} m${p.modifiers}`;
      });
  }

  methods(): string[] {
    return this.sent.map((s) => s.method);
  }
}

class FakeSource implements TargetSource {
  readonly targets: FakeTarget[] = [];
  readonly hooks: InputTargetSetupHook[] = [];

  activePage(): InputTarget | undefined {
    return [...this.targets].reverse().find((t) => t.type === 'page') as InputTarget | undefined;
  }

  all(): Iterable<InputTarget> {
    return this.targets as unknown as InputTarget[];
  }

  addSetupHook(hook: InputTargetSetupHook): () => void {
    this.hooks.push(hook);
    return () => undefined;
  }

  /** A target attached later: the hooks run, as TargetManager runs them before the resume. */
  attach(target: FakeTarget): Array<Promise<unknown>> {
    this.targets.push(target);
    return this.hooks.flatMap((hook) => hook(target as unknown as InputTarget));
  }
}

function setup(options: { commandTimeoutMs?: number } = {}) {
  const source = new FakeSource();
  const tab = new FakeTarget('tab-1');
  source.targets.push(tab);
  let connected: FakeSource | undefined = source;
  const executor = new ComputerExecutor({ targets: () => connected, ...options });
  return { source, tab, executor, disconnect: () => (connected = undefined), switchTo: (next: FakeSource) => (connected = next) };
}

const click = (x: number, y: number, extra: object = {}): Action => ({ type: 'click_mouse', click_mouse: { x, y, ...extra } });

async function failureOf(promise: Promise<unknown>): Promise<BatchFailure> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof BatchFailure) return err;
    throw err;
  }
  throw new Error('the batch did not fail');
}

describe('ComputerExecutor', () => {
  it('clicks with a move, a press and a release at the point', async () => {
    const { tab, executor } = setup();
    await executor.run([click(10, 20)]);
    expect(tab.input()).toEqual(['mouseMoved(10,20) none b0 c0 m0', 'mousePressed(10,20) left b1 c1 m0', 'mouseReleased(10,20) left b0 c1 m0']);
  });

  it('double-clicks with click counts 1 then 2', async () => {
    const { tab, executor } = setup();
    await executor.run([click(5, 5, { num_clicks: 2, button: 'right' })]);
    expect(tab.input().slice(1)).toEqual([
      'mousePressed(5,5) right b2 c1 m0',
      'mouseReleased(5,5) right b0 c1 m0',
      'mousePressed(5,5) right b2 c2 m0',
      'mouseReleased(5,5) right b0 c2 m0',
    ]);
  });

  it('holds hold_keys as real key presses around the action, with their modifier bits', async () => {
    const { tab, executor } = setup();
    await executor.run([click(1, 1, { hold_keys: ['Shift', 'ctrl'] })]);
    expect(tab.input()).toEqual([
      'rawKeyDown Shift m8',
      'rawKeyDown Control m10',
      'mouseMoved(1,1) none b0 c0 m10',
      'mousePressed(1,1) left b1 c1 m10',
      'mouseReleased(1,1) left b0 c1 m10',
      'keyUp Control m8',
      'keyUp Shift m0',
    ]);
  });

  it('presses ctrl+a without typing the letter', async () => {
    const { tab, executor } = setup();
    await executor.run([{ type: 'press_key', press_key: { keys: ['ctrl+a'] } }]);
    expect(tab.input()).toEqual(['rawKeyDown Control m2', 'rawKeyDown a m2', 'keyUp a m2', 'keyUp Control m0']);
  });

  it('types each character as a key down with its text and a key up', async () => {
    const { tab, executor } = setup();
    await executor.run([{ type: 'type_text', type_text: { text: 'aB\n' } }]);
    expect(tab.input()).toEqual(['keyDown a "a" m0', 'keyUp a m0', 'keyDown B "B" m8', 'keyUp B m8', 'keyDown Enter "\r" m0', 'keyUp Enter m0']);
  });

  it('scrolls with one wheel event of 100 px per unit', async () => {
    const { tab, executor } = setup();
    await executor.run([{ type: 'scroll', scroll: { x: 3, y: 4, delta_x: -1, delta_y: 2 } }]);
    const wheels = tab.sent.filter((s) => s.params.type === 'mouseWheel').map((s) => [s.params.deltaX, s.params.deltaY]);
    expect(wheels).toEqual([
      [-100, 100],
      [0, 100],
    ]);
  });

  it('drags with the button held along every step and released at the end', async () => {
    const { tab, executor } = setup();
    await executor.run([
      {
        type: 'drag_mouse',
        drag_mouse: {
          path: [
            [0, 0],
            [20, 0],
          ],
          steps_per_segment: 2,
          step_delay_ms: 0,
        },
      },
    ]);
    expect(tab.input()).toEqual([
      'mouseMoved(0,0) none b0 c0 m0',
      'mousePressed(0,0) left b1 c1 m0',
      'mouseMoved(10,0) left b1 c0 m0',
      'mouseMoved(20,0) left b1 c0 m0',
      'mouseReleased(20,0) left b0 c1 m0',
    ]);
  });

  it('releases the drag button when the drag fails midway', async () => {
    const { tab, executor } = setup();
    let moves = 0;
    tab.answers.set('Input.dispatchMouseEvent', async (p) => {
      if (p.type === 'mouseMoved' && ++moves === 3) throw new Error('Internal error');
      return {};
    });
    await failureOf(
      executor.run([
        {
          type: 'drag_mouse',
          drag_mouse: {
            path: [
              [0, 0],
              [20, 0],
            ],
            steps_per_segment: 2,
            step_delay_ms: 0,
          },
        },
      ]),
    );
    expect(tab.input().at(-1)).toBe('mouseReleased(10,0) left b0 c1 m0');
  });

  it('keeps a button pressed with click_type down across batches', async () => {
    const { tab, executor } = setup();
    await executor.run([click(1, 1, { click_type: 'down' })]);
    await executor.run([{ type: 'move_mouse', move_mouse: { x: 5, y: 5 } }]);
    expect(tab.input().at(-1)).toBe('mouseMoved(5,5) left b1 c0 m0');
  });

  it('stops at the first failure with its index and the number of completed actions', async () => {
    const { tab, executor } = setup();
    const failure = await failureOf(executor.run([click(1, 1), click(900, 1), click(2, 2)]));
    expect([failure.index, failure.completed, failure.reason, failure.status]).toEqual([1, 1, 'outside_viewport', 422]);
    expect(tab.input().filter((e) => e.startsWith('mousePressed'))).toEqual(['mousePressed(1,1) left b1 c1 m0']);
  });

  it('fails with no_open_tab when there is no page', async () => {
    const { source, executor } = setup();
    source.targets.length = 0;
    const failure = await failureOf(executor.run([click(1, 1)]));
    expect([failure.reason, failure.status]).toEqual(['no_open_tab', 422]);
  });

  it('fails with browser_disconnected while there is no connection', async () => {
    const { executor, disconnect } = setup();
    disconnect();
    expect((await failureOf(executor.run([click(1, 1)]))).reason).toBe('browser_disconnected');
  });

  it('reports a tab that closed during the action as target_closed (422)', async () => {
    const { tab, executor } = setup();
    tab.answers.set('Input.dispatchMouseEvent', async () => {
      tab.isDetached = true;
      throw new Error('Session with given id not found.');
    });
    const failure = await failureOf(executor.run([click(1, 1)]));
    expect([failure.reason, failure.status]).toEqual(['target_closed', 422]);
  });

  it('reports an unexpected CDP error as cdp_error (500)', async () => {
    const { tab, executor } = setup();
    tab.answers.set('Input.dispatchKeyEvent', async () => {
      throw new Error('Internal error');
    });
    const failure = await failureOf(
      executor.run([
        { type: 'sleep', sleep: { duration_ms: 0 } },
        { type: 'type_text', type_text: { text: 'x' } },
      ]),
    );
    expect([failure.index, failure.reason, failure.status]).toEqual([1, 'cdp_error', 500]);
    expect(failure.message).toContain('Internal error');
  });

  it('fails with tab_unresponsive when a command gets no answer in time', async () => {
    const { tab, executor } = setup({ commandTimeoutMs: 50 });
    tab.answers.set('Input.dispatchMouseEvent', () => new Promise(() => undefined));
    const failure = await failureOf(executor.run([click(1, 1)]));
    expect([failure.reason, failure.status]).toEqual(['tab_unresponsive', 422]);
  });

  it('runs batches one at a time, in the order they arrived', async () => {
    const { tab, executor } = setup();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    tab.answers.set('Input.dispatchKeyEvent', async (p) => {
      if (p.key === 'a' && p.type === 'keyDown') await gate;
      return {};
    });
    const first = executor.run([{ type: 'type_text', type_text: { text: 'a' } }]);
    const second = executor.run([{ type: 'type_text', type_text: { text: 'b' } }]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(tab.input()).toEqual(['keyDown a "a" m0']);
    release();
    await Promise.all([first, second]);
    expect(tab.input()).toEqual(['keyDown a "a" m0', 'keyUp a m0', 'keyDown b "b" m0', 'keyUp b m0']);
  });

  it('runs the next batch after a failed one', async () => {
    const { executor } = setup();
    await failureOf(executor.run([click(5000, 1)]));
    await expect(executor.run([click(1, 1)])).resolves.toBeUndefined();
  });

  it('stops before the next action once the client went away', async () => {
    const { executor } = setup();
    const abort = new AbortController();
    const run = executor.run([{ type: 'sleep', sleep: { duration_ms: 5000 } }, click(1, 1)], abort.signal);
    abort.abort();
    const failure = await failureOf(run);
    expect([failure.index, failure.reason, failure.completed]).toEqual([0, 'aborted', 0]);
  });

  it('brings the tab to the front once per batch before its first input', async () => {
    const { tab, executor } = setup();
    await executor.run([click(1, 1), click(2, 2)]);
    expect(tab.methods().filter((m) => m === 'Page.bringToFront')).toHaveLength(1);
    expect(tab.methods()[0]).toBe('Page.bringToFront');
  });

  it('runs sleep and set_cursor without an open tab', async () => {
    const { source, executor } = setup();
    source.targets.length = 0;
    await expect(
      executor.run([
        { type: 'sleep', sleep: { duration_ms: 1 } },
        { type: 'set_cursor', set_cursor: { hidden: true } },
      ]),
    ).resolves.toBeUndefined();
  });
});

describe('set_cursor', () => {
  it('registers the hiding style for new documents of every tab and iframe, and applies it to every frame now', async () => {
    const { source, tab, executor } = setup();
    const frame = new FakeTarget('iframe-1', 'iframe');
    const worker = new FakeTarget('worker-1', 'worker');
    source.targets.push(frame, worker);
    await executor.run([{ type: 'set_cursor', set_cursor: { hidden: true } }]);
    for (const target of [tab, frame]) {
      expect(target.methods()).toEqual([
        'Page.enable',
        'Page.addScriptToEvaluateOnNewDocument',
        'Page.getFrameTree',
        'Page.createIsolatedWorld',
        'Page.createIsolatedWorld',
        'Runtime.evaluate',
        'Runtime.evaluate',
      ]);
    }
    expect(tab.sent[1]!.params).toMatchObject({
      worldName: expect.any(String),
      runImmediately: true,
      source: expect.stringContaining('cursor: none !important'),
    });
    expect(worker.sent).toEqual([]);
  });

  it('registers the style on a tab attached later, without evaluating into it before its resume', async () => {
    const { source, executor } = setup();
    await executor.run([{ type: 'set_cursor', set_cursor: { hidden: true } }]);
    const popup = new FakeTarget('tab-2');
    popup.wasWaiting = true;
    await Promise.all(source.attach(popup));
    expect(popup.methods()).toEqual(['Page.enable', 'Page.addScriptToEvaluateOnNewDocument']);
  });

  it('leaves new targets alone while the cursor is shown', async () => {
    const { source, executor } = setup();
    await executor.run([{ type: 'set_cursor', set_cursor: { hidden: false } }]);
    const popup = new FakeTarget('tab-2');
    expect(source.attach(popup)).toEqual([]);
    expect(popup.sent).toEqual([]);
  });

  it('removes the registration and the style when shown again', async () => {
    const { tab, executor } = setup();
    await executor.run([{ type: 'set_cursor', set_cursor: { hidden: true } }]);
    tab.sent.length = 0;
    await executor.run([{ type: 'set_cursor', set_cursor: { hidden: false } }]);
    expect(tab.sent[0]).toEqual({ method: 'Page.removeScriptToEvaluateOnNewDocument', params: { identifier: 'script-1' } });
    expect(tab.sent.filter((s) => s.method === 'Runtime.evaluate').map((s) => s.params.expression)).toEqual([
      expect.stringContaining('.remove()'),
      expect.stringContaining('.remove()'),
    ]);
  });

  it('fails with tab_unresponsive when a tab never answers, and the next batch still runs', async () => {
    const { tab, executor } = setup({ commandTimeoutMs: 50 });
    tab.answers.set('Runtime.evaluate', () => new Promise(() => undefined));
    const failure = await failureOf(executor.run([{ type: 'set_cursor', set_cursor: { hidden: true } }]));
    expect([failure.index, failure.reason, failure.status]).toEqual([0, 'tab_unresponsive', 422]);
    expect(failure.message).toContain('Runtime.evaluate');
    tab.answers.delete('Runtime.evaluate');
    await expect(executor.run([click(1, 1)])).resolves.toBeUndefined();
  });

  it('takes back a registration that answers only after showing the cursor timed out', async () => {
    const { tab, executor } = setup({ commandTimeoutMs: 50 });
    let answer!: (value: unknown) => void;
    tab.answers.set('Page.addScriptToEvaluateOnNewDocument', () => new Promise((resolve) => (answer = resolve)));
    expect((await failureOf(executor.run([{ type: 'set_cursor', set_cursor: { hidden: true } }]))).reason).toBe('tab_unresponsive');
    expect((await failureOf(executor.run([{ type: 'set_cursor', set_cursor: { hidden: false } }]))).reason).toBe('tab_unresponsive');
    answer({ identifier: 'late-script' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(tab.sent.at(-1)).toEqual({ method: 'Page.removeScriptToEvaluateOnNewDocument', params: { identifier: 'late-script' } });
  });

  it('applies a hidden cursor to the targets of a new connection at the next batch', async () => {
    const { executor, switchTo } = setup();
    await executor.run([{ type: 'set_cursor', set_cursor: { hidden: true } }]);
    // A reconnect: a new source with new target objects.
    const fresh = new FakeSource();
    const tab = new FakeTarget('tab-after-reconnect');
    fresh.targets.push(tab);
    switchTo(fresh);
    await executor.run([{ type: 'sleep', sleep: { duration_ms: 0 } }]);
    expect(tab.methods().slice(0, 2)).toEqual(['Page.enable', 'Page.addScriptToEvaluateOnNewDocument']);
    expect(fresh.hooks).toHaveLength(1);
  });
});
