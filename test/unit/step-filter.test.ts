// The step_id filter (docs/events.md "Steps"): parsed like the other filters, matched on the ring's
// metadata, and in SQL at the end of the stored JSON, where `step_id` is the last field of `data`,
// so that a `step_id` inside a step's own data (or a header of that name) never matches. The SQL
// form runs on a real SQLite: the agent's store (envelopes) and an archive-like table (the event
// alone, as the gateway keeps it).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { openSqlite, type SqlParam } from '../../src/sqlite.ts';
import { filterSql, InvalidFilterError, parseFilter } from '../../src/stream/event-filter.ts';
import { EventLog } from '../../src/stream/event-log.ts';
import { HistoryReader } from '../../src/stream/history.ts';
import { EventStore } from '../../src/store/event-store.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'bta-step-filter-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const now = Date.now() * 1000;
const ev = (type: string, data: Record<string, unknown>, truncated = false): TelemetryEvent =>
  ({ ts: now, type, source: { kind: 'kernel_api' }, data, ...(truncated ? { truncated: true } : {}) }) as unknown as TelemetryEvent;

/** Seq 1..8: two steps, their actions and effects, and look-alikes that must not match step-2. */
const EVENTS: TelemetryEvent[] = [
  ev('step', { name: 'one', via: 'http', caller: 'token:1', step_id: 'step-1' }),
  ev('cdp_command', { action_id: 'act-1', method: 'Page.navigate', outcome: 'ok', step_id: 'step-1' }),
  // A later step whose own data names step-2 under the same key, and a response with a header of that name.
  ev('step', { name: 'two', via: 'http', caller: 'token:1', step_id: 'step-2' }),
  ev('step', { name: 'three', data: { step_id: 'step-2', nested: { step_id: 'step-2' } }, via: 'http', caller: 'token:1', step_id: 'step-3' }),
  ev('cdp_command', { action_id: 'act-2', method: 'Input.dispatchMouseEvent', outcome: 'ok', step_id: 'step-2' }),
  ev('console_log', { target_id: 'T', text: '"step_id":"step-2"}}}', caused_by: 'act-2', step_id: 'step-2' }, true),
  ev('network_response', { target_id: 'T', headers: { step_id: 'step-2' }, caused_by: 'act-9', step_id: 'step-1' }),
  ev('console_log', { target_id: 'T', text: 'no step' }),
];
const STEP_2 = [3, 5, 6];

describe('the step_id filter', () => {
  it('parses ids, lists and repeats, and refuses anything else naming step_id', () => {
    expect([...parseFilter({ step_id: ['step-1,step-2', 'step-3'] })!.stepIds!]).toEqual(['step-1', 'step-2', 'step-3']);
    expect(() => parseFilter({ step_id: "step-1'" })).toThrow(InvalidFilterError);
    try {
      parseFilter({ step_id: 'a%b' });
    } catch (err) {
      expect((err as InvalidFilterError).field).toBe('step_id');
    }
  });

  it('matches the same events in the ring and in the store', () => {
    const store = new EventStore({ dataDir: dir, sessionId: 'S', retainBytes: 1 << 30, retainMs: 3_600_000 });
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 26, archive: store });
    for (const event of EVENTS) log.append(structuredClone(event));
    store.flush();
    const filter = parseFilter({ step_id: 'step-2' });
    const read = (reader: HistoryReader) =>
      reader
        .read({ filter, order: 'asc', limit: 100, offset: 1, sinceTs: undefined, untilTs: undefined })
        .items.map((json) => (JSON.parse(json) as { seq: number }).seq);
    expect(read(new HistoryReader(log, undefined))).toEqual(STEP_2);
    expect(read(new HistoryReader(log, store))).toEqual(STEP_2);
    store.close();
  });

  it('reads caused_by in the ring from the action itself and from its effects', () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 26 });
    for (const event of EVENTS) log.append(structuredClone(event));
    const seqs = new HistoryReader(log, undefined)
      .read({ filter: parseFilter({ caused_by: 'act-2' }), order: 'asc', limit: 100, offset: 1, sinceTs: undefined, untilTs: undefined })
      .items.map((json) => (JSON.parse(json) as { seq: number }).seq);
    expect(seqs).toEqual([5, 6]);
  });

  it("matches the event's JSON alone, as the gateway's archive keeps it", () => {
    const db = openSqlite(join(dir, 'archive.db'));
    db.exec('CREATE TABLE archive_events (seq INTEGER PRIMARY KEY, type TEXT NOT NULL, event TEXT NOT NULL)');
    EVENTS.forEach((event, i) => db.prepare('INSERT INTO archive_events (seq, type, event) VALUES (?, ?, ?)').run(i + 1, event.type, JSON.stringify(event)));
    const sql = filterSql(parseFilter({ step_id: 'step-2' }), undefined, undefined, { column: 'CAST(event AS TEXT)', envelope: false });
    const seqs = db
      .prepare(`SELECT seq FROM archive_events WHERE ${sql.clauses.join(' AND ')} ORDER BY seq`)
      .all(...(sql.params as SqlParam[]))
      .map((row) => (row as { seq: number }).seq);
    expect(seqs).toEqual(STEP_2);
    db.close();
  });
});
