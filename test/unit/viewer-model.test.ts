import { describe, expect, it } from 'vitest';
import type { Envelope, EventDataByType, EventType } from '../../injected/schema.ts';
import { eventOf } from '../../src/event-data.ts';
import { NOTICE_KINDS, SessionModel } from '../../viewer/model.ts';
import { SseParser } from '../../viewer/sse.ts';

let seq = 0;
function envelope<T extends EventType>(type: T, data: EventDataByType[T], ts = 1_000_000 + seq * 1000): Envelope {
  return { seq: ++seq, event: eventOf<T>({ ts, type, source: { kind: 'cdp' }, data }) };
}

describe("the viewer's SSE parser", () => {
  it('parses frames split anywhere, CRLF included, and counts keepalives', () => {
    const parser = new SseParser();
    const text = 'id: 1\ndata: {"a":1}\n\n: keepalive\n\nid: 2\r\ndata: x\r\ndata: y\r\n\r\n';
    const messages = [];
    for (const ch of text) messages.push(...parser.push(ch));
    expect(messages).toEqual([
      { id: '1', data: '{"a":1}' },
      { id: '2', data: 'x\ny' },
    ]);
    expect(parser.comments).toBe(1);
  });
});

describe("the viewer's session model", () => {
  it('merges a request, its redirect and its response into one network entry', () => {
    const model = new SessionModel();
    const headers = { 'Content-Length': '12' };
    model.ingest(
      envelope('network_request', {
        request_id: 'r1',
        method: 'GET',
        url: 'http://a/old',
        document_url: '',
        headers: {},
        initiator_type: 'script',
        target_id: 't1',
      }),
    );
    model.ingest(
      envelope('network_request', {
        request_id: 'r1',
        method: 'GET',
        url: 'http://a/new',
        document_url: '',
        headers: {},
        initiator_type: 'script',
        is_redirect: true,
        redirect_url: 'http://a/old',
      }),
    );
    model.ingest(
      envelope('network_response', {
        request_id: 'r1',
        status: 404,
        status_text: 'Not Found',
        headers,
        mime_type: 'text/plain',
        body: 'not found',
        target_id: 't1',
      }),
    );
    expect(model.network).toHaveLength(1);
    expect(model.network[0]).toMatchObject({ url: 'http://a/new', redirects: ['http://a/old'], status: 404, size: 12, body: 'not found' });
    expect(model.network[0]!.endTs).toBeGreaterThan(model.network[0]!.ts);
  });

  it('holds each seq once, and inserts an older one in order', () => {
    const model = new SessionModel();
    const a = envelope('console_log', { level: 'log', text: 'a', args: [] });
    const b = envelope('console_log', { level: 'warning', text: 'b', args: [] });
    expect(model.ingest(b)).toBe(true);
    expect(model.ingest(b)).toBe(false);
    const epoch = model.epoch;
    expect(model.ingest(a)).toBe(true);
    expect(model.console.map((r) => r.text)).toEqual(['a', 'b']);
    expect(model.console[1]!.level).toBe('warning');
    expect(model.epoch).toBeGreaterThan(epoch);
  });

  it('turns monitor events into notices and keeps them when trimming', () => {
    const model = new SessionModel(10);
    model.ingest(envelope('monitor_disconnected', { reason: 'browser_closed' }));
    for (let i = 0; i < 20; i++) model.ingest(envelope('console_log', { level: 'log', text: `m${i}`, args: [] }));
    expect(model.envelopes.length).toBeLessThanOrEqual(10);
    expect(model.marks.find((m) => m.kind === 'disconnected')?.label).toBe('browser disconnected (browser_closed)');
    expect(model.trimmedBefore).toBeGreaterThan(0);
    expect(model.console[0]!.seq).toBeGreaterThanOrEqual(model.trimmedBefore);
  });

  it('turns the failure signals and live view into Health lane marks, a browser crash into a notice', () => {
    const model = new SessionModel();
    model.ingest(envelope('service_crashed', { service_name: 'chromium', phase: 'running', pid: 7, signal: 'SIGKILL' }));
    model.ingest(envelope('system_oom_kill', { pid: 9, process_name: 'node', rss_kb: 98356, constraint: 'memcg' }));
    model.ingest(envelope('page_crashed', { target_id: 'T', status: 'oom' }));
    model.ingest(envelope('page_recovered', { target_id: 'T', down_ms: 1500 }));
    model.ingest(envelope('page_unresponsive', { target_id: 'T', threshold_ms: 5000 }));
    model.ingest(envelope('page_responsive', { target_id: 'T', unresponsive_ms: 7200 }));
    model.ingest(
      envelope('page_long_task', {
        target_id: 'T',
        source_frame_id: 'T',
        time: 10,
        duration: 300,
        attribution: [{ name: 'self' }],
        scripts: [
          {
            invoker_type: 'user-callback',
            invoker: 'TimerHandler:setTimeout',
            source_url: 'u',
            source_function_name: 'busy',
            source_char_position: 0,
            duration: 300,
          },
        ],
      }),
    );
    model.ingest(envelope('live_view_connect', { session_id: 'v1' }));
    model.ingest(envelope('live_view_disconnect', { session_id: 'v1', duration_ms: 2000 }));
    expect(model.marks.map((m) => [m.kind, m.label])).toEqual([
      ['service_crashed', 'chromium crashed (running, pid 7, SIGKILL)'],
      ['oom_kill', 'OOM kill: node (pid 9, 96 MiB, memcg)'],
      ['tab_crashed', 'tab crashed (oom)'],
      ['tab_recovered', 'tab recovered after 1.5 s'],
      ['unresponsive', 'tab not answering for 5.0 s'],
      ['responsive', 'tab answered again after 7.2 s'],
      ['long_task', 'long task 300 ms in busy'],
      ['live_view', 'viewer v1 opened the live view'],
      ['live_view', 'viewer v1 left after 2.0 s'],
    ]);
    expect(model.marks.find((m) => m.kind === 'responsive')?.value).toBe(7200);
    expect(NOTICE_KINDS.has('service_crashed')).toBe(true);
    expect(SessionModel.categoryOf({ ...model.envelopes[0]!.event, category: 'system' })).toBe('system');
  });
});
