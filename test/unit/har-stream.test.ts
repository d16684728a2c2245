// harPieces (src/export/har-stream.ts): the HAR document read out of the history page by page.

import { describe, expect, it } from 'vitest';
import type { EventContext, TelemetryEvent } from '../../injected/schema.ts';
import { harPieces } from '../../src/export/har-stream.ts';
import { EventLog } from '../../src/stream/event-log.ts';
import { HistoryReader } from '../../src/stream/history.ts';

const creator = { name: 'browser-telemetry-agent', version: 'test' };
const T0 = 1_795_266_000_000_000;

/** A request and its response with a 500-byte body, on target `target`. */
function exchange(i: number, target = 'TAB1'): TelemetryEvent[] {
  const ctx: EventContext = { target_id: target, target_type: 'page', frame_id: target, loader_id: 'L1', url: `http://a.test/${i}`, nav_seq: 1 };
  return [
    {
      ts: T0 + i * 1000,
      type: 'network_request',
      source: { kind: 'cdp' },
      data: {
        ...ctx,
        request_id: `R${i}`,
        method: 'GET',
        document_url: 'http://a.test/',
        headers: { accept: '*/*' },
        resource_type: 'Fetch',
        initiator_type: 'script',
      },
    },
    {
      ts: T0 + i * 1000 + 500,
      type: 'network_response',
      source: { kind: 'cdp' },
      data: {
        ...ctx,
        request_id: `R${i}`,
        status: 200,
        status_text: 'OK',
        headers: {},
        mime_type: 'text/plain',
        resource_type: 'Fetch',
        body: 'x'.repeat(500),
      },
    },
  ];
}

function logOf(events: TelemetryEvent[]): EventLog {
  const log = new EventLog({ maxEvents: 100_000, maxBytes: 256 * 2 ** 20 });
  for (const e of events) log.append(e);
  return log;
}

describe('harPieces', () => {
  it('hands out pieces of about 1 MiB that join into the whole document', () => {
    const log = logOf(Array.from({ length: 3000 }, (_, i) => exchange(i)).flat());
    const pieces = [...harPieces(new HistoryReader(log, undefined), { lastSeq: log.latestSeq }, { creator })];
    expect(pieces.length).toBeGreaterThan(1);
    for (const piece of pieces) expect(piece.length).toBeLessThan(2 ** 20 + 10_000);
    expect(JSON.parse(pieces.join('')).log.entries).toHaveLength(3000);
  });

  it('exports the events up to lastSeq only', () => {
    const log = logOf([...exchange(1), ...exchange(2)]);
    const har = JSON.parse([...harPieces(new HistoryReader(log, undefined), { lastSeq: 2 }, { creator })].join(''));
    expect(har.log.entries.map((e: { request: { url: string } }) => e.request.url)).toEqual(['http://a.test/1']);
  });

  it('reads only the targets asked for', () => {
    const log = logOf([...exchange(1, 'TAB1'), ...exchange(2, 'TAB2')]);
    const har = JSON.parse([...harPieces(new HistoryReader(log, undefined), { lastSeq: log.latestSeq, targetIds: ['TAB2'] }, { creator })].join(''));
    expect(har.log.entries.map((e: { request: { url: string } }) => e.request.url)).toEqual(['http://a.test/2']);
  });

  it('reads within since and until', () => {
    const log = logOf([...exchange(1), ...exchange(2), ...exchange(3)]);
    const read = { lastSeq: log.latestSeq, sinceTs: T0 + 2000, untilTs: T0 + 3000 };
    const har = JSON.parse([...harPieces(new HistoryReader(log, undefined), read, { creator })].join(''));
    expect(har.log.entries.map((e: { request: { url: string } }) => e.request.url)).toEqual(['http://a.test/2']);
  });
});
