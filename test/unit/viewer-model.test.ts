import { describe, expect, it } from 'vitest';
import type { Envelope, EventType, TelemetryEvent } from '../../injected/schema.ts';
import { SessionModel } from '../../viewer/model.ts';
import { SseParser } from '../../viewer/sse.ts';

let seq = 0;
function envelope<T extends EventType>(type: T, data: TelemetryEvent<T>['data'], ts = 1_000_000 + seq * 1000): Envelope {
  return { seq: ++seq, event: { ts, type, source: { kind: 'cdp' }, data } };
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
});
