// what_went_wrong's digest (src/mcp/digest.ts, docs/mcp.md "what_went_wrong"): events in, findings
// out, grouped, counted, each with its cause and seqs; fitted to a level with what was left out.

import { describe, expect, it } from 'vitest';
import type { Envelope, EventType } from '../../injected/schema.ts';
import { DIGEST_LEVELS, DigestBuilder, errorKey, renderFindings, summaryOf, worthParsing } from '../../src/mcp/digest.ts';

const TAB = 'T1';
let seq = 0;
let ts = 1_764_000_000_000_000;

function envelope(type: EventType, data: Record<string, unknown>, advanceUs = 1000): Envelope {
  ts += advanceUs;
  return { seq: ++seq, event: { ts, type, category: undefined, source: { kind: 'cdp' }, data } as unknown as Envelope['event'] };
}

function digest(...envelopes: Envelope[]): DigestBuilder {
  const builder = new DigestBuilder();
  for (const item of envelopes) {
    const json = JSON.stringify(item);
    if (worthParsing(json)) builder.add(item);
    else builder.skip(item.seq);
  }
  return builder;
}

const failed = (url: string, error: string, extra: Record<string, unknown> = {}) =>
  envelope('network_loading_failed', { target_id: TAB, url, request_id: `r${seq}`, error_text: error, canceled: false, ...extra });
const response = (url: string, status: number, extra: Record<string, unknown> = {}) =>
  envelope('network_response', {
    target_id: TAB,
    url,
    request_id: `r${seq}`,
    method: 'GET',
    status,
    status_text: '',
    headers: {},
    mime_type: 'text/html',
    ...extra,
  });

describe('failed requests', () => {
  it('groups them by origin with each outcome counted, the first occurrence and its cause', () => {
    const findings = digest(
      response('https://api.test/a?x=1', 500, { caused_by: 'act-1' }),
      failed('https://api.test/b', 'net::ERR_CONNECTION_REFUSED', { caused_by: 'act-1' }),
      response('https://api.test/a?x=2', 500),
      response('https://cdn.test/img.png', 404),
    ).findings();
    expect(findings.totals.failed_requests).toBe(4);
    const { fields } = renderFindings(findings, DIGEST_LEVELS[0]!);
    const [api, cdn] = fields.failed_requests as Array<Record<string, any>>;
    expect(api).toMatchObject({ origin: 'https://api.test', count: 3, outcomes: { '500': 2, 'net::ERR_CONNECTION_REFUSED': 1 } });
    // Requests that differ only in their query are one example, counted.
    expect(api!.requests[0]).toMatchObject({ url: '/a?x=1', status: 500, caused_by: 'act-1', times: 2 });
    expect(api!.requests[1]).toMatchObject({ url: '/b', error: 'net::ERR_CONNECTION_REFUSED', caused_by: 'act-1' });
    expect(cdn).toMatchObject({ origin: 'https://cdn.test', count: 1 });
  });

  it('counts canceled loads apart, never as failures', () => {
    const findings = digest(failed('https://a.test/img', 'net::ERR_ABORTED', { canceled: true })).findings();
    expect(findings.totals).toMatchObject({ failed_requests: 0, canceled_requests: 1 });
    expect(renderFindings(findings, DIGEST_LEVELS[0]!).fields.failed_requests).toBeUndefined();
  });

  it('reads a response under 400 only as far as its text: no finding', () => {
    const ok = response('https://a.test/', 200);
    expect(worthParsing(JSON.stringify(ok))).toBe(false);
    expect(worthParsing(JSON.stringify(response('https://a.test/', 503)))).toBe(true);
    const builder = digest(ok);
    expect(builder.scanned).toBe(1);
    expect(builder.findings().totals.failed_requests).toBe(0);
  });
});

describe('console errors', () => {
  it('groups texts that differ only in their numbers, with the count, the first occurrence and its source', () => {
    const findings = digest(
      envelope('console_error', { target_id: TAB, text: 'no price for sku 4412', source_url: 'https://a.test/app.js', line: 9, caused_by: 'act-2' }),
      envelope('console_error', { target_id: TAB, text: 'no price for sku 4417' }),
      envelope('console_error', { target_id: TAB, text: 'Uncaught TypeError: x is undefined' }),
    ).findings();
    const errors = renderFindings(findings, DIGEST_LEVELS[0]!).fields.console_errors as Array<Record<string, any>>;
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatchObject({ text: 'no price for sku 4412', count: 2, variants: '2 texts differing in their numbers' });
    expect(errors[0]!.first).toMatchObject({ caused_by: 'act-2', source: 'https://a.test/app.js:10' });
    expect(errors[0]!.seqs).toHaveLength(2);
    expect(summaryOf(findings)).toBe('3 console errors (2 kinds)');
  });

  it('makes numbers, hex included, one in the grouping key', () => {
    expect(errorKey('at 0x1F3A, line 12 of 340')).toBe('at 0x#, line # of #');
  });
});

describe('navigations', () => {
  const navigate = (url: string, extra: Record<string, unknown> = {}) =>
    envelope('page_navigation', { target_id: TAB, url, frame_id: 'F', loader_id: 'L', ...extra });
  const settled = () => envelope('page_navigation_settled', { target_id: TAB });

  it('reports one that another navigation replaced before it settled, and not one that settled', () => {
    const findings = digest(navigate('https://a.test/1'), settled(), navigate('https://a.test/2'), navigate('https://a.test/3'), settled()).findings();
    const unsettled = renderFindings(findings, DIGEST_LEVELS[0]!).fields.unsettled_navigations as Array<Record<string, unknown>>;
    expect(unsettled).toEqual([expect.objectContaining({ url: 'https://a.test/2', why: 'another navigation began first' })]);
  });

  it("ends the tab's pending navigation at a crash, whatever its settle timer sends later", () => {
    const findings = digest(navigate('https://a.test/1'), envelope('page_crashed', { target_id: TAB, status: 'crashed' }), settled()).findings();
    expect(renderFindings(findings, DIGEST_LEVELS[0]!).fields.unsettled_navigations).toEqual([expect.objectContaining({ why: 'the tab crashed' })]);
  });

  it("leaves a live session's last navigation alone within the grace, and reports it past it", () => {
    const recent = digest(navigate('https://a.test/1'), envelope('console_log', { target_id: TAB, text: 'x' }, 5_000_000));
    expect(recent.findings(30_000_000).totals.unsettled_navigations).toBe(0);
    const old = digest(navigate('https://a.test/1'), envelope('console_log', { target_id: TAB, text: 'x' }, 40_000_000));
    expect(old.findings(30_000_000).totals.unsettled_navigations).toBe(1);
  });

  it("ignores a blank tab's first document and an iframe's navigation", () => {
    const findings = digest(navigate('about:blank'), navigate('https://a.test/frame', { parent_frame_id: 'P' })).findings(0);
    expect(findings.totals.unsettled_navigations).toBe(0);
  });
});

describe('the other findings', () => {
  it('gives a hang its length, a download its end and a dialog its answer, from the later events', () => {
    const findings = digest(
      envelope('page_unresponsive', { target_id: TAB, threshold_ms: 5000 }),
      envelope('page_responsive', { target_id: TAB, unresponsive_ms: 7400 }),
      envelope('network_download_started', { target_id: TAB, guid: 'g', suggested_filename: 'a.pdf', url: 'https://a.test/a.pdf' }),
      envelope('network_download_finished', { target_id: TAB, guid: 'g', state: 'canceled', received_bytes: 10, total_bytes: 100 }),
      envelope('page_dialog_opened', { target_id: TAB, dialog_type: 'confirm', message: 'Leave?' }),
      envelope('page_dialog_closed', { target_id: TAB, accepted: false, open_ms: 1200 }),
    ).findings();
    const { fields } = renderFindings(findings, DIGEST_LEVELS[0]!);
    expect(fields.hangs).toEqual([expect.objectContaining({ threshold_ms: 5000, unresponsive_ms: 7400 })]);
    expect(fields.downloads).toEqual([expect.objectContaining({ file: 'a.pdf', state: 'canceled', bytes: 10 })]);
    expect(fields.dialogs).toEqual([expect.objectContaining({ message: 'Leave?', accepted: false, open_ms: 1200 })]);
  });

  it('reports a failed action with its error, and not one that went well', () => {
    const action = (outcome: 'ok' | 'error') =>
      envelope('cdp_command', {
        action_id: `act-${seq}`,
        method: 'Page.navigate',
        connection_id: 'c',
        duration_ms: 3,
        outcome,
        ...(outcome === 'error' && { error: 'net::ERR_NAME_NOT_RESOLVED' }),
      });
    const findings = digest(action('ok'), action('error')).findings();
    expect(renderFindings(findings, DIGEST_LEVELS[0]!).fields.failed_actions).toEqual([
      expect.objectContaining({ action: 'CDP Page.navigate', error: 'net::ERR_NAME_NOT_RESOLVED' }),
    ]);
  });

  it('reports a telemetry gap with its length, crashes of services and OOM kills', () => {
    const findings = digest(
      envelope('monitor_disconnected', { reason: 'unresponsive' }),
      envelope('monitor_reconnected', { reconnect_duration_ms: 3000 }),
      envelope('service_crashed', { service_name: 'chromium', phase: 'running', pid: 7, signal: 'SIGKILL' }),
      envelope('system_oom_kill', { pid: 8, process_name: 'chrome', rss_kb: 900_000, browser_process: true }),
    ).findings();
    const { fields } = renderFindings(findings, DIGEST_LEVELS[0]!);
    expect(fields.telemetry_gaps).toEqual([expect.objectContaining({ what: 'monitor_disconnected', gap_ms: 3000 })]);
    expect(fields.crashes).toEqual([expect.objectContaining({ what: 'chromium crashed', signal: 'SIGKILL' })]);
    expect(fields.oom_kills).toEqual([expect.objectContaining({ process: 'chrome', browser_process: true })]);
  });
});

describe('levels', () => {
  it('shows fewer groups and items at a smaller level, says how many were left out, and keeps the summary whole', () => {
    const events: Envelope[] = [];
    for (let i = 0; i < 12; i++) events.push(response(`https://origin${i}.test/x`, 500));
    for (let i = 0; i < 5; i++) events.push(envelope('page_unresponsive', { target_id: `T${i}`, threshold_ms: 5000 }));
    const findings = digest(...events).findings();
    const small = DIGEST_LEVELS[DIGEST_LEVELS.length - 1]!;
    const { fields } = renderFindings(findings, small);
    expect(fields.failed_requests).toHaveLength(small.groups);
    expect(fields.hangs).toHaveLength(small.items);
    expect(fields.left_out).toEqual({ failed_request_origins: 12 - small.groups, hangs: 5 - small.items });
    expect(summaryOf(findings)).toBe('12 failed requests (12 origins), 5 hangs');
  });

  it('names the causes of the findings it shows only', () => {
    const findings = digest(response('https://a.test/', 500, { caused_by: 'act-a' }), response('https://b.test/', 500, { caused_by: 'act-b' })).findings();
    expect([...renderFindings(findings, { groups: 1, examples: 1, text: 60, items: 1 }).causes]).toEqual(['act-a']);
  });

  it('says nothing went wrong when nothing did', () => {
    expect(summaryOf(digest(envelope('console_log', { text: 'fine' })).findings())).toBe('nothing went wrong in the events read');
  });
});
