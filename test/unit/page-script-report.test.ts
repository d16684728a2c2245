import { describe, expect, it } from 'vitest';
import { PAGE_SCRIPT_LIMITS } from '../../injected/schema.ts';
import { parsePageScriptReport } from '../../src/telemetry/page-script-report.ts';
import { TokenBucket } from '../../src/telemetry/token-bucket.ts';

const parse = (value: unknown) => parsePageScriptReport(typeof value === 'string' ? value : JSON.stringify(value));
const KEY = { type: 'interaction_key', key: 'a', selector: '#q', tag: 'INPUT' };
const SCROLL = { type: 'interaction_scroll_settled', from_x: 0, from_y: 0, to_x: 0, to_y: -40, target_selector: 'html' };

describe('page script report validation', () => {
  it('accepts each report type in its exact shape', () => {
    expect(parse(KEY).ok).toBe(true);
    expect(parse(SCROLL).ok).toBe(true);
    expect(parse({ type: 'interaction_click', x: 0, y: 0, selector: 'a', tag: 'A', text: '' }).ok).toBe(true);
    expect(parse({ type: 'page_layout_shift', time: 0, value: 0.1, had_recent_input: true }).ok).toBe(true);
    expect(parse({ type: 'page_lcp', time: 1, render_time: 0, load_time: 0, size: 1, element_id: '', url: '' }).ok).toBe(true);
  });

  it('rejects an unknown type, also one of the agent own events', () => {
    expect(parse({ type: 'monitor_disconnected', reason: 'x' })).toEqual({ ok: false, reason: 'unknown type' });
    expect(parse({ type: 'toString' })).toEqual({ ok: false, reason: 'unknown type' });
  });

  it('rejects unknown fields', () => {
    expect(parse({ ...KEY, session_id: 'S' })).toEqual({ ok: false, reason: 'unknown field session_id' });
  });

  it('rejects a missing field', () => {
    const { tag: _tag, ...noTag } = KEY;
    expect(parse(noTag)).toEqual({ ok: false, reason: 'bad field tag' });
  });

  it('rejects fields of the wrong type', () => {
    expect(parse({ ...KEY, key: 7 }).ok).toBe(false);
    expect(parse({ ...SCROLL, to_y: '40' }).ok).toBe(false);
    expect(parse({ ...SCROLL, to_y: 4.5 }).ok).toBe(false);
    expect(parse({ type: 'page_layout_shift', time: 0, value: -1, had_recent_input: false }).ok).toBe(false);
    expect(parse({ type: 'page_layout_shift', time: 0, value: 0.1, had_recent_input: 'no' }).ok).toBe(false);
  });

  it('rejects strings over their size limit', () => {
    expect(parse({ ...KEY, selector: 'a'.repeat(PAGE_SCRIPT_LIMITS.selectorChars + 1) }).ok).toBe(false);
    expect(parse({ ...KEY, key: 'k'.repeat(PAGE_SCRIPT_LIMITS.keyChars + 1) }).ok).toBe(false);
    expect(parse({ ...KEY, selector: '' }).ok).toBe(false);
  });

  it('rejects a payload over the size limit before parsing it', () => {
    expect(parse(' '.repeat(PAGE_SCRIPT_LIMITS.payloadChars + 1))).toEqual({ ok: false, reason: 'payload too large' });
  });

  it('rejects what is not a JSON object', () => {
    expect(parse('{').ok).toBe(false);
    expect(parse('[1]').ok).toBe(false);
    expect(parse('null').ok).toBe(false);
  });
});

describe('TokenBucket', () => {
  it('gives a full burst at once, then nothing until it refills', () => {
    let now = 0;
    const bucket = new TokenBucket(3, 1000, () => now);
    expect([bucket.take(), bucket.take(), bucket.take(), bucket.take()]).toEqual([true, true, true, false]);
    now = 1;
    expect([bucket.take(), bucket.take()]).toEqual([true, false]);
  });

  it('never holds more than its burst', () => {
    let now = 0;
    const bucket = new TokenBucket(2, 1000, () => now);
    now = 60_000;
    expect([bucket.take(), bucket.take(), bucket.take()]).toEqual([true, true, false]);
  });
});
