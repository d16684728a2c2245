// The budget logic of the MCP tools (docs/mcp.md "Budgets"): how one event is compacted
// (src/mcp/compact.ts), and how get_events pages fill up to the budget and continue with their
// cursor (src/mcp/events-tool.ts), over a real event log and its history read (the RAM ring).

import { describe, expect, it } from 'vitest';
import type { Envelope, EventType, TelemetryEvent } from '../../injected/schema.ts';
import { agentSource, ToolError, type TelemetrySource } from '../../src/mcp/index.ts';
import { compactEnvelope, cutString, Omissions, type CompactOptions } from '../../src/mcp/compact.ts';
import { getEvents, SCAN_LIMIT, type EventsArgs } from '../../src/mcp/events-tool.ts';
import { EventLog } from '../../src/stream/event-log.ts';
import { HistoryReader } from '../../src/stream/history.ts';

const NONE: CompactOptions = { include: new Set(), maxString: 200 };

function envelopeOf(type: EventType, data: Record<string, unknown>, seq = 1): Envelope {
  return { seq, event: { ts: 1_764_000_000_123_456, type, source: { kind: 'cdp' }, data } as unknown as TelemetryEvent };
}

const RESPONSE = {
  target_id: 'T1',
  session_id: 'S1',
  frame_id: 'F1',
  loader_id: 'L1',
  url: 'https://a.test/api',
  nav_seq: 2,
  request_id: '7.1',
  status: 200,
  status_text: 'OK',
  headers: { 'content-type': 'application/json' },
  mime_type: 'application/json',
  body: '{"ok":true}',
  timing: { dns_start: 0 },
  protocol: 'h2',
};

describe('compacting one event', () => {
  it('keeps seq, time, type and the data, and drops headers, bodies, timing and context ids, counting what it dropped', () => {
    const omissions = new Omissions();
    const compact = compactEnvelope(envelopeOf('network_response', RESPONSE, 9), NONE, omissions);
    expect(compact).toEqual({
      seq: 9,
      ts: '2025-11-24T16:00:00.123Z',
      type: 'network_response',
      target_id: 'T1',
      url: 'https://a.test/api',
      nav_seq: 2,
      request_id: '7.1',
      status: 200,
      mime_type: 'application/json',
    });
    // Context ids are left out silently: every event would repeat them.
    expect(Object.fromEntries(omissions.fields)).toEqual({ headers: 1, body: 1, timing: 1, protocol: 1 });
    const described = omissions.describe(NONE)!;
    expect(described.how).toContain('include: ["headers","bodies","timing"]');
    expect(described.how).toContain('get_request with include_body');
  });

  it('keeps each group it is asked to include', () => {
    const compact = compactEnvelope(
      envelopeOf('network_response', RESPONSE),
      { include: new Set(['headers', 'bodies', 'timing', 'context']), maxString: 200 },
      new Omissions(),
    );
    expect(compact).toMatchObject({
      headers: RESPONSE.headers,
      body: RESPONSE.body,
      timing: RESPONSE.timing,
      session_id: 'S1',
      loader_id: 'L1',
      status_text: 'OK',
    });
  });

  it('replaces a stack trace by its top frame, and never keeps an image', () => {
    const omissions = new Omissions();
    const stack = { callFrames: [{ functionName: 'render', scriptId: '1', url: 'https://a.test/app.js', lineNumber: 9, columnNumber: 4 }] };
    expect(compactEnvelope(envelopeOf('console_error', { text: 'boom', stack_trace: stack }), NONE, omissions)).toMatchObject({
      top_frame: 'render (https://a.test/app.js:10:5)',
    });
    expect(compactEnvelope(envelopeOf('monitor_screenshot', { png: 'iVBOR' }), { include: new Set(['bodies']), maxString: 200 }, omissions)).not.toHaveProperty(
      'png',
    );
    expect(omissions.describe(NONE)!.how).toContain('get_screenshot');
  });

  it("keeps a step's own data and a CDP command's connection", () => {
    expect(compactEnvelope(envelopeOf('step', { name: 'log in', data: { user: 'a' }, step_id: 'step-1' }), NONE, new Omissions())).toMatchObject({
      data: { user: 'a' },
    });
    expect(
      compactEnvelope(envelopeOf('cdp_command', { action_id: 'act-1', method: 'Page.navigate', connection_id: 'c1' }), NONE, new Omissions()),
    ).toMatchObject({
      connection_id: 'c1',
    });
  });

  it('cuts long strings with the count of what was left out, never inside a surrogate pair', () => {
    const omissions = new Omissions();
    expect(compactEnvelope(envelopeOf('console_log', { text: 'x'.repeat(300) }), NONE, omissions).text).toBe(`${'x'.repeat(200)}…(+100 chars)`);
    expect(omissions.stringsCut).toBe(1);
    expect(cutString(`ab😀cd`, 3)).toBe('ab…(+4 chars)');
  });

  it('keeps ten items of an array and says how many more there were', () => {
    const omissions = new Omissions();
    const compact = compactEnvelope(envelopeOf('page_long_task', { attribution: Array.from({ length: 14 }, (_, i) => ({ name: `a${i}` })) }), NONE, omissions);
    expect(compact.attribution).toHaveLength(11);
    expect((compact.attribution as unknown[])[10]).toBe('…(+4 more)');
    expect(omissions.arraysCut).toBe(1);
  });

  it('leaves out the target id that the answer names once as its default', () => {
    const options: CompactOptions = { ...NONE, defaultTarget: 'T1' };
    expect(compactEnvelope(envelopeOf('console_log', { target_id: 'T1', text: 'a' }), options, new Omissions())).not.toHaveProperty('target_id');
    expect(compactEnvelope(envelopeOf('console_log', { target_id: 'T2', text: 'a' }), options, new Omissions())).toMatchObject({ target_id: 'T2' });
  });
});

/** A source over a real event log (RAM ring) holding `events`. */
function sourceOf(events: TelemetryEvent[], sessionId = 'S'): TelemetrySource {
  const log = new EventLog({ maxEvents: events.length + 10, maxBytes: 1 << 30 });
  for (const event of events) log.append(event);
  return agentSource(
    { sessionId, createdAt: new Date(), isTerminated: () => false, history: new HistoryReader(log, undefined), latestSeq: () => log.latestSeq },
    { baseUrl: 'http://x', addStep: () => Promise.reject(new ToolError('none')) },
  );
}

const T0 = 1_764_000_000_000_000;
function consoleEvent(i: number, text: string, type: EventType = 'console_log'): TelemetryEvent {
  return {
    ts: T0 + i * 1000,
    type,
    source: { kind: 'cdp' },
    data: { target_id: i % 3 === 0 ? 'TA' : 'TB', level: 'log', text, args: [text] },
  } as unknown as TelemetryEvent;
}

/** Every page of a query, followed with its cursor; each page's JSON text with it. */
async function pages(source: TelemetrySource, args: EventsArgs): Promise<Array<{ text: string; answer: Awaited<ReturnType<typeof getEvents>> }>> {
  const out: Array<{ text: string; answer: Awaited<ReturnType<typeof getEvents>> }> = [];
  let answer = await getEvents(source, args);
  out.push({ text: JSON.stringify(answer), answer });
  while (answer.next_cursor !== undefined) {
    answer = await getEvents(source, { cursor: answer.next_cursor, budget_bytes: args.budget_bytes, max_string: args.max_string });
    out.push({ text: JSON.stringify(answer), answer });
    if (out.length > 10_000) throw new Error('no end');
  }
  return out;
}

describe('get_events pages', () => {
  // Texts of varied lengths, some over max_string: the pages fill unevenly.
  const texts = Array.from({ length: 1500 }, (_, i) => `line ${i} ${'y'.repeat((i * 37) % 400)}`);
  const source = sourceOf(texts.map((text, i) => consoleEvent(i, text)));

  for (const budget of [1024, 3000, 8192, 65_536]) {
    it(`stay within a budget of ${budget} bytes and reach the end with every event once, in order`, async () => {
      const all = await pages(source, { budget_bytes: budget });
      for (const page of all) expect(Buffer.byteLength(page.text, 'utf8')).toBeLessThanOrEqual(budget);
      const seqs = all.flatMap((page) => page.answer.events.map((event) => event.seq as number));
      expect(seqs).toEqual(Array.from({ length: 1500 }, (_, i) => i + 1));
      expect(all.at(-1)!.answer.has_more).toBe(false);
    });
  }

  it('read newest first in desc order, from a time on', async () => {
    const since = new Date((T0 + 1490 * 1000) / 1000).toISOString();
    const answer = await getEvents(source, { order: 'desc', since, budget_bytes: 65_536 });
    expect(answer.events.map((event) => event.seq)).toEqual([1500, 1499, 1498, 1497, 1496, 1495, 1494, 1493, 1492, 1491]);
    expect(answer.has_more).toBe(false);
  });

  it('hold at most limit events', async () => {
    const answer = await getEvents(source, { limit: 3 });
    expect(answer.events).toHaveLength(3);
    expect(answer.has_more).toBe(true);
  });

  it('send an event larger than the budget alone, cut, so the cursor always moves on', async () => {
    const huge = sourceOf([consoleEvent(0, 'z'.repeat(50_000)), consoleEvent(1, 'small')]);
    const args = { budget_bytes: 1024, max_string: 8192, include: ['args' as const] };
    const first = await getEvents(huge, args);
    expect(first.events).toHaveLength(1);
    expect(Buffer.byteLength(JSON.stringify(first), 'utf8')).toBeLessThanOrEqual(1024);
    expect(String(first.events[0]!.text)).toMatch(/^z{64}…\(\+49936 chars\)$/);
    const second = await getEvents(huge, { cursor: first.next_cursor, ...args });
    expect(second.events.map((event) => event.text)).toEqual(['small']);
  });

  it('keep the filters in the cursor, and refuse a cursor given with filters, of another session, or made up', async () => {
    const first = await getEvents(source, { text: 'line 14', budget_bytes: 1024 });
    const next = await getEvents(source, { cursor: first.next_cursor });
    expect(next.events.every((event) => String(event.text).startsWith('line 14'))).toBe(true);
    await expect(getEvents(source, { cursor: first.next_cursor, type: ['console_log'] })).rejects.toThrow(/cursor: it carries the query/);
    await expect(getEvents(sourceOf([], 'other'), { cursor: first.next_cursor })).rejects.toThrow(/session_id: this agent serves session other only/);
    await expect(getEvents(source, { cursor: first.next_cursor, session_id: 'other' })).rejects.toThrow(/cursor: it belongs to session S/);
    await expect(getEvents(source, { cursor: Buffer.from('{"v":1}').toString('base64url') })).rejects.toThrow(/cursor: not a cursor/);
  });
});

describe('the text match', () => {
  it("matches a data string case-insensitively, not a field's name", async () => {
    const source = sourceOf([consoleEvent(0, 'Checkout FAILED'), consoleEvent(1, 'fine'), consoleEvent(2, 'a "quoted" word')]);
    expect((await getEvents(source, { text: 'checkout failed' })).events.map((event) => event.seq)).toEqual([1]);
    expect((await getEvents(source, { text: 'level' })).events).toEqual([]);
    expect((await getEvents(source, { text: '"quoted"' })).events.map((event) => event.seq)).toEqual([3]);
  });

  it('stops after SCAN_LIMIT events read, says how far it searched, and finds the rest with the cursor', async () => {
    const events = Array.from({ length: SCAN_LIMIT + 600 }, (_, i) => consoleEvent(i, i === 5 || i === SCAN_LIMIT + 500 ? 'needle here' : `hay ${i}`));
    const source = sourceOf(events);
    const first = await getEvents(source, { text: 'needle' });
    expect(first.events.map((event) => event.seq)).toEqual([6]);
    expect(first.has_more).toBe(true);
    expect(first.searched).toMatch(/^20000 events read for the text match, up to seq 20000;/);
    const second = await getEvents(source, { cursor: first.next_cursor });
    expect(second.events.map((event) => event.seq)).toEqual([SCAN_LIMIT + 501]);
    expect(second.has_more).toBe(false);
  });
});
