// Telemetry event → OTLP log record (docs/export.md "Log records"), and the bounded queue.

import { resourceFromAttributes } from '@opentelemetry/resources';
import { describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { OtlpQueue } from '../../src/export/otlp-queue.ts';
import { hrTimeFromMicros, stackText, toLogRecord } from '../../src/export/otlp-record.ts';

const resource = resourceFromAttributes({ 'service.name': 'browser-telemetry-agent' });
const scope = { name: 'browser-telemetry-agent' };
const record = (event: TelemetryEvent, seq = 7, exportSeq = 3) => toLogRecord(seq, exportSeq, event, resource, scope);

describe('toLogRecord', () => {
  it('names the record after the event type and times it from ts (Unix µs)', () => {
    const r = record({ ts: 1_732_550_000_123_456, type: 'page_load', source: { kind: 'cdp', event: 'Page.loadEventFired' }, data: { cdp_timestamp: 12.5 } });
    expect(r.eventName).toBe('page_load');
    expect(r.hrTime).toEqual([1_732_550_000, 123_456_000]);
    expect(r.hrTimeObserved).toEqual(r.hrTime);
    expect([r.severityNumber, r.severityText, r.body]).toEqual([9, 'INFO', 'page_load']);
    expect(r.attributes).toEqual({
      'bta.seq': 7,
      'bta.export.seq': 3,
      'bta.category': 'page',
      'bta.source.kind': 'cdp',
      'bta.source.event': 'Page.loadEventFired',
      'bta.data.cdp_timestamp': 12.5,
    });
  });

  it('makes console.warn WARN and console_error ERROR, with the text as the body', () => {
    const warn = record({ ts: 1, type: 'console_log', source: { kind: 'cdp' }, data: { level: 'warning', text: 'careful', args: ['careful'] } });
    expect([warn.severityText, warn.body, warn.attributes['bta.data.args']]).toEqual(['WARN', 'careful', undefined]);
    // args is kept when it says more than the body: several arguments, or one that is not the text.
    const several = record({ ts: 1, type: 'console_log', source: { kind: 'cdp' }, data: { level: 'log', text: 'a 1', args: ['a', '1'] } });
    expect([several.body, several.attributes['bta.data.args']]).toEqual(['a 1', ['a', '1']]);
    const other = record({ ts: 1, type: 'console_log', source: { kind: 'cdp' }, data: { level: 'log', text: 'x', args: ['y'] } });
    expect(other.attributes['bta.data.args']).toEqual(['y']);
    const error = record({ ts: 1, type: 'console_error', source: { kind: 'cdp' }, data: { text: 'Uncaught Error: x', line: 3 }, truncated: true });
    expect([error.severityNumber, error.severityText, error.attributes['bta.truncated']]).toEqual([17, 'ERROR', true]);
  });

  it('does not repeat the console text (the body) as an attribute, and gives the stack as code.stacktrace', () => {
    const r = record({
      ts: 1,
      type: 'console_log',
      source: { kind: 'cdp' },
      data: {
        level: 'log',
        text: 'hi',
        args: ['hi'],
        stack_trace: {
          callFrames: [
            { functionName: 'f', scriptId: '4', url: 'http://a/app.js', lineNumber: 9, columnNumber: 2 },
            { functionName: '', scriptId: '4', url: 'http://a/app.js', lineNumber: 20, columnNumber: 0 },
          ],
          parent: { description: 'setTimeout', callFrames: [{ functionName: 'start', scriptId: '5', url: '', lineNumber: 0, columnNumber: 4 }] },
        },
      },
    });
    expect(r.body).toBe('hi');
    expect(r.attributes['bta.data.text']).toBeUndefined();
    expect(r.attributes['bta.data.stack_trace']).toBeUndefined();
    expect(r.attributes['code.stacktrace']).toBe(
      '    at f (http://a/app.js:10:3)\n    at http://a/app.js:21:1\n    --- setTimeout ---\n    at start (<anonymous>:1:5)',
    );
    expect(stackText({ callFrames: [] })).toBe('');
  });

  it('exports source.metadata only when data does not carry the same target', () => {
    const metadata = { cdp_session_id: 'S1', target_id: 'T1', target_type: 'page' };
    const same = record({
      ts: 1,
      type: 'page_load',
      source: { kind: 'cdp', metadata },
      data: { target_id: 'T1', session_id: 'S1', target_type: 'page', cdp_timestamp: 1 },
    });
    expect(same.attributes['bta.source.metadata']).toBeUndefined();
    const none = record({ ts: 1, type: 'page_load', source: { kind: 'cdp', metadata }, data: { cdp_timestamp: 1 } });
    expect(none.attributes['bta.source.metadata']).toEqual(metadata);
  });

  it('maps a failed load to WARN with error.type', () => {
    const r = record({
      ts: 1,
      type: 'network_loading_failed',
      source: { kind: 'cdp' },
      data: { url: 'http://a/x', request_id: '1', error_text: 'net::ERR_FAILED', canceled: false },
    });
    expect(r.severityText).toBe('WARN');
    expect(r.attributes).toMatchObject({ 'url.full': 'http://a/x', 'error.type': 'net::ERR_FAILED', 'bta.data.canceled': false, 'bta.data.request_id': '1' });
    expect(r.body).toBe('net::ERR_FAILED http://a/x');
  });

  it('puts a method semconv does not know under _OTHER, and every value of a repeated header in the array', () => {
    const r = record({
      ts: 1,
      type: 'network_request',
      source: { kind: 'cdp' },
      data: {
        url: 'http://a/dav',
        method: 'PROPFIND',
        headers: { Accept: 'a/b', 'X-Many': 'one\ntwo' },
        request_id: '1',
        document_url: 'http://a/',
        initiator_type: 'other',
      },
    });
    expect(r.attributes).toMatchObject({
      'http.request.method': '_OTHER',
      'http.request.method_original': 'PROPFIND',
      'http.request.header.accept': ['a/b'],
      'http.request.header.x-many': ['one', 'two'],
    });
    expect(r.attributes['bta.data.headers']).toBeUndefined();
    expect(r.body).toBe('PROPFIND http://a/dav');
  });

  it('redacts credentials in url.full', () => {
    const r = record({
      ts: 1,
      type: 'network_response',
      source: { kind: 'cdp' },
      data: { url: 'https://user:pw@a.example/p?q=1', request_id: '1', status: 204, status_text: 'No Content', method: 'GET', headers: {}, mime_type: '' },
    });
    expect(r.attributes['url.full']).toBe('https://REDACTED:REDACTED@a.example/p?q=1');
    expect(r.attributes['http.response.status_code']).toBe(204);
    expect(r.body).toBe('204 GET https://REDACTED:REDACTED@a.example/p?q=1');
  });

  it('keeps the document URL of other events under bta.data.url', () => {
    const r = record({ ts: 1, type: 'console_log', source: { kind: 'cdp' }, data: { url: 'http://a/page', level: 'log', text: 't', args: [] } });
    expect(r.attributes['bta.data.url']).toBe('http://a/page');
    expect(r.attributes['url.full']).toBeUndefined();
  });
});

describe('hrTimeFromMicros', () => {
  it('splits microseconds into seconds and nanoseconds', () => {
    expect(hrTimeFromMicros(0)).toEqual([0, 0]);
    expect(hrTimeFromMicros(1_999_999)).toEqual([1, 999_999_000]);
  });
});

describe('OtlpQueue', () => {
  const event: TelemetryEvent = { ts: 1, type: 'page_load', source: { kind: 'agent' } };

  it('refuses the newest event once the count bound is reached, and takes again after a drop', () => {
    const queue = new OtlpQueue(2, 1000);
    expect([queue.push(1, 1, event, 10), queue.push(2, 2, event, 10), queue.push(3, 3, event, 10)]).toEqual([true, true, false]);
    queue.drop(1);
    expect(queue.push(4, 4, event, 10)).toBe(true);
    expect([queue.length, queue.seqAt(0), queue.seqAt(1), queue.exportSeqAt(1)]).toEqual([2, 2, 4, 4]);
  });

  it('bounds the bytes, but takes one event of any size into an empty queue', () => {
    const queue = new OtlpQueue(10, 100);
    expect(queue.push(1, 1, event, 500)).toBe(true);
    expect(queue.push(2, 2, event, 1)).toBe(false);
    queue.drop(1);
    expect([queue.length, queue.byteSize]).toEqual([0, 0]);
    expect([queue.push(3, 3, event, 60), queue.push(4, 4, event, 40), queue.push(5, 5, event, 1)]).toEqual([true, true, false]);
  });

  it('keeps the order across compactions', () => {
    const queue = new OtlpQueue(5000, 1 << 30);
    for (let seq = 1; seq <= 3000; seq++) queue.push(seq, seq, event, 1);
    queue.drop(2000);
    for (let seq = 3001; seq <= 3500; seq++) queue.push(seq, seq, event, 1);
    expect([queue.length, queue.seqAt(0), queue.seqAt(queue.length - 1), queue.byteSize]).toEqual([1500, 2001, 3500, 1500]);
  });
});
