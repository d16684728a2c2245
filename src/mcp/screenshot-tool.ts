// get_screenshot (docs/mcp.md "get_screenshot"): the picture nearest a time or an event, as MCP
// image content: a `monitor_screenshot` of the record (the active tab after its load and after an
// uncaught exception, docs/events.md), or a replay frame where the session has a replay
// (SessionSource.replayFrame). The image goes as recorded: it cannot be cut like text.

import type { Envelope } from '../../injected/schema.ts';
import { isoTime } from './compact.ts';
import { checkQuery, filterOf } from './event-query.ts';
import { ToolError, type Picture, type SessionSource, type TelemetrySource } from './source.ts';

export interface ScreenshotArgs {
  session_id?: string;
  seq?: number;
  at?: string;
}

export type ScreenshotAnswer = { picture: Picture; text: string } | { picture: undefined; text: string };

const SCREENSHOTS = { type: ['monitor_screenshot'] as readonly string[] };

export async function getScreenshot(source: TelemetrySource, args: ScreenshotArgs, nowMs = Date.now()): Promise<ScreenshotAnswer> {
  if (args.seq !== undefined && args.at !== undefined)
    throw new ToolError('seq and at: give one of them (the event or the time to look near), or neither for the latest');
  const at = args.at === undefined ? undefined : checkQuery({ since: args.at }, nowMs).sinceTs!;
  const session = await source.session(args.session_id);
  let ts = at;
  let reference: string;
  if (args.seq !== undefined) {
    ts = await tsOfSeq(session, args.seq);
    reference = `event ${args.seq}`;
  } else {
    reference = at === undefined ? 'the end of the record' : isoTime(at);
  }
  const candidates: Picture[] = [];
  const before = await screenshot(session, 'desc', ts === undefined ? undefined : ts + 1);
  if (before) candidates.push(before);
  if (ts !== undefined) {
    const after = await screenshot(session, 'asc', ts);
    if (after) candidates.push(after);
  }
  if (session.replayFrame) {
    const frame = await session.replayFrame(ts ?? nowMs * 1000);
    if (frame) candidates.push(frame);
  }
  if (candidates.length === 0) {
    return {
      picture: undefined,
      text: JSON.stringify({
        session_id: session.id,
        found: false,
        why: 'no screenshot in the record: monitor_screenshot is taken of the active tab after its load and after an uncaught exception, while the screenshot category is on (--screenshots, docs/events.md)',
      }),
    };
  }
  const target = ts ?? Number.MAX_SAFE_INTEGER;
  const picture = candidates.reduce((best, next) => (Math.abs(next.ts - target) < Math.abs(best.ts - target) ? next : best));
  const offsetMs = ts === undefined ? undefined : Math.round((picture.ts - ts) / 1000);
  return {
    picture,
    text: JSON.stringify({
      session_id: session.id,
      ts: isoTime(picture.ts),
      ...picture.origin,
      near: reference,
      ...(offsetMs !== undefined && {
        offset_ms: offsetMs,
        when: offsetMs === 0 ? 'at it' : offsetMs < 0 ? `${-offsetMs} ms before it` : `${offsetMs} ms after it`,
      }),
    }),
  };
}

async function tsOfSeq(session: SessionSource, seq: number): Promise<number> {
  const page = await session.read({ filter: undefined, filterQuery: {}, order: 'asc', offset: seq, limit: 1 });
  const envelope = page.items[0] === undefined ? undefined : (JSON.parse(page.items[0]) as Envelope);
  if (envelope === undefined || envelope.seq !== seq) throw new ToolError(`seq: session ${session.id} has no event ${seq} (evicted, or never logged)`);
  return envelope.event.ts;
}

/** The screenshot nearest `ts` on one side: desc ends before `untilTs`, asc starts at `sinceTs`. */
async function screenshot(session: SessionSource, order: 'asc' | 'desc', ts: number | undefined): Promise<Picture | undefined> {
  const page = await session.read({
    filter: filterOf(SCREENSHOTS),
    filterQuery: SCREENSHOTS,
    order,
    ...(order === 'asc' ? { sinceTs: ts } : { untilTs: ts }),
    limit: 1,
  });
  const json = page.items[0];
  if (json === undefined) return undefined;
  const { seq, event } = JSON.parse(json) as Envelope;
  if (event.type !== 'monitor_screenshot') return undefined;
  const png = event.data?.png;
  if (png === undefined) return undefined;
  return { ts: event.ts, data: png, mimeType: 'image/png', origin: { seq, source: 'monitor_screenshot' } };
}
