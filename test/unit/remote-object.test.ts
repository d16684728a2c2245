// Console argument rendering, checked against RemoteObjects recorded from Chromium
// (test/fixtures/cdp/record.mjs).

import { describe, expect, test } from 'vitest';
import { renderRemoteObject } from '../../src/telemetry/remote-object.ts';
import { consoleApiCalled, exceptionThrown } from '../fixtures/cdp/recorded.ts';

const recorded = consoleApiCalled;
const exceptions = exceptionThrown;

/** The rendered arguments of one recorded console call. */
function renderedArgs(name: string): string[] {
  const params = recorded[name];
  if (!params) throw new Error(`no recorded console call ${name}`);
  return params.args.map(renderRemoteObject);
}

describe('primitives', () => {
  test('renders a string verbatim', () => {
    expect(renderedArgs('log_string')).toEqual(['hello world']);
  });

  test('renders a format string verbatim without applying it', () => {
    expect(renderedArgs('log_format_string')).toEqual(['%s is %d', 'x', '42']);
  });

  test('renders numbers as JavaScript prints them', () => {
    expect(renderedArgs('log_number')).toEqual(['42', '3.14', '-7']);
  });

  test('renders NaN from its unserializable value', () => {
    expect(renderedArgs('log_nan')).toEqual(['NaN']);
  });

  test('renders negative zero as -0, as the console does', () => {
    expect(renderedArgs('log_negative_zero')).toEqual(['-0']);
  });

  test('renders the infinities', () => {
    expect(renderedArgs('log_infinities')).toEqual(['Infinity', '-Infinity']);
  });

  test('renders bigints with their n suffix, as the console does', () => {
    expect(renderedArgs('log_bigint')).toEqual(['123n', '-5n']);
  });

  test('renders undefined, null and booleans', () => {
    expect(renderedArgs('log_undefined_null_booleans')).toEqual(['undefined', 'null', 'true', 'false']);
  });

  test('renders a symbol by its description', () => {
    expect(renderedArgs('log_symbol')).toEqual(['Symbol(tag)']);
  });
});

describe('objects', () => {
  test('renders a plain object from its preview', () => {
    expect(renderedArgs('log_plain_object')).toEqual(["{a: 1, b: 'x'}"]);
  });

  test('marks properties left out of the preview with an ellipsis', () => {
    expect(renderedArgs('log_object_overflow')).toEqual(['{a: 1, b: 2, c: 3, d: 4, e: 5, …}']);
  });

  test('collapses nested objects, arrays and functions as DevTools does', () => {
    expect(renderedArgs('log_nested_object')).toEqual(['{user: {…}, list: Array(2), fn: ƒ, n: null, u: undefined}']);
  });

  test('quotes keys that are not identifiers and escapes quotes in strings', () => {
    expect(renderedArgs('log_object_odd_keys')).toEqual([`{2: 'two', 'a-b': 1, s: 'it\\'s "q"', Symbol(k): 3}`]);
  });

  test('renders empty objects and arrays as braces and brackets', () => {
    expect(renderedArgs('log_empty_object_and_array')).toEqual(['{}', '[]']);
  });

  test('prefixes a class instance with its class name', () => {
    expect(renderedArgs('log_class_instance')).toEqual(['Point {x: 1, y: 2}']);
  });

  test('renders a thrown plain object from its preview', () => {
    expect(renderRemoteObject(exceptions.uncaught_object!.exceptionDetails.exception!)).toBe('{code: 1}');
  });

  test('never renders any recorded argument as the bare word object', () => {
    const all = Object.keys(recorded).flatMap(renderedArgs);
    expect(all.filter((s) => s.toLowerCase() === 'object')).toEqual([]);
  });
});

describe('arrays and collections', () => {
  test('renders an array from its preview', () => {
    expect(renderedArgs('log_array')).toEqual(['[1, 2, 3]']);
  });

  test('renders mixed array items as DevTools does', () => {
    expect(renderedArgs('log_array_mixed')).toEqual(["[1, 'two', {…}, Array(1), null, undefined]"]);
  });

  test('renders holes of a sparse array as empty × n', () => {
    expect(renderedArgs('log_sparse_array')).toEqual(['[1, empty × 2, 4]']);
  });

  test('renders the first 100 items of a long array then an ellipsis', () => {
    const expected = `[${Array.from({ length: 100 }, (_, i) => i).join(', ')}, …]`;
    expect(renderedArgs('log_long_array')).toEqual([expected]);
  });

  test('renders a typed array with its type and length, without its buffer fields', () => {
    expect(renderedArgs('log_typed_array')).toEqual(['Uint8Array(3) [1, 2, 3]']);
  });

  test('renders nested object previews inside an array', () => {
    expect(renderedArgs('table')).toEqual(['[{a: 1, b: 2}, {a: 3, b: 4}]']);
  });

  test('renders a map with its entries', () => {
    expect(renderedArgs('log_map')).toEqual(["Map(2) {'a' => 1, 'b' => {c: 2}}"]);
  });

  test('renders a set with its members', () => {
    expect(renderedArgs('log_set')).toEqual(["Set(2) {1, 'two'}"]);
  });

  test('renders promises with their state and result', () => {
    expect(renderedArgs('log_promises')).toEqual(['Promise {<fulfilled>: 1}', 'Promise {<pending>}']);
  });
});

describe('described objects', () => {
  test('renders a function by its source text', () => {
    expect(renderedArgs('log_function')).toEqual(["function greet(name) { return 'hi ' + name; }"]);
  });

  test('renders an arrow function by its source text', () => {
    expect(renderedArgs('log_arrow_function')).toEqual(['(a, b) => a + b']);
  });

  test('renders a class by its source text', () => {
    expect(renderedArgs('log_class')).toEqual(['class Foo {}']);
  });

  test('renders an error as its full stack text', () => {
    expect(renderedArgs('log_error')).toEqual(['Error: boom\n    at makeError (http://fixture.test/app.js:1:31)\n    at http://fixture.test/app.js:1:64']);
  });

  test('renders DOM nodes by their selector-like description', () => {
    expect(renderedArgs('log_dom_nodes')).toEqual(['div#d.box.big', 'body', '#document']);
  });

  test('renders a regexp and a date by their descriptions', () => {
    expect(renderedArgs('log_regexp_and_date')).toEqual(['/ab+c/gi', 'Thu Jan 01 1970 00:00:00 GMT+0000 (Coordinated Universal Time)']);
  });
});
