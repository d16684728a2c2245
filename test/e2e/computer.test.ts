import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { centerOf, evaluate, load, PLAYGROUND, postBatch, waitUntil } from './support/computer-api.ts';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { startRig, type Tab, type TestRig } from './support/harness.ts';

interface PageState {
  submissions: string[];
  clicks: number;
  contextmenus: Array<{ button: number; target: string }>;
  keys: string[];
  keyEvents: string[];
  mouse: Array<{ type: string; button: number; detail: number; x: number; y: number; shift: boolean; ctrl: boolean; alt: boolean; meta: boolean }>;
  padMoves: Array<[number, number, number]>;
}

describe('computer batch on real Chromium', () => {
  let rig: TestRig;
  let tab: Tab;
  let url: string;
  const state = () => evaluate<PageState>(tab, 'window.state');

  beforeAll(async () => {
    rig = await startRig();
    url = rig.server.route('/playground.html', PLAYGROUND);
    rig.server.route('/plain.html', '<!doctype html><title>plain</title><p id="p">plain page</p>');
    // A tab of its own: the most recently opened page is the active tab.
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
  });
  afterAll(() => rig?.close());
  beforeEach(() => load(tab, url));

  it('runs the form batch: click, type, select all, delete, type, submit', async () => {
    const field = await centerOf(tab, '#name');
    const res = await postBatch(rig, [
      { type: 'click_mouse', click_mouse: field },
      { type: 'type_text', type_text: { text: 'Hello, World!' } },
      { type: 'press_key', press_key: { keys: ['ctrl+a'] } },
      { type: 'press_key', press_key: { keys: ['BackSpace'] } },
      { type: 'type_text', type_text: { text: 'ok' } },
      { type: 'press_key', press_key: { keys: ['Return'] } },
    ]);
    expect(res.status).toBe(204);
    expect(await evaluate(tab, 'document.getElementById("name").value')).toBe('ok');
    expect((await state()).submissions).toEqual(['ok']);
  });

  it('reports the batch as interaction_click and interaction_key events', async () => {
    const field = await centerOf(tab, '#name');
    // Only what this batch causes: an earlier test typed into the same tab, Enter included.
    const before = rig.stream.events.length;
    const ofThisBatch = <T extends 'interaction_click' | 'interaction_key'>(type: T) =>
      rig.stream.events.slice(before).filter((e): e is TelemetryEvent<T> => e.type === type && (e.data as { target_id?: string }).target_id === tab.targetId);
    const res = await postBatch(rig, [
      { type: 'click_mouse', click_mouse: field },
      { type: 'type_text', type_text: { text: 'Hi' } },
      { type: 'press_key', press_key: { keys: ['Return'] } },
    ]);
    expect(res.status).toBe(204);
    await rig.stream.waitFor(() => ofThisBatch('interaction_key').some((e) => e.data!.key === 'Enter'), "the batch's Enter");
    expect(ofThisBatch('interaction_click').map((e) => e.data)).toMatchObject([{ x: field.x, y: field.y, selector: '#name', tag: 'INPUT' }]);
    expect(ofThisBatch('interaction_key').map((e) => e.data!.key)).toEqual(['H', 'i', 'Enter']);
  });

  it('types each character as keydown, keypress, input and keyup', async () => {
    const field = await centerOf(tab, '#name');
    await postBatch(rig, [
      { type: 'click_mouse', click_mouse: field },
      { type: 'type_text', type_text: { text: 'aB', delay: 30 } },
    ]);
    expect((await state()).keyEvents).toEqual(['keydown:a', 'keypress:a', 'input:a', 'keyup:a', 'keydown:B', 'keypress:B', 'input:B', 'keyup:B']);
  });

  it('types characters outside the keyboard table and newlines', async () => {
    const field = await centerOf(tab, '#name');
    await postBatch(rig, [
      { type: 'click_mouse', click_mouse: field },
      { type: 'type_text', type_text: { text: 'é日😀\n' } },
    ]);
    expect(await evaluate(tab, 'document.getElementById("name").value')).toBe('é日😀');
    expect((await state()).submissions).toEqual(['é日😀']);
  });

  it('presses combos with their modifiers and named keys', async () => {
    const field = await centerOf(tab, '#name');
    await postBatch(rig, [
      { type: 'click_mouse', click_mouse: field },
      // Ctrl+Shift+Tab would switch the browser's tab: Chromium never gives it to the page.
      { type: 'press_key', press_key: { keys: ['ctrl+a', 'Ctrl+Shift+Home', 'F2', 'Page_Down', 'exclam', 'A', 'Escape'] } },
    ]);
    const keys = (await state()).keys;
    expect(keys).toEqual(['ctrl+Control', 'ctrl+a', 'ctrl+Control', 'ctrl+shift+Shift', 'ctrl+shift+Home', 'F2', 'PageDown', 'shift+!', 'shift+A', 'Escape']);
  });

  it('holds a key for the requested duration', async () => {
    const field = await centerOf(tab, '#name');
    await postBatch(rig, [{ type: 'click_mouse', click_mouse: field }]);
    await evaluate(
      tab,
      `window.state.times = []; for (const t of ['keydown', 'keyup']) document.addEventListener(t, () => window.state.times.push(performance.now()))`,
    );
    await postBatch(rig, [{ type: 'press_key', press_key: { keys: ['x'], duration: 300 } }]);
    const [down, up] = await evaluate<number[]>(tab, 'window.state.times');
    expect(up! - down!).toBeGreaterThanOrEqual(280);
  });

  it('holds modifiers named in hold_keys during a click, case-insensitively', async () => {
    const button = await centerOf(tab, '#counter');
    await postBatch(rig, [{ type: 'click_mouse', click_mouse: { ...button, hold_keys: ['SHIFT', 'Control'] } }]);
    const click = (await state()).mouse.find((m) => m.type === 'click')!;
    expect([click.shift, click.ctrl, click.alt, click.meta]).toEqual([true, true, false, false]);
  });

  it('selects a word with a double click', async () => {
    const words = await evaluate<{ x: number; y: number }>(
      tab,
      `(() => { const r = document.createRange(); const t = document.getElementById('words').firstChild; r.setStart(t, 6); r.setEnd(t, 10); const b = r.getBoundingClientRect(); return { x: Math.round(b.left + b.width / 2), y: Math.round(b.top + b.height / 2) }; })()`,
    );
    const res = await postBatch(rig, [{ type: 'click_mouse', click_mouse: { ...words, num_clicks: 2 } }]);
    expect(res.status).toBe(204);
    expect(await evaluate(tab, 'String(getSelection())')).toBe('beta');
    expect((await state()).mouse.filter((m) => m.type === 'dblclick')).toHaveLength(1);
  });

  it('fires contextmenu on a right click', async () => {
    const menu = await centerOf(tab, '#menu');
    await postBatch(rig, [{ type: 'click_mouse', click_mouse: { ...menu, button: 'right' } }]);
    expect((await state()).contextmenus).toEqual([{ button: 2, target: 'menu' }]);
  });

  it('presses and releases a button in separate actions with click_type down and up', async () => {
    const pad = await centerOf(tab, '#pad');
    await postBatch(rig, [
      { type: 'click_mouse', click_mouse: { ...pad, click_type: 'down', button: 'middle' } },
      { type: 'move_mouse', move_mouse: { x: pad.x + 20, y: pad.y } },
      { type: 'click_mouse', click_mouse: { x: pad.x + 20, y: pad.y, click_type: 'up', button: 'middle' } },
    ]);
    const s = await state();
    expect(s.mouse.filter((m) => m.type !== 'auxclick').map((m) => `${m.type}:${m.button}:${m.x}`)).toEqual([
      `mousedown:1:${pad.x}`,
      `mouseup:1:${pad.x + 20}`,
    ]);
    // The move happened with the middle button (buttons bit 4) held.
    expect(s.padMoves.at(-1)).toEqual([pad.x + 20, pad.y, 4]);
  });

  it('scrolls the page by 100 CSS px per wheel unit', async () => {
    const res = await postBatch(rig, [{ type: 'scroll', scroll: { x: 100, y: 100, delta_y: 3, delta_x: 2 } }]);
    expect(res.status).toBe(204);
    expect(await waitUntil<number[]>(tab, '[scrollX, scrollY]', ([x, y]) => x === 200 && y === 300)).toEqual([200, 300]);
  });

  it('moves the mouse smoothly through intermediate points to the target', async () => {
    await postBatch(rig, [
      { type: 'move_mouse', move_mouse: { x: 510, y: 130 } },
      { type: 'move_mouse', move_mouse: { x: 690, y: 300, smooth: true, duration_ms: 200 } },
    ]);
    const moves = (await state()).padMoves;
    expect(moves.length).toBeGreaterThan(5);
    expect(moves.at(-1)).toEqual([690, 300, 0]);
  });

  it('drags a draggable element into a drop zone', async () => {
    const from = await centerOf(tab, '#card');
    const to = await centerOf(tab, '#zone');
    const res = await postBatch(rig, [
      {
        type: 'drag_mouse',
        drag_mouse: {
          path: [
            [from.x, from.y],
            [from.x + 40, from.y + 10],
            [to.x, to.y],
          ],
          steps_per_segment: 5,
          step_delay_ms: 5,
        },
      },
    ]);
    expect(res.status).toBe(204);
    expect(await evaluate(tab, 'document.getElementById("card").parentElement.id')).toBe('zone');
  });

  it('drags a pointer-driven element along the path', async () => {
    const from = await centerOf(tab, '#knob');
    await postBatch(rig, [
      {
        type: 'drag_mouse',
        drag_mouse: {
          path: [
            [from.x, from.y],
            [from.x + 100, from.y],
            [from.x + 100, from.y + 50],
          ],
          smooth: true,
          duration_ms: 150,
        },
      },
    ]);
    expect(await centerOf(tab, '#knob')).toEqual({ x: from.x + 100, y: from.y + 50 });
  });

  it('stops at an action outside the viewport with 422, its index, and the earlier effects kept', async () => {
    const button = await centerOf(tab, '#counter');
    const res = await postBatch(rig, [
      { type: 'click_mouse', click_mouse: button },
      { type: 'click_mouse', click_mouse: button },
      { type: 'click_mouse', click_mouse: { x: 5000, y: 10 } },
      { type: 'click_mouse', click_mouse: button },
    ]);
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'action_failed', details: [{ index: 2, code: 'action_failed' }], inner_error: { code: 'outside_viewport' } });
    expect(res.body.message).toContain('2 of the batch');
    expect(res.headers.get('x-completed-actions')).toBe('2');
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect((await state()).clicks).toBe(2);
  });

  it('runs concurrent batches one after the other, never interleaved', async () => {
    const field = await centerOf(tab, '#name');
    await postBatch(rig, [{ type: 'click_mouse', click_mouse: field }]);
    const [a, b] = await Promise.all([
      postBatch(rig, [{ type: 'type_text', type_text: { text: 'aaaa', delay: 20 } }]),
      postBatch(rig, [{ type: 'type_text', type_text: { text: 'bbbb', delay: 20 } }]),
    ]);
    expect([a.status, b.status]).toEqual([204, 204]);
    expect(['aaaabbbb', 'bbbbaaaa']).toContain(await evaluate(tab, 'document.getElementById("name").value'));
  });

  it('waits for the duration of a sleep action', async () => {
    const started = Date.now();
    const res = await postBatch(rig, [{ type: 'sleep', sleep: { duration_ms: 250 } }]);
    expect(res.status).toBe(204);
    expect(Date.now() - started).toBeGreaterThanOrEqual(240);
  });

  describe('set_cursor', () => {
    const cursor = (t: Tab) => evaluate<string>(t, 'getComputedStyle(document.getElementById("p") ?? document.body).cursor');

    it('hides the cursor on a newly navigated page', async () => {
      await postBatch(rig, [{ type: 'set_cursor', set_cursor: { hidden: true } }]);
      await tab.navigate(rig.server.url('/plain.html'));
      expect(
        await waitUntil<string>(
          tab,
          'document.readyState === "complete" && document.getElementById("p") ? getComputedStyle(document.getElementById("p")).cursor : ""',
          (c) => c !== '',
        ),
      ).toBe('none');
      await postBatch(rig, [{ type: 'set_cursor', set_cursor: { hidden: false } }]);
    });

    it('hides the cursor in the document that is already open', async () => {
      await postBatch(rig, [{ type: 'set_cursor', set_cursor: { hidden: true } }]);
      expect(await cursor(tab)).toBe('none');
      await postBatch(rig, [{ type: 'set_cursor', set_cursor: { hidden: false } }]);
    });

    it('hides the cursor in a tab opened after the action', async () => {
      await postBatch(rig, [{ type: 'set_cursor', set_cursor: { hidden: true } }]);
      const other = await rig.driver.newTab();
      try {
        await other.ready(rig.stream);
        await other.navigate(rig.server.url('/plain.html'));
        expect(
          await waitUntil<string>(
            other,
            'document.readyState === "complete" && document.getElementById("p") ? getComputedStyle(document.getElementById("p")).cursor : ""',
            (c) => c !== '',
          ),
        ).toBe('none');
      } finally {
        await other.close();
        await postBatch(rig, [{ type: 'set_cursor', set_cursor: { hidden: false } }]);
      }
    });

    it('answers a set_cursor batch sent right after a tab closed', async () => {
      // Chromium may leave the commands sent to a closing tab unanswered: the batch must not wait
      // for them (it did, and every later batch waited behind it).
      for (let i = 0; i < 8; i++) {
        await postBatch(rig, [{ type: 'set_cursor', set_cursor: { hidden: true } }]);
        const other = await rig.driver.newTab();
        await other.close();
        const res = await postBatch(rig, [{ type: 'set_cursor', set_cursor: { hidden: false } }]);
        expect(res.status).toBe(204);
      }
    });

    it('shows the cursor again in current and new documents after hidden false', async () => {
      await postBatch(rig, [{ type: 'set_cursor', set_cursor: { hidden: true } }]);
      await postBatch(rig, [{ type: 'set_cursor', set_cursor: { hidden: false } }]);
      expect(await cursor(tab)).toBe('auto');
      await load(tab, url);
      expect(await cursor(tab)).toBe('auto');
    });
  });
});
