import type { Protocol } from 'devtools-protocol';
import { describe, expect, test } from 'vitest';
import { capStackTrace, enforceDataLimit, truncateUtf8 } from '../../src/telemetry/truncate.ts';
import { consoleApiCalled, exceptionThrown } from '../fixtures/cdp/recorded.ts';

const recorded = consoleApiCalled;
const exceptions = exceptionThrown;

/** A recorded stack trace, copied so that tests cannot affect each other. */
function recordedStack(name: string): Protocol.Runtime.StackTrace {
  const stack = recorded[name]?.stackTrace ?? exceptions[name]?.exceptionDetails.stackTrace;
  if (!stack) throw new Error(`no recorded stack trace ${name}`);
  return structuredClone(stack);
}

const utf8Bytes = (s: string) => Buffer.byteLength(s, 'utf8');
const jsonBytes = (value: unknown) => utf8Bytes(JSON.stringify(value));

describe('truncateUtf8', () => {
  test('returns a short string unchanged and uncut', () => {
    expect(truncateUtf8('hello', 100)).toEqual({ value: 'hello', cut: false });
  });

  test('returns a string of exactly the limit uncut', () => {
    expect(truncateUtf8('漢字漢', 9)).toEqual({ value: '漢字漢', cut: false });
  });

  test('cuts ASCII text to exactly the byte limit', () => {
    expect(truncateUtf8('x'.repeat(1000), 300)).toEqual({ value: 'x'.repeat(300), cut: true });
  });

  test('never splits an emoji surrogate pair', () => {
    expect(truncateUtf8('😀😀', 7)).toEqual({ value: '😀', cut: true });
  });

  test('never splits a CJK character', () => {
    expect(truncateUtf8('漢字漢', 8)).toEqual({ value: '漢字', cut: true });
  });

  test('backs off when the limit lands between the halves of a surrogate pair', () => {
    expect(truncateUtf8('ab😀cdef', 3)).toEqual({ value: 'ab', cut: true });
  });

  test('counts multi-byte characters after ASCII ones', () => {
    expect(truncateUtf8('aé漢😀', 6)).toEqual({ value: 'aé漢', cut: true });
  });

  test('counts a lone surrogate as the three bytes of its replacement character', () => {
    expect(truncateUtf8('\ud800\ud800', 3)).toEqual({ value: '\ud800', cut: true });
  });

  test('cuts to an empty string at a zero limit', () => {
    expect(truncateUtf8('abc', 0)).toEqual({ value: '', cut: true });
  });

  test('returns the longest prefix that fits for every limit', () => {
    const s = 'a😀é漢b\u0001😀😀c';
    const codePoints = Array.from(s);
    for (let max = 0; max <= utf8Bytes(s) + 1; max++) {
      let longest = '';
      for (const cp of codePoints) {
        if (utf8Bytes(longest + cp) > max) break;
        longest += cp;
      }
      expect(truncateUtf8(s, max).value, `limit ${max}`).toBe(longest);
    }
  });
});

describe('capStackTrace', () => {
  test('returns a trace within the limit as it is', () => {
    const stack = recordedStack('trace');
    expect(capStackTrace(stack, 50)).toEqual({ value: stack, cut: false });
  });

  test('keeps the innermost frames of a deep recorded stack', () => {
    const stack = recordedStack('log_deep_stack');
    expect(capStackTrace(stack, 50).value.callFrames).toEqual(stack.callFrames.slice(0, 50));
  });

  test('reports the cut of a deep recorded stack', () => {
    expect(capStackTrace(recordedStack('log_deep_stack'), 50).cut).toBe(true);
  });

  test('counts the frames of the async parent toward the limit', () => {
    const stack = recordedStack('uncaught_with_async_stack');
    expect(capStackTrace(stack, 2)).toEqual({
      value: {
        callFrames: stack.callFrames,
        parent: { description: 'setTimeout', callFrames: stack.parent!.callFrames.slice(0, 1) },
      },
      cut: true,
    });
  });

  test('drops an async parent that has no frames left', () => {
    const stack = recordedStack('uncaught_with_async_stack');
    expect(capStackTrace(stack, 1)).toEqual({ value: { callFrames: stack.callFrames }, cut: true });
  });

  test('keeps the whole parent chain when it fits', () => {
    const stack = recordedStack('uncaught_with_async_stack');
    expect(capStackTrace(stack, 3)).toEqual({ value: stack, cut: false });
  });

  test('drops the parentId reference without reporting a cut', () => {
    const stack = recordedStack('log_async_stack');
    expect(capStackTrace(stack, 50)).toEqual({ value: { callFrames: stack.callFrames }, cut: false });
  });
});

describe('enforceDataLimit', () => {
  test('leaves data within the limit untouched', () => {
    const data = { text: 'hello', args: ['hello', '42'], n: 1 };
    expect(enforceDataLimit(data, 1000)).toBe(false);
    expect(data).toEqual({ text: 'hello', args: ['hello', '42'], n: 1 });
  });

  test('leaves data exactly at the limit untouched', () => {
    const data = { text: 'x'.repeat(5000) };
    expect(enforceDataLimit(data, jsonBytes(data))).toBe(false);
  });

  test('reports a cut when data is over the limit', () => {
    expect(enforceDataLimit({ text: 'x'.repeat(5000) }, 1000)).toBe(true);
  });

  test('brings several big strings under the limit', () => {
    const data = { text: 'a'.repeat(40_000), args: ['a'.repeat(40_000), 'b'.repeat(30_000)], url: 'u'.repeat(20_000) };
    enforceDataLimit(data, 50_000);
    expect(jsonBytes(data)).toBeLessThanOrEqual(50_000);
  });

  test('cuts the largest strings first, leaving small fields whole', () => {
    const data = { session_id: 'S1', text: 'a'.repeat(40_000), args: ['a'.repeat(40_000), 'short'], url: 'u'.repeat(2_000) };
    enforceDataLimit(data, 50_000);
    expect([data.session_id, data.args[1], data.url]).toEqual(['S1', 'short', 'u'.repeat(2_000)]);
  });

  test('cuts the largest strings down to a common length', () => {
    const data = { a: 'a'.repeat(40_000), b: ['b'.repeat(30_000)], c: { d: 'd'.repeat(20_000) } };
    enforceDataLimit(data, 50_000);
    // What the limit leaves for the three strings once the JSON around them is paid for.
    const level = Math.floor((50_000 - jsonBytes({ a: '', b: [''], c: { d: '' } })) / 3);
    expect([data.a.length, data.b[0]!.length, data.c.d.length]).toEqual([level, level, level]);
  });

  test('sheds no more than a few bytes beyond the excess', () => {
    const data = { a: 'a'.repeat(40_000), b: ['b'.repeat(30_000)], c: { d: 'd'.repeat(20_000) } };
    enforceDataLimit(data, 50_000);
    expect(jsonBytes(data)).toBeGreaterThan(50_000 - 3);
  });

  test('cuts strings nested in arrays and objects', () => {
    const data = { stack_trace: { callFrames: [{ functionName: 'f', url: 'data:' + 'x'.repeat(100_000), lineNumber: 0 }] } };
    enforceDataLimit(data, 10_000);
    expect(jsonBytes(data)).toBeLessThanOrEqual(10_000);
  });

  test('keeps every key and non-string value in place', () => {
    const data = { text: 'x'.repeat(10_000), line: 3, ok: true, none: null, args: ['y'.repeat(10_000)] };
    enforceDataLimit(data, 1_000);
    expect({ ...data, text: '', args: [] }).toEqual({ text: '', line: 3, ok: true, none: null, args: [] });
  });

  test('accounts for JSON escaping of quotes and control characters', () => {
    const data = { text: '"\u0001'.repeat(5_000) };
    enforceDataLimit(data, 1_000);
    expect(jsonBytes(data)).toBeLessThanOrEqual(1_000);
  });

  test('cuts multi-byte strings on a character boundary', () => {
    const data = { text: '😀'.repeat(5_000) };
    enforceDataLimit(data, 1_001);
    expect(data.text).toBe('😀'.repeat(Math.floor((1_001 - jsonBytes({ text: '' })) / 4)));
  });

  test('empties every string and stops when even that cannot fit', () => {
    const data = { text: 'x'.repeat(100), numbers: Array.from({ length: 100 }, (_, i) => i) };
    expect([enforceDataLimit(data, 50), data.text]).toEqual([true, '']);
  });
});
