// what_went_wrong (docs/mcp.md "what_went_wrong"): the session's digest. One pass over the event
// types that can go wrong (digest.ts), the actions its findings name looked up by id, and the
// whole fitted into the budget by showing fewer groups, examples and characters until it fits;
// the counts in `summary` and `left_out` always cover everything read.

import type { Envelope } from '../../injected/schema.ts';
import { isoTime } from './compact.ts';
import { describeActions } from './actions.ts';
import { DIGEST_LEVELS, DIGEST_TYPES, DigestBuilder, renderFindings, summaryOf, worthParsing } from './digest.ts';
import { checkQuery, filterOf } from './event-query.ts';
import { scanEvents, seqOf } from './scan.ts';
import type { SessionInfo, SessionSource, TelemetrySource } from './source.ts';

export const DIGEST_DEFAULT_BUDGET = 8192;
/** Events the digest reads at most; past them it says where it stopped. */
export const DIGEST_SCAN_LIMIT = 500_000;
/** A live session's navigation may still be loading: unsettled only this long before the last event. */
const SETTLE_GRACE_US = 30_000_000;

export const READ_MORE =
  'Read more: get_events {caused_by: [action id]} lists what an action caused; get_events {type, since, until} pages the events; get_request {request_id, seq} shows one request (headers, timing, initiators, body); get_screenshot {seq} shows the page near an event; the HAR and trace links hold the whole session.';

export interface WrongArgs {
  session_id?: string;
  since?: string;
  until?: string;
  budget_bytes?: number;
}

export interface WrongAnswer {
  /** The answer's JSON text (the tool's text content). */
  text: string;
  session: SessionSource;
}

export async function whatWentWrong(source: TelemetrySource, args: WrongArgs, nowMs = Date.now()): Promise<WrongAnswer> {
  const window = checkQuery({ since: args.since, until: args.until }, nowMs);
  const session = await source.session(args.session_id);
  const info = await session.info();
  const builder = new DigestBuilder();
  let complete = true;
  const batches = scanEvents(session, {
    filter: filterOf({ type: DIGEST_TYPES }),
    filterQuery: { type: DIGEST_TYPES },
    order: 'asc',
    sinceTs: window.sinceTs,
    untilTs: window.untilTs,
    // A page of error responses carries their headers and bodies: 250 of them hold the event
    // loop about 8 ms (bench section mcp), 500 twice that.
    chunk: 250,
  });
  for await (const batch of batches) {
    for (const json of batch.items) {
      if (worthParsing(json)) builder.add(JSON.parse(json) as Envelope);
      else builder.skip(seqOf(json));
    }
    if (builder.scanned >= DIGEST_SCAN_LIMIT && batch.hasMore) {
      complete = false;
      break;
    }
  }
  const findings = builder.findings(info.status === 'ended' ? 0 : SETTLE_GRACE_US);
  const actions = await describeActions(session, renderFindings(findings, DIGEST_LEVELS[0]!).causes);
  const budget = args.budget_bytes ?? DIGEST_DEFAULT_BUDGET;
  const head = {
    session: sessionLine(info),
    read: {
      events: builder.scanned,
      ...(builder.firstSeq !== undefined && { seqs: `${builder.firstSeq}-${builder.lastSeq}` }),
      ...(window.sinceTs !== undefined && { since: isoTime(window.sinceTs) }),
      ...(window.untilTs !== undefined && { until: isoTime(window.untilTs) }),
      complete,
      ...(!complete && { note: `stopped after ${DIGEST_SCAN_LIMIT} events: narrow with since and until` }),
    },
    summary: summaryOf(findings),
  };
  for (const level of DIGEST_LEVELS) {
    const { fields, causes } = renderFindings(findings, level);
    const text = JSON.stringify({ ...head, ...fields, ...(causes.size > 0 && { actions: actionsOf(causes, actions) }), read_more: READ_MORE });
    if (Buffer.byteLength(text, 'utf8') <= budget) return { text, session };
  }
  // Not even one finding of each kind fits: the counts alone, and how to see the findings.
  const text = JSON.stringify({
    ...head,
    note: 'the budget is too small to show the findings: raise budget_bytes, narrow with since and until, or read them with get_events (type)',
  });
  return { text, session };
}

function sessionLine(info: SessionInfo): Record<string, unknown> {
  const { session_id, status, created_at, ended_at, ended_reason } = info;
  return { session_id, status, created_at, ...(ended_at !== undefined && { ended_at }), ...(ended_reason !== undefined && { ended_reason }) };
}

/** The actions the shown findings name, oldest first; their tab is the findings' (left out here). */
function actionsOf(causes: ReadonlySet<string>, actions: ReadonlyMap<string, Record<string, unknown>>): Record<string, unknown> {
  const shown = [...causes].flatMap((id) => {
    const action = actions.get(id);
    if (action === undefined) return [];
    const { target_id: _target, ...rest } = action;
    return [[id, rest] as const];
  });
  shown.sort((a, b) => Number(a[1].seq) - Number(b[1].seq));
  return Object.fromEntries(shown);
}
