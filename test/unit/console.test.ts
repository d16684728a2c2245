// Console translators, fed with params recorded from Chromium (test/fixtures/cdp/record.mjs).

import type { Protocol } from 'devtools-protocol';
import { describe, expect, test } from 'vitest';
import type { EventContext } from '../../injected/schema.ts';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.ts';
import { translateConsoleApiCalled, translateExceptionThrown } from '../../src/telemetry/console.ts';
import { consoleApiCalled, exceptionThrown } from '../fixtures/cdp/recorded.ts';

const consoleCalls = consoleApiCalled;
const exceptions = exceptionThrown;

/** A fresh copy of recorded params: translators may reuse parts of them in their output. */
function consoleCall(name: string): Protocol.Runtime.ConsoleAPICalledEvent {
  const params = consoleCalls[name];
  if (!params) throw new Error(`no recorded consoleAPICalled ${name}`);
  return structuredClone(params);
}

function exception(name: string): Protocol.Runtime.ExceptionThrownEvent {
  const params = exceptions[name];
  if (!params) throw new Error(`no recorded exceptionThrown ${name}`);
  return structuredClone(params);
}

const ctx: EventContext = {
  session_id: 'S1',
  target_id: 'T1',
  target_type: 'page',
  frame_id: 'T1',
  loader_id: 'L1',
  url: 'http://fixture.test/',
  nav_seq: 2,
};

const logConsole = (name: string, limits: Limits = DEFAULT_LIMITS) => translateConsoleApiCalled(consoleCall(name), ctx, limits);
const logException = (name: string, limits: Limits = DEFAULT_LIMITS) => translateExceptionThrown(exception(name), ctx, limits);
const frame = (scriptId: string, functionName: string, columnNumber: number) => ({
  functionName,
  scriptId,
  url: 'http://fixture.test/app.js',
  lineNumber: 0,
  columnNumber,
});
const utf8Bytes = (s: string) => Buffer.byteLength(s, 'utf8');

describe('translateConsoleApiCalled', () => {
  test('translates console.log of a string into a console_log event', () => {
    expect(logConsole('log_string')).toEqual({
      type: 'console_log',
      ts: 1795265460179458,
      data: {
        ...ctx,
        level: 'log',
        text: 'hello world',
        args: ['hello world'],
        stack_trace: { callFrames: [frame('3', '', 8)] },
      },
      truncated: false,
    });
  });

  test('translates console.error into a console_error event with level error', () => {
    expect(logConsole('error_with_error_arg')).toEqual({
      type: 'console_error',
      ts: 1795265460314942,
      data: {
        ...ctx,
        level: 'error',
        text: 'failed:',
        args: ['failed:', 'Error: bad thing\n    at fail (http://fixture.test/app.js:1:44)\n    at http://fixture.test/app.js:1:71'],
        stack_trace: { callFrames: [frame('38', 'fail', 26), frame('38', '', 70)] },
      },
      truncated: false,
    });
  });

  test('translates console.warn with level warning and the object rendered', () => {
    expect(logConsole('warn')).toEqual({
      type: 'console_log',
      ts: 1795265460311036,
      data: {
        ...ctx,
        level: 'warning',
        text: 'careful',
        args: ['careful', '{code: 7}'],
        stack_trace: { callFrames: [frame('37', '', 8)] },
      },
      truncated: false,
    });
  });

  test('keeps the whole stack of console.trace', () => {
    expect(logConsole('trace').data.stack_trace).toEqual({
      callFrames: [frame('44', 'inner', 57), frame('44', 'outer', 19), frame('44', '', 74)],
    });
  });

  test.each([
    ['debug', 'debug'],
    ['info', 'info'],
    ['table', 'table'],
    ['assert_with_message', 'assert'],
    ['trace', 'trace'],
    ['dir', 'dir'],
    ['count', 'count'],
    ['group.0', 'startGroup'],
    ['group.1', 'endGroup'],
  ])('uses the CDP type verbatim as the level of %s', (name, level) => {
    expect(logConsole(name)).toMatchObject({ type: 'console_log', data: { level } });
  });

  test('puts the context fields first in data, in the documented order', () => {
    expect(Object.keys(logConsole('log_string').data)).toEqual([
      'session_id',
      'target_id',
      'target_type',
      'frame_id',
      'loader_id',
      'url',
      'nav_seq',
      'level',
      'text',
      'args',
      'stack_trace',
    ]);
  });

  test('omits context fields that are absent or undefined', () => {
    const partial: EventContext = { session_id: 'S1', target_id: 'T1', target_type: 'service_worker', url: undefined };
    const { data } = translateConsoleApiCalled(consoleCall('log_string'), partial, DEFAULT_LIMITS);
    expect(Object.keys(data)).toEqual(['session_id', 'target_id', 'target_type', 'level', 'text', 'args', 'stack_trace']);
  });

  test('converts the epoch-millisecond timestamp to integer Unix microseconds', () => {
    const params = consoleCall('log_string');
    params.timestamp = 1700000000123.4568;
    expect(translateConsoleApiCalled(params, ctx, DEFAULT_LIMITS).ts).toBe(1700000000123457);
  });

  test('renders a non-string first argument as the text', () => {
    expect(logConsole('log_number').data).toMatchObject({ text: '42', args: ['42', '3.14', '-7'] });
  });

  test('does not apply format strings', () => {
    expect(logConsole('log_format_string').data).toMatchObject({ text: '%s is %d', args: ['%s is %d', 'x', '42'] });
  });

  test('keeps the message Chromium gives a failed assert without one', () => {
    expect(logConsole('assert_without_message').data).toMatchObject({ level: 'assert', text: 'console.assert' });
  });

  test('cuts a 100 KB string argument to maxConsoleTextBytes', () => {
    const { data } = logConsole('log_long_string');
    expect([data.text, data.args]).toEqual(['x'.repeat(16 * 1024), ['x'.repeat(16 * 1024)]]);
  });

  test('marks an event with a cut argument as truncated', () => {
    expect(logConsole('log_long_string').truncated).toBe(true);
  });

  test('cuts an emoji string on a character boundary', () => {
    expect(logConsole('log_emoji_string').data.text).toBe('😀'.repeat((16 * 1024) / 4));
  });

  test('cuts a CJK string on a character boundary', () => {
    const { text } = logConsole('log_cjk_string').data;
    expect([utf8Bytes(text), text]).toEqual([16 * 1024 - 1, '漢字'.repeat(2730) + '漢']);
  });

  test('keeps at most maxConsoleArgs arguments', () => {
    const { args } = logConsole('log_many_args').data;
    expect(args).toEqual(Array.from({ length: 100 }, (_, i) => `arg${i}`));
  });

  test('marks an event with dropped arguments as truncated', () => {
    expect(logConsole('log_many_args').truncated).toBe(true);
  });

  test('keeps the first argument as text when no arguments are kept', () => {
    const { data } = logConsole('log_many_args', { ...DEFAULT_LIMITS, maxConsoleArgs: 0 });
    expect([data.text, data.args]).toEqual(['arg0', []]);
  });

  test('caps the stack trace at maxStackFrames', () => {
    expect(logConsole('log_deep_stack').data.stack_trace?.callFrames).toHaveLength(50);
  });

  test('marks an event with a capped stack trace as truncated', () => {
    expect(logConsole('log_deep_stack').truncated).toBe(true);
  });

  test('drops the parentId of an async console stack', () => {
    expect(logConsole('log_async_stack').data.stack_trace).toEqual({ callFrames: [frame('49', 'later', 60)] });
  });

  test('cuts big arguments further to fit maxEventDataBytes', () => {
    const params = consoleCall('log_many_args');
    for (const arg of params.args) arg.value = 'v'.repeat(10_000);
    const { data } = translateConsoleApiCalled(params, ctx, DEFAULT_LIMITS);
    expect(utf8Bytes(JSON.stringify(data))).toBeLessThanOrEqual(DEFAULT_LIMITS.maxEventDataBytes);
  });

  test('keeps small fields whole when cutting to fit maxEventDataBytes', () => {
    const params = consoleCall('log_many_args');
    for (const arg of params.args) arg.value = 'v'.repeat(10_000);
    const { data } = translateConsoleApiCalled(params, ctx, DEFAULT_LIMITS);
    expect(data).toMatchObject({ ...ctx, level: 'log', stack_trace: { callFrames: [frame('35', '', 8)] } });
  });
});

describe('translateExceptionThrown', () => {
  test('translates an uncaught TypeError into a console_error event', () => {
    expect(logException('uncaught_type_error')).toEqual({
      type: 'console_error',
      ts: 1795265460390014,
      data: {
        ...ctx,
        text: 'Uncaught TypeError: x is not a function',
        line: 0,
        column: 49,
        source_url: 'http://fixture.test/app.js',
        stack_trace: { callFrames: [frame('51', 'run', 49)] },
      },
      truncated: false,
    });
  });

  test('translates an unhandled rejection with an Error', () => {
    expect(logException('unhandled_rejection_error')).toEqual({
      type: 'console_error',
      ts: 1795265460403007,
      data: {
        ...ctx,
        text: 'Uncaught (in promise) Error: boom',
        line: 0,
        column: 34,
        source_url: 'http://fixture.test/app.js',
        stack_trace: { callFrames: [frame('57', 'start', 34), frame('57', '', 56)] },
      },
      truncated: false,
    });
  });

  test('omits source_url and stack_trace of a script that failed to parse', () => {
    expect(logException('syntax_error')).toEqual({
      type: 'console_error',
      ts: 1795265460411440,
      data: { ...ctx, text: "Uncaught SyntaxError: Unexpected token ';'", line: 0, column: 6 },
      truncated: false,
    });
  });

  test('shows a thrown string after Uncaught', () => {
    expect(logException('uncaught_string').data.text).toBe('Uncaught boom');
  });

  test('shows a rejection with a number after Uncaught (in promise)', () => {
    expect(logException('unhandled_rejection_number').data.text).toBe('Uncaught (in promise) 42');
  });

  test('shows a thrown plain object by its preview', () => {
    expect(logException('uncaught_object').data.text).toBe('Uncaught {code: 1}');
  });

  test('shows a thrown null', () => {
    expect(logException('uncaught_null').data.text).toBe('Uncaught null');
  });

  test('keeps every line of a multi-line error message but no stack lines', () => {
    expect(logException('uncaught_multiline_message').data.text).toBe('Uncaught Error: line one\nline two');
  });

  test('shows an error with a cause by its own message', () => {
    expect(logException('uncaught_error_with_cause').data.text).toBe('Uncaught Error: outer');
  });

  test('keeps the async parent of an exception stack', () => {
    expect(logException('uncaught_with_async_stack').data.stack_trace).toEqual({
      callFrames: [frame('50', 'later', 57)],
      parent: { description: 'setTimeout', callFrames: [frame('50', 'schedule', 22), frame('50', '', 71)] },
    });
  });

  test('has no level', () => {
    expect(logException('uncaught_type_error').data).not.toHaveProperty('level');
  });

  test('has no args', () => {
    expect(logException('uncaught_type_error').data).not.toHaveProperty('args');
  });

  test('cuts the exception text to maxConsoleTextBytes', () => {
    const { data } = logException('uncaught_type_error', { ...DEFAULT_LIMITS, maxConsoleTextBytes: 10 });
    expect(data.text).toBe('Uncaught T');
  });

  test('marks an exception with a cut text as truncated', () => {
    expect(logException('uncaught_type_error', { ...DEFAULT_LIMITS, maxConsoleTextBytes: 10 }).truncated).toBe(true);
  });

  test('caps the exception stack trace across its parent chain', () => {
    const { data, truncated } = logException('uncaught_with_async_stack', { ...DEFAULT_LIMITS, maxStackFrames: 1 });
    expect([data.stack_trace, truncated]).toEqual([{ callFrames: [frame('50', 'later', 57)] }, true]);
  });
});
