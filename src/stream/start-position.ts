// Where a new stream starts (docs/events.md): resume after Last-Event-ID, replay the retained history,
// or only new events.

import type { EventLog } from './event-log.ts';

/** Longest accepted Last-Event-ID: anything longer cannot be a safe integer. */
const MAX_SEQ_DIGITS = 16;
const DECIMAL_DIGITS = /^[0-9]+$/;

/**
 * A Last-Event-ID that is not a non-negative decimal integer. Carries the API error code so the
 * http layer can answer 400 `invalid_input` without knowing this module.
 */
export class InvalidLastEventIdError extends Error {
  override name = 'InvalidLastEventIdError';
  readonly code = 'invalid_input';
  readonly status = 400;
  readonly field = 'Last-Event-ID';

  constructor(readonly value: string) {
    super('Last-Event-ID must be a non-negative integer (the seq of the last event received)');
  }
}

export type LogPosition = Pick<EventLog, 'oldestSeq' | 'latestSeq'>;

/**
 * The first seq to send. `lastEventId` is the raw header value (undefined when absent); it wins
 * over `replayAll`. A Last-Event-ID newer than the log means it came from another incarnation of
 * the log, so the client gets everything retained rather than nothing.
 */
export function resolveStartSeq(log: LogPosition, lastEventId: string | undefined, replayAll: boolean): number {
  return resolveStart(log, lastEventId, replayAll).startSeq;
}

/**
 * How a resumed stream relates to what the client had (docs/events.md "Resuming"): `exact` (the
 * next event after Last-Event-ID), `gap` (events after it left retention: they are lost), `reset`
 * (the id is newer than this log: it came from another incarnation of the session's log, a wiped
 * data directory or a RAM-only agent that restarted).
 */
export type ResumeStatus = 'exact' | 'gap' | 'reset';

export function resolveStart(log: LogPosition, lastEventId: string | undefined, replayAll: boolean): { startSeq: number; resume: ResumeStatus | undefined } {
  if (lastEventId !== undefined) {
    const last = parseLastEventId(lastEventId);
    if (last > log.latestSeq) return { startSeq: log.oldestSeq, resume: 'reset' };
    const startSeq = Math.max(last + 1, log.oldestSeq);
    return { startSeq, resume: startSeq > last + 1 ? 'gap' : 'exact' };
  }
  return { startSeq: replayAll ? log.oldestSeq : log.latestSeq + 1, resume: undefined };
}

function parseLastEventId(value: string): number {
  if (value.length > MAX_SEQ_DIGITS || !DECIMAL_DIGITS.test(value)) throw new InvalidLastEventIdError(value);
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new InvalidLastEventIdError(value);
  return n;
}
